"""Dense retrieval: query embedding + LanceDB vector search with SQL prefilters."""

from __future__ import annotations

from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import Retriever, Timings, hit_from_fields, merge_filters
from finrag_pipeline.core.retrieval.plugins import register_retriever


@register_retriever("dense")
class DenseRetriever(Retriever):
    """Cosine similarity between the query embedding and chunk embeddings (the LanceIndex applies
    SearchFilters as a SQL ``where`` before the vector search, so a scope never starves top-k)."""

    stage_name = "dense"

    def __init__(self, index: Any, resources: Any, filters: SearchFilters | None = None):
        self.index = index
        self.resources = resources
        self.filters = filters

    @classmethod
    def from_config(cls, config, resources, builder=None) -> DenseRetriever:
        return cls(resources.get("lance"), resources, config.filters.to_filters())

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        if not query or not query.strip():
            return []
        with timings.stage("embed"):
            vector, reused_ms = self.resources.encode_query_timed(query)
        timings.credit("embed", reused_ms)
        store = self.resources.loaded("chunk_store")
        where = merge_filters(self.filters, filters)
        with timings.stage(self.stage_name):
            pairs, reused_ms = self.resources.shared_search(
                (self.stage_name, id(self.index), id(store), query, where), k,
                lambda n: self._search(vector, n, where, store))
        timings.credit(self.stage_name, reused_ms)
        return [hit_from_fields(cid, score, row, self.stage_name, fallback=chunk) for (cid, score, row), chunk in pairs]

    def _search(self, vector: Any, k: int, where: SearchFilters | None, store: Any) -> list[tuple[tuple, Any]]:
        """((chunk_id, score, row), chunk from the store or None) pairs, best first."""
        chunks: list[Any] = []
        if store is not None:  # ids and scores from LanceDB, the chunks from memory
            rows = self.index.search(vector, k, where, columns=())
            chunks = [store.get(cid) for cid, _, _ in rows]
        if store is None or None in chunks:  # no store, or the index is ahead of it: read the rows
            rows = self.index.search(vector, k, where)
            chunks = [None] * len(rows)
        return list(zip(rows, chunks, strict=True))
