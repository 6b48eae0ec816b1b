"""``sanity_random``: k leaf chunks drawn at random from the scope, a floor every retriever must clear.

The draw is seeded by the query and the filters, so a re-run returns the same hits. Its expected
hit rate is the chance level :func:`chance_hit_rate` (printed by the report); a scoring or evaluation
change that lifts it well above chance is a leak (finrag_pipeline_tests/test_sanity_answerers.py).
"""

from __future__ import annotations

import hashlib
import random
from math import comb
from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import (
    Retriever,
    Timings,
    filters_match,
    hit_from_chunk,
    merge_filters,
)
from finrag_pipeline.core.retrieval.config import RetrieverConfig
from finrag_pipeline.core.retrieval.plugins import register_retriever


class RandomConfig(RetrieverConfig):
    seed: int = 0


@register_retriever("sanity_random", config=RandomConfig)
class RandomRetriever(Retriever):
    stage_name = "random"

    def __init__(self, chunk_store: Any, filters: SearchFilters | None = None, seed: int = 0):
        self.chunk_store = chunk_store
        self.filters = filters
        self.seed = seed
        # scope -> (chunk store version, candidate pool): the pool depends only on the scope, and an
        # evaluation asks ~50 questions per scope (filtering every leaf per question was ~10% of it)
        self._pools: dict[SearchFilters | None, tuple[Any, list[Any]]] = {}

    @classmethod
    def from_config(cls, config, resources, builder=None) -> RandomRetriever:
        return cls(resources.get("chunk_store"), config.filters.to_filters(),
                   config.seed)

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage(self.stage_name):
            scope = merge_filters(self.filters, filters)
            pool = self._pool(scope)
            key = hashlib.sha256(f"{self.seed}\x1f{query}\x1f{scope}".encode()).hexdigest()
            drawn = random.Random(key).sample(pool, min(k, len(pool)))
        info["pool_size"] = len(pool)
        return [hit_from_chunk(c, 1.0 / (i + 1), self.stage_name) for i, c in enumerate(drawn)]


    def _pool(self, scope: SearchFilters | None) -> list[Any]:
        """The leaves in ``scope`` ordered by chunk id (the draw's population), kept per scope while
        the chunk store is unchanged (a store without a ``version`` is filtered on every call)."""
        version = getattr(self.chunk_store, "version", None)
        cached = self._pools.get(scope)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        pool = sorted((c for c in self.chunk_store.leaves()
                       if filters_match(scope, filing_id=c.filing_id, ticker=c.ticker,
                                        fiscal_year=c.fiscal_year, chunk_type=c.chunk_type)),
                      key=lambda c: c.chunk_id)
        if version is not None:
            self._pools[scope] = (version, pool)
        return pool


def chance_hit_rate(n_candidates: int, n_relevant: int, k: int) -> float:
    """P(at least one of ``n_relevant`` chunks among ``k`` drawn without replacement from
    ``n_candidates``) = 1 - C(N - g, k) / C(N, k): the expected hit@k of a random retriever."""
    if n_candidates <= 0 or n_relevant <= 0:
        return 0.0
    k = min(k, n_candidates)
    return 1.0 - comb(n_candidates - min(n_relevant, n_candidates), k) / comb(n_candidates, k)
