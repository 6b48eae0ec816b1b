"""Auto-merging: when enough children of one parent are retrieved, return the parent instead.

Three rows of the same income-statement table, or several windows of one MD&A section, say "the
answer is this table/section". Returning the parent gives the reader the whole table (headers,
units, the other years) in one hit and frees the other slots for other evidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, hit_from_chunk
from finrag_pipeline.core.retrieval.config import WrapperConfig
from finrag_pipeline.core.retrieval.plugins import register_retriever


class AutoMergingConfig(WrapperConfig):
    merge_threshold: int = Field(2, ge=1, description="children of one parent needed to merge")
    merge_ratio: float | None = Field(None, gt=0, le=1, description="OR this fraction of the parent's children")
    merge_levels: int = Field(1, ge=1, le=3)


def parents_to_merge(hits: Sequence[Hit], children_count: dict[str, int], threshold: int,
                     ratio: float | None) -> set[str]:
    """Parents with >= ``threshold`` retrieved children, or with retrieved/total >= ``ratio``."""
    retrieved: dict[str, int] = defaultdict(int)
    for h in hits:
        if h.parent_id:
            retrieved[h.parent_id] += 1
    out = set()
    for parent, n in retrieved.items():
        total = children_count.get(parent, 0)
        if total == 0:  # parent unknown to the store: nothing to return in its place
            continue
        if n >= threshold or (ratio is not None and n / total >= ratio):
            out.add(parent)
    return out


def merge_once(hits: Sequence[Hit], store: Any, threshold: int, ratio: float | None,
               stage: str = "auto_merge") -> list[Hit]:
    """One level of merging. The parent takes the slot (and the score) of its best child; its
    other children are dropped. Input order is the ranking; it is preserved otherwise."""
    parents = {h.parent_id for h in hits if h.parent_id}
    counts = {p: len(store.children(p)) for p in parents if store.get(p) is not None}
    merge = parents_to_merge(hits, counts, threshold, ratio)
    out: list[Hit] = []
    placed: set[str] = set()
    for h in hits:
        p = h.parent_id
        if p not in merge:
            out.append(h)
            continue
        if p in placed:
            continue
        placed.add(p)
        merged = [x.chunk_id for x in hits if x.parent_id == p]
        parent_hit = hit_from_chunk(store.get(p), h.score, stage)
        parent_hit.stage_scores = {**h.stage_scores, stage: h.score, "merged_children": float(len(merged)),
                                   "parent_children": float(counts[p])}
        out.append(parent_hit)
    return out


def auto_merge(hits: Sequence[Hit], store: Any, threshold: int = 2, ratio: float | None = None,
               levels: int = 1) -> list[Hit]:
    """Merge up to ``levels`` times (rows -> table, then tables/windows -> section)."""
    current = [copy_hit(h) for h in hits]
    for _ in range(levels):
        merged = merge_once(current, store, threshold, ratio)
        if len(merged) == len(current):
            break
        current = merged
    return current


@register_retriever("auto_merging", config=AutoMergingConfig)
class AutoMergingRetriever(Retriever):
    stage_name = "auto_merge"

    def __init__(self, base: Retriever, chunk_store: Any, threshold: int = 2, ratio: float | None = None,
                 levels: int = 1, fetch_k: int | None = None):
        self.base = base
        self.chunk_store = chunk_store
        self.threshold = threshold
        self.ratio = ratio
        self.levels = levels
        self.fetch_k = fetch_k

    @classmethod
    def from_config(cls, config, resources, builder) -> AutoMergingRetriever:
        base = builder.build(config.base or "bm25")
        return cls(base, resources.get("chunk_store"), config.merge_threshold, config.merge_ratio,
                   config.merge_levels, config.fetch_k)

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        # Fetch deeper than k: merging shrinks the list, and children ranked just below k still vote.
        result = self.base.retrieve(query, max(k, self.fetch_k or 2 * k), filters)
        timings.merge(result.timings_ms)
        info.update(result.info)
        with timings.stage(self.stage_name):
            return auto_merge(result.hits, self.chunk_store, self.threshold, self.ratio, self.levels)[:k]
