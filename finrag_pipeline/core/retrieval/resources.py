"""What retrievers share: opened indexes, the embedder, the chunk store and the corpus catalog.

One :class:`RetrievalResources` is built per process (CLI command, Dagster resource, test session)
and handed to every retriever, so an index is opened and a model loaded once, never per query.
Every member may be given directly or as a zero-argument factory that is called on first use,
so building a BM25-only configuration never loads the embedding model.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.query_understanding import CorpusCatalog


class ChunkStore:
    """All chunks (leaves and parents) by id, plus the lookups the wrappers need: children of a
    parent, chunks of a page, neighbours in reading order. In memory: a 10-K gives a few thousand
    chunks, 100 filings a few hundred thousand, well within RAM."""

    def __init__(self, chunks: Iterable[Chunk] = ()):
        self._by_id: dict[str, Chunk] = {}
        self._children: dict[str, list[str]] = defaultdict(list)
        self._by_filing: dict[str, list[Chunk]] = defaultdict(list)
        self._by_page: dict[tuple[str, int], list[Chunk]] = defaultdict(list)
        self.version = 0  # bumped on every change, so derived caches (sanity_random's pools) know
        self.add(chunks)

    def add(self, chunks: Iterable[Chunk]) -> None:
        for c in chunks:
            self._by_id[c.chunk_id] = c
        self.version += 1
        self._reindex()

    def _reindex(self) -> None:
        self._children.clear()
        self._by_filing.clear()
        self._by_page.clear()
        for c in self._by_id.values():
            if c.parent_id:
                self._children[c.parent_id].append(c.chunk_id)
            if c.is_leaf:
                self._by_filing[c.filing_id].append(c)
                for p in range(c.page_start, c.page_end + 1):
                    self._by_page[(c.filing_id, p)].append(c)
        for lst in (*self._by_filing.values(), *self._by_page.values()):
            lst.sort(key=lambda c: (c.position, c.chunk_id))

    @classmethod
    def from_warehouse(cls, warehouse: Any, filing_ids: Sequence[str] | None = None) -> ChunkStore:
        """Load ``core.chunks`` (optionally a few filings) from a :class:`Warehouse`."""
        sql = "SELECT * FROM core.chunks"
        params: list[Any] = []
        if filing_ids:
            sql += " WHERE filing_id IN (" + ",".join("?" * len(filing_ids)) + ")"
            params = list(filing_ids)
        df = warehouse.query_df(sql, params)
        return cls(chunk_from_row(r) for r in df.to_dict("records"))

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._by_id

    def get(self, chunk_id: str) -> Chunk | None:
        return self._by_id.get(chunk_id)

    def all(self) -> list[Chunk]:
        return list(self._by_id.values())

    def leaves(self) -> list[Chunk]:
        return [c for c in self._by_id.values() if c.is_leaf]

    def children(self, parent_id: str) -> list[str]:
        return self._children.get(parent_id, [])

    def on_page(self, filing_id: str, page: int) -> list[Chunk]:
        """Leaf chunks touching a page, in reading order."""
        return self._by_page.get((filing_id, page), [])

    def neighbours(self, chunk_id: str, window: int = 1) -> list[Chunk]:
        """The chunk and up to ``window`` leaves either side of it in its filing's reading order."""
        c = self._by_id.get(chunk_id)
        if c is None:
            return []
        seq = self._by_filing.get(c.filing_id, [])
        idx = next((i for i, x in enumerate(seq) if x.chunk_id == chunk_id), None)
        if idx is None:
            return [c]
        return seq[max(0, idx - window): idx + window + 1]


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    """A Chunk from a ``core.chunks`` row (metadata is JSON text there)."""
    values = {k: row.get(k) for k in Chunk.__dataclass_fields__ if k in row}
    meta = values.get("metadata")
    if isinstance(meta, str):
        values["metadata"] = json.loads(meta) if meta else {}
    for key in ("parent_id", "table_id", "section", "ticker"):
        if values.get(key) != values.get(key):  # pandas NaN
            values[key] = None
    return Chunk(**values)


Factory = Callable[[], Any]


