"""sanity_random keeps each scope's candidate pool while the chunk store is unchanged: the same draws
as filtering every leaf per question, and a store change is seen at once."""

import hashlib
import random

from finrag_pipeline.core.models import Chunk, SearchFilters
from finrag_pipeline.core.retrieval.resources import ChunkStore
from finrag_pipeline.core.retrieval.sanity import RandomRetriever


def _chunk(i: int, filing: str, chunk_type: str = "prose") -> Chunk:
    return Chunk(chunk_id=f"{filing}-{i:03d}", filing_id=filing, ticker=filing[:4], company=filing,
                 fiscal_year=2022, form_type="10-K", section=None, page_start=i, page_end=i,
                 chunk_type=chunk_type, text=f"text {i}", position=i)


def _draw_without_cache(store: ChunkStore, query: str, k: int, scope: SearchFilters | None) -> list[str]:
    """The draw as the retriever defines it, computed from scratch."""
    pool = sorted((c for c in store.leaves() if scope is None or c.filing_id in scope.filing_ids),
                  key=lambda c: c.chunk_id)
    key = hashlib.sha256(f"0\x1f{query}\x1f{scope}".encode()).hexdigest()
    return [c.chunk_id for c in random.Random(key).sample(pool, min(k, len(pool)))]


def test_cached_pools_draw_exactly_what_filtering_every_leaf_draws():
    store = ChunkStore([_chunk(i, f) for f in ("AAPL-2022-10K", "MSFT-2022-10K") for i in range(40)])
    retriever = RandomRetriever(store)
    for scope in (None, SearchFilters(filing_ids=("MSFT-2022-10K",))):
        for query in ("net sales 2022", "operating income", "net sales 2022"):
            got = [h.chunk_id for h in retriever.search(query, 7, scope)]
            assert got == _draw_without_cache(store, query, 7, scope)
            assert scope is None or all(c.startswith("MSFT") for c in got)


def test_a_changed_chunk_store_changes_the_pool():
    store = ChunkStore([_chunk(i, "AAPL-2022-10K") for i in range(5)])
    retriever = RandomRetriever(store)
    assert len(retriever.search("q", 10, None)) == 5
    store.add([_chunk(i, "AAPL-2022-10K") for i in range(5, 12)])
    hits = retriever.search("q", 10, None)
    assert len(hits) == 10 and [h.chunk_id for h in hits] == _draw_without_cache(store, "q", 10, None)
