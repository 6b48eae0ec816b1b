"""Retrieval metrics over plain mappings: pure functions, one definition each (see docs/METRICS.md).

Conventions shared by every function here:

* A *ranking* is a list of ids, best first. Ranked lists built from scores are sorted by
  ``(-score, id)`` (:func:`rank_ids`), so ties are broken by id and the same scores always give
  the same ranking, on every machine and run. Duplicate ids in a ranking count once, at their first
  position (a retriever cannot earn credit twice for the same item).
* Relevance is binary and comes as *evidence groups*: a list of REQUIRED groups, each a set of
  ALTERNATIVE ids (the same figure is often printed in several chunks or pages). The plain IR case
  (every relevant id is its own group) is ``singleton_groups(ids)``; then every metric below equals
  the textbook/trec_eval definition.
* ``relevant`` (for hit, MRR, precision, first rank) is the union of all alternatives: any chunk
  that carries a piece of evidence is a relevant retrieved item.
* Recall, AP and nDCG count *groups*: an item earns gain for the groups it newly satisfies, so two
  alternatives of the same figure do not count twice and recall cannot exceed 1.
* Cut-off ``k`` is always the number of slots: precision@k divides by ``k`` even when fewer than
  ``k`` items were returned (returning less is not rewarded), exactly like trec_eval ``P_k``.
* No relevant item (unanswerable question): the metrics are undefined. :func:`evaluate_ranking`
  returns ``None`` values and the caller records status ``'no_relevant'``; aggregates exclude those
  rows from the means and report how many there were (never silently).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from finrag_pipeline.core.scoring.metric_registry import RETRIEVAL_METRIC_SPECS, MetricSpec, ranking_names

Qrels = Mapping[str, Mapping[str, int]]        # {qid: {doc_id: relevance}} (beir / pytrec_eval style)
Run = Mapping[str, Mapping[str, float]]        # {qid: {doc_id: score}}
Groups = Sequence[Collection[Any]]             # required groups of alternative ids

# The ranking values the registry's retrieval metrics read (core/scoring/metric_registry.py).
METRIC_NAMES = ranking_names()


# ---------------------------------------------------------------------------------------------
# Building rankings and relevance


def rank_ids(scores: Mapping[Any, float]) -> list[Any]:
    """Ids sorted by descending score, ties broken by ascending id: the one deterministic order."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def singleton_groups(relevant: Iterable[Any]) -> list[frozenset]:
    """Plain IR relevance: each relevant id is its own required group (sorted for determinism)."""
    return [frozenset([r]) for r in sorted(set(relevant))]


def groups_from_qrels(rels: Mapping[str, int]) -> list[frozenset]:
    """Qrels for one query -> singleton groups of the ids with relevance > 0."""
    return singleton_groups(d for d, r in rels.items() if r > 0)


def normalize_groups(groups: Groups) -> list[frozenset]:
    """Drop empty groups and groups implied by another one.

    If every alternative of group A is also an alternative of B (A <= B), any item satisfying A
    satisfies B, so B adds no requirement; keeping it would double-count the same find. Identical
    groups collapse to one. The result is sorted, so metrics do not depend on annotation order.
    """
    sets = sorted({frozenset(g) for g in groups if g}, key=lambda s: (len(s), sorted(map(str, s))))
    kept: list[frozenset] = []
    for s in sets:
        if not any(k <= s for k in kept):
            kept.append(s)
    return sorted(kept, key=lambda s: sorted(map(str, s)))


def _union(groups: Groups) -> set:
    out: set = set()
    for g in groups:
        out.update(g)
    return out