@dataclass
class RetrievalResources:
    """Shared, lazily created members. Pass objects or zero-argument factories.

    tantivy: ``TantivyIndex``; lance: ``LanceIndex``; embedder: ``Embedder`` (``encode(texts)``);
    chunk_store: :class:`ChunkStore`; catalog: :class:`CorpusCatalog`; lexicon: a ``Lexicon``;
    score_pairs: ``(query, passages) -> list[float]`` for the LLM reranker.
    """

    tantivy: Any = None
    lance: Any = None
    embedder: Any = None
    chunk_store: Any = None
    catalog: Any = None
    lexicon: Any = None
    score_pairs: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    query_cache_size: int = 1024
    search_memo_size: int = 0  # see shared_search; FinragSession turns it on for evaluation runs
    shared_search_depth: int = 0  # a memoised search fetches at least this many (see shared_search)
    _resolved: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    # Re-entrant: a factory may ask for another member (the lance index needs the embedder).
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    _query_vectors: OrderedDict = field(default_factory=OrderedDict, init=False, repr=False)
    _search_memo: OrderedDict = field(default_factory=OrderedDict, init=False, repr=False)

    def get(self, name: str, required: bool = True) -> Any:
        """The member, created on first use. Raises a clear error when a retriever needs a member
        that was not provided (e.g. ``dense`` without a LanceIndex)."""
        with self._lock:
            if name in self._resolved:
                return self._resolved[name]
            value = getattr(self, name) if hasattr(self, name) and name != "extras" else self.extras.get(name)
            if callable(value) and _is_factory(value):
                value = value()
            if value is None and name == "lexicon":
                from finrag_pipeline.core.analyst.lexicon import Lexicon
                value = Lexicon.load_default()
            if value is None and name == "catalog":
                store = self._resolved.get("chunk_store") or (
                    None if callable(self.chunk_store) and _is_factory(self.chunk_store) else self.chunk_store)
                if store is not None:
                    value = CorpusCatalog.from_chunks(store.all())
            if value is None and required:
                raise LookupError(f"RetrievalResources has no {name!r}: pass it (or a factory) when building")
            self._resolved[name] = value
            return value

    def loaded(self, name: str) -> Any:
        """The member if it is already at hand (resolved, or passed as an object), else None.
        Never runs a factory: for optional shortcuts that must not load a whole chunk store."""
        with self._lock:
            if name in self._resolved:
                return self._resolved[name]
            value = getattr(self, name, None) if name != "extras" else None
            return None if value is None or (callable(value) and _is_factory(value)) else value

    def encode_query_timed(self, text: str) -> tuple[np.ndarray, float | None]:
        """The query embedding, from a small LRU cache when hybrids, multi-query or an evaluation
        matrix embed the same question again, and, when it came from the cache, the milliseconds
        computing it took (None when computed now), so a retriever can report that cost in its latency."""
        cached = self._query_vectors.get(text)
        if cached is not None:
            self._query_vectors.move_to_end(text)
            return cached[0], cached[1]
        t0 = time.perf_counter()
        vec = np.asarray(self.get("embedder").encode([text]), dtype=np.float32)[0]
        if self.query_cache_size > 0:
            self._query_vectors[text] = (vec, (time.perf_counter() - t0) * 1000.0)
            if len(self._query_vectors) > self.query_cache_size:
                self._query_vectors.popitem(last=False)
        return vec, None

    def shared_search(self, key: Hashable, k: int, search: Callable[[int], list]) -> tuple[list, float | None]:
        """``search(k)``, run once per ``key`` while ``search_memo_size`` > 0 (evaluation sessions: five
        retrievers of the default matrix run the same dense search for a question). A later call with the
        same key and a k no larger gets the stored result's first k and the milliseconds the original
        search took (None when it ran now), which the caller adds to its latency: shared work is
        reported at its measured cost, not as free. Exact search makes the top k a prefix of any
        larger k. The memo lives as long as these resources; indexes must not change meanwhile.

        The memoised search runs at ``max(k, shared_search_depth)`` (dense_search.yaml): dense asks for
        10 and the hybrids for their fetch_k (50) of the same query and filter, so one search at 50 serves
        both, where searching at the first k asked would search again for the second."""
        if self.search_memo_size <= 0:
            return search(k), None
        with self._lock:
            entry = self._search_memo.get(key)
            if entry is not None and entry[0] >= k:
                self._search_memo.move_to_end(key)
                return entry[1][:k], entry[2]
        depth = max(k, self.shared_search_depth)
        t0 = time.perf_counter()
        rows = search(depth)
        with self._lock:
            self._search_memo[key] = (depth, rows, (time.perf_counter() - t0) * 1000.0)
            if len(self._search_memo) > self.search_memo_size:
                self._search_memo.popitem(last=False)
        return rows[:k], None

    @classmethod
    def from_paths(cls, paths: Any = None, warehouse: Any = None, **overrides: Any) -> RetrievalResources:
        """Resources over a FINRAG_HOME layout: indexes opened lazily with the index engineer's
        classes, chunks and catalog read from the warehouse on first use."""
        from finrag_pipeline.core.paths import FinragPaths

        paths = paths or FinragPaths.from_env()

        def open_embedder():
            from finrag_pipeline.core.indexing.embedder import load_embedder_config
            return load_embedder_config().build()

        res = cls()

        def open_tantivy():
            from finrag_pipeline.core.storage.seam import storage_for
            return storage_for(paths).open_bm25()

        def open_lance():
            from finrag_pipeline.core.storage.seam import storage_for
            return storage_for(paths).open_lance(res.get("embedder"))

        def open_warehouse():
            if warehouse is not None:
                return warehouse
            from finrag_pipeline.core.warehouse import Warehouse
            return Warehouse(paths.warehouse_snapshot if Path(paths.warehouse_snapshot).exists()
                             else paths.warehouse)

        res.tantivy = open_tantivy
        res.lance = open_lance
        res.embedder = open_embedder
        res.chunk_store = lambda: ChunkStore.from_warehouse(open_warehouse())
        res.catalog = lambda: CorpusCatalog.from_warehouse(open_warehouse())
        for key, value in overrides.items():
            setattr(res, key, value)
        return res


