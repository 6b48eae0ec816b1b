"""``sanity_random``: k leaf chunks drawn at random from the scope, a floor every retriever must clear.

The draw is seeded by the query and the filters, so a re-run returns the same hits. Its expected
score is the chance level of each metric (:class:`ChanceLevels`, recorded per question by the
evaluation runner and averaged by the dbt mart ``mart_chance_levels``); a scoring or evaluation change
that lifts it well above chance is a leak (finrag_pipeline_tests/test_sanity_answerers.py).

Chance levels, for k chunks drawn uniformly without replacement from the N leaves of the candidate
pool (:func:`candidate_pool`, the population sanity_random draws from):

* chunk hit@k: g = evidence chunks in the pool; P = 1 - C(N - g, k) / C(N, k) (:func:`chance_hit_rate`).
* page hit@k: a page hit when any drawn chunk touches an evidence page; m = leaves in the pool that touch
  one; P = 1 - C(N - m, k) / C(N, k). Statement pages hold many table-row chunks, so m (and the
  chance) is far larger than g.
* all-evidence page hit@k: every required evidence group needs a drawn chunk on one of its pages;
  A_i = the leaves touching group i's pages; by inclusion-exclusion
  P = sum over subsets S of the groups of (-1)^|S| C(N - |union of A_i, i in S|, k) / C(N, k)
  (:func:`chance_all_hit_rate`).

The page formulas count a page hit whenever a drawn chunk is on an evidence page. The page metrics read
the first k distinct pages of the top-k hits, so a drawn chunk spanning two pages can push an evidence
page past k: the formulas are exact when every leaf sits on one page and otherwise an upper bound by a
little (~7% of the demo's leaves span two pages; test_sanity_answerers.py measures sanity_random
against them by Monte-Carlo on real filings).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from math import comb
from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters, filters_match
from finrag_pipeline.core.retrieval.base import (
    Retriever,
    Timings,
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
        """:func:`candidate_pool` of ``scope``, kept per scope while the chunk store is unchanged (a
        store without a ``version`` is filtered on every call)."""
        version = getattr(self.chunk_store, "version", None)
        cached = self._pools.get(scope)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        pool = candidate_pool(self.chunk_store, scope)
        if version is not None:
            self._pools[scope] = (version, pool)
        return pool


def candidate_pool(chunk_store: Any, scope: SearchFilters | None) -> list[Any]:
    """The leaves of ``chunk_store`` in ``scope``, ordered by chunk id: the population sanity_random
    draws from, and the N of every chance level."""
    return sorted((c for c in chunk_store.leaves()
                   if filters_match(scope, filing_id=c.filing_id, ticker=c.ticker,
                                    fiscal_year=c.fiscal_year, chunk_type=c.chunk_type)),
                  key=lambda c: c.chunk_id)


def chance_hit_rate(n_candidates: int, n_relevant: int, k: int) -> float:
    """P(at least one of ``n_relevant`` chunks among ``k`` drawn without replacement from
    ``n_candidates``) = 1 - C(N - g, k) / C(N, k): the expected hit@k of a random retriever."""
    if n_candidates <= 0 or n_relevant <= 0:
        return 0.0
    k = min(k, n_candidates)
    return 1.0 - comb(n_candidates - min(n_relevant, n_candidates), k) / comb(n_candidates, k)


# Inclusion-exclusion sums 2^G terms; a question with more required evidence groups gets no chance
# level (NULL, "not computable") rather than a slow evaluation.
MAX_CHANCE_GROUPS = 12


def chance_all_hit_rate(n_candidates: int, groups: Sequence[Set[Any]], k: int) -> float | None:
    """P(every group has a member among ``k`` drawn without replacement from ``n_candidates``), each
    group the set of candidates that satisfy it: sum over subsets S of (-1)^|S| C(N - |U_S|, k) / C(N, k)
    with U_S the union of the groups in S. 0.0 when a group has no candidate; None above
    ``MAX_CHANCE_GROUPS`` groups."""
    groups = [frozenset(g) for g in groups]
    if n_candidates <= 0 or not groups or any(not g for g in groups):
        return 0.0
    if len(groups) > MAX_CHANCE_GROUPS:
        return None
    k = min(k, n_candidates)
    total = comb(n_candidates, k)
    # exact integer arithmetic, one division: the alternating sum cancels badly in floating point
    acc = 0
    for size in range(len(groups) + 1):
        for subset in itertools.combinations(groups, size):
            union = frozenset().union(*subset)
            acc += (-1) ** size * comb(n_candidates - len(union), k)
    return acc / total


@dataclass(frozen=True)
class QuestionChance:
    """What one question's chance levels need, and the levels at each k (None = not computable)."""

    pool_size: int
    evidence_chunks: int | None        # g: evidence chunks in the pool (None: chunk ids not comparable)
    evidence_page_chunks: int          # m: leaves in the pool touching an evidence page
    hit_chunk: dict[int, float | None]
    hit_page: dict[int, float]
    all_evidence_hit: dict[int, float | None]


class ChanceLevels:
    """The chance levels of one candidate pool (:func:`candidate_pool` of a chunk store and scope): what
    a retriever that draws k of its leaves uniformly without replacement scores, per question."""

    def __init__(self, pool: Iterable[Any]):
        self.chunk_ids: set[str] = set()
        self._by_page: dict[tuple[str, int], set[str]] = defaultdict(set)
        for c in pool:
            self.chunk_ids.add(c.chunk_id)
            for page in range(int(c.page_start), int(c.page_end) + 1):
                self._by_page[(c.filing_id, page)].add(c.chunk_id)

    @property
    def pool_size(self) -> int:
        return len(self.chunk_ids)

    def on_pages(self, pages: Iterable[tuple[str, int]]) -> set[str]:
        """The leaves of the pool touching any of ``pages`` ((filing_id, page) pairs)."""
        out: set[str] = set()
        for key in pages:
            out |= self._by_page.get((key[0], int(key[1])), set())
        return out

    def for_question(self, chunk_groups: Sequence[Set[str]] | None, page_groups: Sequence[Set[tuple[str, int]]],
                     ks: Sequence[int]) -> QuestionChance:
        """Chance levels at each of ``ks`` for a question with these required evidence groups (chunk ids,
        None when they are not comparable with this pool's chunking; (filing_id, page) pairs)."""
        from finrag_pipeline.core.scoring.metrics import normalize_groups

        n = self.pool_size
        # the metrics' "relevant" is the union of the normalised groups (core/scoring/metrics.py)
        g = None if chunk_groups is None else len(set().union(*normalize_groups(chunk_groups)) & self.chunk_ids)
        pgroups = normalize_groups(page_groups)
        candidates = [self.on_pages(grp) for grp in pgroups]
        m = len(set().union(*candidates)) if candidates else 0
        return QuestionChance(
            pool_size=n, evidence_chunks=g, evidence_page_chunks=m,
            hit_chunk={k: None if g is None else chance_hit_rate(n, g, k) for k in ks},
            hit_page={k: chance_hit_rate(n, m, k) for k in ks},
            all_evidence_hit={k: chance_all_hit_rate(n, candidates, k) for k in ks})
