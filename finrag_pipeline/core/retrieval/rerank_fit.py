"""Fit the feature reranker's weights on one split of the questions and score them on another.

The weights in retrievers.yaml were set by hand while looking at the synthetic set, whose generator uses
the very aliases the features reward. To know whether they generalise, the questions are split by
FILING (a fixed hash of the filing id: no filing contributes to both sides), the weights are chosen on
the training filings by a grid search, and the choice is reported on the held-out filings and on the
external set. Pure functions over precomputed candidates: benchmarks/fit_feature_reranker.py builds them.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from finrag_pipeline.core.scoring import metrics as m

FEATURES = ("figure", "period", "line_item", "table_row")
DEFAULT_GRID = (0.0, 0.2, 0.4, 0.8)


def split_by_filing(filing_ids: Iterable[str], salt: str = "finrag-rerank-split") -> tuple[list[str], list[str]]:
    """(train, held-out) halves of the filings, fixed by a hash of each id (not by order or chance):
    the filings are sorted by sha256(salt + id) and the first half (rounded up) trains."""
    ids = sorted(set(filing_ids), key=lambda f: hashlib.sha256(f"{salt}\x1f{f}".encode()).hexdigest())
    cut = (len(ids) + 1) // 2
    return sorted(ids[:cut]), sorted(ids[cut:])


@dataclass(frozen=True)
class Candidate:
    filing_id: str
    pages: tuple[int, ...]
    base: float                      # the base retriever's score, min-max normalised over the candidates
    features: Mapping[str, float]


@dataclass(frozen=True)
class Example:
    """One question: its candidates (base order) and its required evidence page groups."""

    filing_id: str
    candidates: tuple[Candidate, ...]
    groups: tuple[frozenset, ...]


def score_example(example: Example, weights: Mapping[str, float], base_weight: float, k: int,
                  metric: str = "all_evidence_hit") -> float:
    """The metric at k of the pages of the top-k candidates under ``weights`` (FeatureReranker's rule:
    base_weight * base + sum(weight * feature); ties keep the base order)."""
    scored = sorted(range(len(example.candidates)), key=lambda i: (
        -(base_weight * example.candidates[i].base
          + sum(weights.get(f, 0.0) * v for f, v in example.candidates[i].features.items())), i))
    top = [example.candidates[i] for i in scored[:k]]
    pages = m.ranked_pages((c.filing_id, c.pages) for c in top)
    return float(m.evaluate_ranking(pages, example.groups, k)[metric] or 0.0)


def mean_score(examples: Sequence[Example], weights: Mapping[str, float], base_weight: float, k: int,
               metric: str = "all_evidence_hit") -> float | None:
    if not examples:
        return None
    return sum(score_example(e, weights, base_weight, k, metric) for e in examples) / len(examples)


def fit_feature_weights(examples: Sequence[Example], k: int, *, grid: Sequence[float] = DEFAULT_GRID,
                        base_weights: Sequence[float] = (0.5,), metric: str = "all_evidence_hit"
                        ) -> tuple[dict[str, float], float, float]:
    """(weights, base_weight, training mean) maximising the mean metric at k over ``examples``.
    Ties go to the first combination in grid order (smaller weights first): the simplest model wins."""
    if not examples:
        raise ValueError("no training questions: cannot fit feature weights")
    best: tuple[float, dict[str, float], float] | None = None
    for bw in base_weights:
        for combo in itertools.product(grid, repeat=len(FEATURES)):
            weights = dict(zip(FEATURES, combo, strict=True))
            value = mean_score(examples, weights, bw, k, metric) or 0.0
            if best is None or value > best[0] + 1e-12:
                best = (value, weights, bw)
    assert best is not None
    return best[1], best[2], best[0]


def pair_auc(scored: Iterable[tuple[float, bool]]) -> float | None:
    """P(an evidence candidate outscores a non-evidence one), ties counting half (Mann-Whitney AUC):
    whether a reranker's scores separate evidence from the rest at all, independent of the cut-off.
    None when either class is empty (nothing to separate)."""
    scored = list(scored)
    pos = [x for x, is_evidence in scored if is_evidence]
    neg = [x for x, is_evidence in scored if not is_evidence]
    if not pos or not neg:
        return None
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))