def _is_factory(value: Any) -> bool:
    """A zero-argument plain function/lambda is a factory; objects with methods are members."""
    import inspect

    if not (inspect.isfunction(value) or inspect.ismethod(value)):
        return False
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params)


def build_resources_from_filings(paths: Sequence[str | Path], index_dir: str | Path,
                                 embedder: Any = None, embedding_cache: str | Path | None = None) -> RetrievalResources:
    """Parse, chunk and index a few filings into ``index_dir`` and return resources over them.

    For tests, benchmarks and ad-hoc corpora; the pipeline builds its indexes in Dagster assets.
    """
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.ingest.parse import parse_filing

    if embedder is None:
        from finrag_pipeline.core.indexing.embedder import load_embedder_config
        embedder = load_embedder_config().build()
    index_dir = Path(index_dir)
    tantivy_index = TantivyIndex(index_dir / "tantivy")
    cache = None
    if embedding_cache is not None:
        from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
        Path(embedding_cache).parent.mkdir(parents=True, exist_ok=True)
        cache = EmbeddingCache(embedding_cache)
    lance_index = LanceIndex(index_dir / "lancedb", embedder, cache=cache)
    chunks: list[Chunk] = []
    metas = []
    for p in paths:
        parsed = parse_filing(p)
        filing_chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows)
        tantivy_index.upsert_filing(parsed.meta.filing_id, filing_chunks)
        lance_index.upsert_filing(parsed.meta.filing_id, filing_chunks)
        chunks.extend(filing_chunks)
        metas.append(parsed.meta)
    catalog = CorpusCatalog({"filing_id": m.filing_id, "ticker": m.ticker, "company": m.company,
                             "fiscal_year": m.fiscal_year, "period_end_date": m.period_end_date} for m in metas)
    return RetrievalResources(tantivy=tantivy_index, lance=lance_index, embedder=embedder,
                              chunk_store=ChunkStore(chunks), catalog=catalog)
