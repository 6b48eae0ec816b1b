"""BM25 over the Tantivy index (the index engineer's ``TantivyIndex``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import Retriever, Timings, hit_from_fields, merge_filters
from finrag_pipeline.core.retrieval.config import RetrieverConfig
from finrag_pipeline.core.retrieval.plugins import register_retriever

log = logging.getLogger(__name__)


class BM25Config(RetrieverConfig):
    fields: list[Literal["text", "fin"]] | None = None   # score only these index fields (default both)


@register_retriever("bm25", config=BM25Config)
class BM25Retriever(Retriever):
    """Okapi BM25 (tantivy's k1=1.2, b=0.75). The raw question goes to ``TantivyIndex.search``,
    which analyses it with the index's own analyzers into term queries (no query parser), so quotes,
    colons or parentheses in user text cannot raise, and "$4.2B" / "394,328" reach the financial-token
    field intact. Filters run inside the index as zero-score prefilters.

    ``fields``: restrict scoring to ("text",) or ("fin",); default both.
    """

    stage_name = "bm25"

    def __init__(self, index: Any, filters: SearchFilters | None = None, chunk_store: Any = None,
                 fields: Sequence[str] | None = None):
        self.index = index
        self.filters = filters
        self.chunk_store = chunk_store
        self.fields = tuple(fields) if fields else None

    @classmethod
    def from_config(cls, config, resources, builder=None) -> BM25Retriever:
        store = resources.get("chunk_store", required=False) if resources.chunk_store is not None else None
        return cls(resources.get("tantivy"), config.filters.to_filters(), store,
                   config.fields)

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        if not query or not query.strip():
            return []
        kwargs = {"fields": self.fields} if self.fields else {}
        with timings.stage(self.stage_name):
            try:
                rows = self.index.search(query, k, merge_filters(self.filters, filters), **kwargs)
            except ValueError as exc:  # defensive: user text must never fail a search
                log.warning("bm25: query %r rejected by the index: %s", query, exc)
                return []
        hits = []
        for chunk_id, score, fields in rows:
            fallback = None
            if self.chunk_store is not None and not (fields or {}).get("text"):
                fallback = self.chunk_store.get(chunk_id)
            hits.append(hit_from_fields(chunk_id, score, fields or {}, self.stage_name, fallback))
        return hits
