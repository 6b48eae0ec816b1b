"""Multi-query retrieval with the financial lexicon, fused at the PAGE level.

"What was Apple's capital expenditure in 2022?" -> also search "purchases of property, plant and
equipment ..." (and for a ratio, one search per component). Each search gives a page ranking (a
page ranks where its best chunk ranks); pages are fused with RRF, because a page that several
phrasings agree on is the likely evidence. The top pages are returned as their retrieved chunks
plus neighbouring chunks, in reading order, so the reader sees the row labels and headers around a hit.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from finrag_pipeline.core.models import Hit, SearchFilters, filters_match
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, hit_from_chunk
from finrag_pipeline.core.retrieval.config import WrapperConfig
from finrag_pipeline.core.retrieval.fusion import reciprocal_rank_fusion
from finrag_pipeline.core.retrieval.plugins import register_retriever


class MultiQueryConfig(WrapperConfig):
    max_queries: int = Field(6, ge=1)
    top_pages: int = Field(3, ge=1)
    neighbour_window: int = Field(1, ge=0)
    rrf_k: float = Field(60.0, gt=0)


def page_key(hit: Hit) -> str:
    return f"{hit.filing_id}#p{hit.page_start}"


def page_ranking(hits: list[Hit]) -> list[str]:
    """Pages in the order of their best chunk."""
    seen: dict[str, None] = {}
    for h in hits:
        seen.setdefault(page_key(h), None)
    return list(seen)


@register_retriever("multi_query", config=MultiQueryConfig)
class MultiQueryRetriever(Retriever):
    stage_name = "multi_query"

    def __init__(self, base: Retriever, lexicon: Any, chunk_store: Any = None, max_queries: int = 6,
                 top_pages: int = 3, neighbour_window: int = 1, rrf_k: float = 60.0, fetch_k: int | None = None):
        self.base = base
        self.lexicon = lexicon
        self.chunk_store = chunk_store
        self.max_queries = max_queries
        self.top_pages = top_pages
        self.neighbour_window = neighbour_window
        self.rrf_k = rrf_k
        self.fetch_k = fetch_k

    @classmethod
    def from_config(cls, config, resources, builder) -> MultiQueryRetriever:
        return cls(builder.build(config.base or "bm25"), resources.get("lexicon"),
                   resources.get("chunk_store", required=False), config.max_queries, config.top_pages,
                   config.neighbour_window, config.rrf_k, config.fetch_k)

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage("expand"):
            queries = self.lexicon.expand(query, self.max_queries)
        info["queries"] = queries
        depth = max(k, self.fetch_k or 20)
        rankings: list[list[str]] = []
        page_hits: dict[str, list[Hit]] = {}
        for q in queries:
            result = self.base.retrieve(q, depth, filters)
            timings.merge(result.timings_ms)
            rankings.append(page_ranking(result.hits))
            for h in result.hits:
                bucket = page_hits.setdefault(page_key(h), [])
                if all(x.chunk_id != h.chunk_id for x in bucket):
                    bucket.append(h)
        with timings.stage(self.stage_name):
            fused = reciprocal_rank_fusion(rankings, self.rrf_k)
            return self._assemble(fused, page_hits, k, filters)

    def _assemble(self, fused: list[tuple[str, float]], page_hits: dict[str, list[Hit]], k: int,
                  filters: SearchFilters | None) -> list[Hit]:
        out: list[Hit] = []
        taken: set[str] = set()
        # One dense page must not take every slot: a top page gets its share of k, others their best chunk.
        per_top_page = max(1, -(-k // self.top_pages))
        for i, (page, score) in enumerate(fused):
            hits = page_hits[page][:per_top_page] if i < self.top_pages else page_hits[page][:1]
            chunks: dict[str, Hit] = {}
            for h in hits:
                chunks[h.chunk_id] = copy_hit(h, score=score, stage=self.stage_name,
                                              stage_scores={**h.stage_scores, "page_rrf": score})
            if i < self.top_pages and self.chunk_store is not None and self.neighbour_window > 0:
                for h in hits:
                    for c in self.chunk_store.neighbours(h.chunk_id, self.neighbour_window):
                        # neighbours on the same page only: the page is the unit that was ranked
                        on_page = c.page_start <= h.page_start <= c.page_end
                        if on_page and c.chunk_id not in chunks and filters_match(
                                filters, filing_id=c.filing_id, ticker=c.ticker, fiscal_year=c.fiscal_year,
                                chunk_type=c.chunk_type):
                            chunks[c.chunk_id] = hit_from_chunk(c, score, self.stage_name,
                                                                {"page_rrf": score, "neighbour": 1.0})
            # retrieved chunks were inserted before their neighbours: the cap keeps them first
            group = list(chunks.values())[:per_top_page] if i < self.top_pages else list(chunks.values())
            group.sort(key=lambda x: (x.position, x.chunk_id))  # reading order
            for h in group:
                if h.chunk_id not in taken:
                    taken.add(h.chunk_id)
                    out.append(h)
                    if len(out) >= k:
                        return out
        return out