def _top_k(ranked: Sequence[Any], k: int) -> list[Any]:
    """First k distinct ids of the ranking (duplicates count once, at their first position)."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    seen: set = set()
    out: list = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
            if len(out) == k:
                break
    return out


def _new_group_gains(top: Sequence[Any], groups: Sequence[frozenset]) -> list[int]:
    """For each position, how many not-yet-satisfied groups the item there satisfies."""
    done = [False] * len(groups)
    gains = []
    for doc in top:
        g = 0
        for i, grp in enumerate(groups):
            if not done[i] and doc in grp:
                done[i] = True
                g += 1
        gains.append(g)
    return gains


# ---------------------------------------------------------------------------------------------
# Single-query metrics. ``relevant`` = set of ids; ``groups`` = required groups of alternatives.


def first_relevant_rank(ranked: Sequence[Any], relevant: Collection[Any], k: int | None = None) -> int | None:
    """1-based rank of the first relevant id within the top k (None if there is none)."""
    top = _top_k(ranked, k) if k else _top_k(ranked, max(len(ranked), 1))
    for i, doc in enumerate(top, start=1):
        if doc in relevant:
            return i
    return None


def hit_at_k(ranked: Sequence[Any], relevant: Collection[Any], k: int) -> float:
    """hit@k = 1 if at least one relevant id is in the top k, else 0."""
    return 1.0 if first_relevant_rank(ranked, relevant, k) is not None else 0.0


def reciprocal_rank_at_k(ranked: Sequence[Any], relevant: Collection[Any], k: int) -> float:
    """RR@k = 1 / rank of the first relevant id in the top k; 0 if none. MRR@k is its mean."""
    r = first_relevant_rank(ranked, relevant, k)
    return 1.0 / r if r else 0.0


def precision_at_k(ranked: Sequence[Any], relevant: Collection[Any], k: int) -> float:
    """P@k = (relevant ids in the top k) / k.

    The denominator is k, not the length of the list: a retriever returning 2 items at k=10 is
    judged on 10 slots (same as trec_eval ``P_k``), so returning less is never rewarded.
    """
    return sum(1 for d in _top_k(ranked, k) if d in relevant) / k


def recall_at_k(ranked: Sequence[Any], groups: Groups, k: int) -> float:
    """Recall@k = (required groups with at least one alternative in the top k) / (number of groups).

    With singleton groups this is the usual found-relevant / total-relevant.
    """
    groups = normalize_groups(groups)
    if not groups:
        raise ValueError("recall is undefined without relevant items")
    top = set(_top_k(ranked, k))
    return sum(1 for g in groups if top & g) / len(groups)


def all_evidence_hit_at_k(ranked: Sequence[Any], groups: Groups, k: int) -> float:
    """1 if EVERY required group has at least one of its alternatives in the top k, else 0."""
    groups = normalize_groups(groups)
    if not groups:
        raise ValueError("all-evidence hit is undefined without relevant items")
    top = set(_top_k(ranked, k))
    return 1.0 if all(top & g for g in groups) else 0.0


def average_precision_at_k(ranked: Sequence[Any], groups: Groups, k: int) -> float:
    """AP@k = (1 / G) * sum over ranks r <= k of new_groups(r) * P@r.

    ``G`` is the number of required groups (ALL of them, not min(k, G): trec_eval ``map_cut_k``
    uses the same denominator, so a list too short to hold every group cannot reach 1).
    ``new_groups(r)`` is the number of groups first satisfied by the item at rank r, and P@r
    counts every relevant item (any alternative) in the top r. With singleton groups this is the
    textbook AP@k.
    """
    groups = normalize_groups(groups)
    if not groups:
        raise ValueError("average precision is undefined without relevant items")
    relevant = _union(groups)
    top = _top_k(ranked, k)
    gains = _new_group_gains(top, groups)
    total, n_rel = 0.0, 0
    for r, (doc, gain) in enumerate(zip(top, gains, strict=True), start=1):
        if doc in relevant:
            n_rel += 1
        if gain:
            total += gain * n_rel / r
    return total / len(groups)


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(r + 1) for r, g in enumerate(gains, start=1) if g)


def _ideal_gains(groups: Sequence[frozenset], k: int) -> list[int]:
    """Gains of the best ranking the evidence allows: greedily take the item that satisfies the
    most open groups (ties by id). With disjoint groups this is min(k, G) ones."""
    open_groups = list(groups)
    candidates = sorted(_union(groups), key=str)
    gains: list[int] = []
    while open_groups and len(gains) < k:
        best = max(candidates, key=lambda d: (sum(1 for g in open_groups if d in g), -candidates.index(d)))
        n = sum(1 for g in open_groups if best in g)
        gains.append(n)
        open_groups = [g for g in open_groups if best not in g]
        candidates.remove(best)
    return gains


def ndcg_at_k(ranked: Sequence[Any], groups: Groups, k: int) -> float:
    """nDCG@k = DCG@k / IDCG@k with binary gains and a log2(rank + 1) discount.

    gain(r) = number of required groups first satisfied at rank r (1 for a relevant item in the
    singleton case, 0 for a second alternative of an already found group). IDCG@k is the DCG of
    the ideal list: with disjoint groups, min(k, G) relevant items at ranks 1..min(k, G) (trec_eval
    ``ndcg_cut_k``). When one item can satisfy several groups the ideal list is built greedily;
    the value is capped at 1.0 for the rare overlap pattern where greedy is not optimal.
    """
    groups = normalize_groups(groups)
    if not groups:
        raise ValueError("nDCG is undefined without relevant items")
    gains = _new_group_gains(_top_k(ranked, k), groups)
    ideal = _dcg(_ideal_gains(groups, k))
    return min(1.0, _dcg(gains) / ideal)


# name (a registry entry's ``ranking``) -> f(ranked, normalized groups, relevant ids, k). One entry per
# ranking value; metric_registry.METRIC_NAMES must name exactly these (checked below).
RankingFunction = Callable[[Sequence[Any], list[frozenset], set, int], float]
RANKING_FUNCTIONS: dict[str, RankingFunction] = {
    "hit": lambda ranked, groups, relevant, k: hit_at_k(ranked, relevant, k),
    "mrr": lambda ranked, groups, relevant, k: reciprocal_rank_at_k(ranked, relevant, k),
    "precision": lambda ranked, groups, relevant, k: precision_at_k(ranked, relevant, k),
    "recall": lambda ranked, groups, relevant, k: recall_at_k(ranked, groups, k),
    "ap": lambda ranked, groups, relevant, k: average_precision_at_k(ranked, groups, k),
    "ndcg": lambda ranked, groups, relevant, k: ndcg_at_k(ranked, groups, k),
    "all_evidence_hit": lambda ranked, groups, relevant, k: all_evidence_hit_at_k(ranked, groups, k),
}


def register_ranking_functions(specs: Sequence[MetricSpec]) -> None:
    """The ranking functions registry entries bring themselves (``MetricSpec.function``)."""
    RANKING_FUNCTIONS.update({s.ranking: s.function for s in specs if s.function is not None and s.ranking})


register_ranking_functions(RETRIEVAL_METRIC_SPECS)
if set(RANKING_FUNCTIONS) != set(METRIC_NAMES):
    raise ImportError(f"metric registry ranking values {sorted(METRIC_NAMES)} != functions {sorted(RANKING_FUNCTIONS)}")


def evaluate_ranking(ranked: Sequence[Any], groups: Groups, k: int) -> dict[str, float | int | None]:
    """Every metric at cut-off k for one query. With no relevant item every value is None."""
    groups = normalize_groups(groups)
    if not groups:
        return {"first_relevant_rank": None, **dict.fromkeys(METRIC_NAMES)}
    relevant = _union(groups)
    return {"first_relevant_rank": first_relevant_rank(ranked, relevant, k),
            **{name: fn(ranked, groups, relevant, k) for name, fn in RANKING_FUNCTIONS.items()}}


def evaluate_run(qrels: Qrels, run: Run, k: int,
                 groups: Mapping[str, Groups] | None = None) -> dict[str, dict[str, float | int | None]]:
    """beir/pytrec_eval-style entry point: ``{qid: {metric: value}}`` for every qid in ``qrels``.

    Rankings come from scores via :func:`rank_ids`. ``groups`` (optional, per qid) replaces the
    singleton groups derived from ``qrels``. A qid missing from ``run`` is scored as an empty list.
    """
    out = {}
    for qid, rels in qrels.items():
        g = groups[qid] if groups and qid in groups else groups_from_qrels(rels)
        out[qid] = evaluate_ranking(rank_ids(run.get(qid, {})), g, k)
    return out


# ---------------------------------------------------------------------------------------------
# Pages: a ranked list of (filing_id, page) derived from hits.


def ranked_pages(hit_pages: Iterable[tuple[str, Sequence[int]]]) -> list[tuple[str, int]]:
    """Hits (filing_id, pages) in rank order -> distinct (filing_id, page) in rank order.

    A multi-page hit contributes all its pages, in page order, at its own position; a page seen
    before keeps its earlier position. Page metrics at k then read the first k distinct pages of
    the top-k hits (a retriever returning the same page k times wastes k-1 slots).
    """
    seen: set = set()
    out: list[tuple[str, int]] = []
    for filing_id, pages in hit_pages:
        for p in pages:
            key = (filing_id, int(p))
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out
