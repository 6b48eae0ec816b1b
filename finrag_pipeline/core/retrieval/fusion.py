"""Rank fusion on plain beir-style rankings ({doc_id: score}); no index, no Hit, easy to test.

All outputs are lists of (doc_id, fused_score) sorted by score descending and then by doc_id, so
ties are broken the same way on every run and machine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

Normalization = Literal["minmax", "zscore"]


def ranked_ids(ranking: Mapping[str, float]) -> list[str]:
    """Doc ids best first; equal scores ordered by doc_id (deterministic ranks for fusion)."""
    return [doc for doc, _ in sorted(ranking.items(), key=lambda kv: (-kv[1], kv[0]))]


def sort_fused(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _check_weights(n: int, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        raise ValueError(f"{len(weights)} weights for {n} rankings")
    return [float(w) for w in weights]


def reciprocal_rank_fusion(rankings: Sequence[Mapping[str, float] | Sequence[str]], rrf_k: float = 60.0,
                           weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """RRF (Cormack et al. 2009): score(d) = sum_i w_i / (rrf_k + rank_i(d)), ranks 1-based.

    A ranking is either a {doc: score} mapping (ranked by score, ties by doc_id) or an already
    ordered list of doc ids. Only ranks matter, which is why RRF needs no score normalisation and
    is robust when BM25 and cosine scores live on unrelated scales.
    """
    ws = _check_weights(len(rankings), weights)
    fused: dict[str, float] = {}
    for w, ranking in zip(ws, rankings, strict=True):
        ids = ranked_ids(ranking) if isinstance(ranking, Mapping) else list(ranking)
        for rank, doc in enumerate(ids, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (rrf_k + rank)
    return sort_fused(fused)


def normalize_scores(scores: Mapping[str, float], method: Normalization = "minmax") -> dict[str, float]:
    """Put one ranking's scores on a common scale.

    minmax: (s - min) / (max - min); all-equal scores (including a single hit) become 1.0, because
    the retriever found them and found nothing better.
    zscore: (s - mean) / population std; all-equal scores become 0.0.
    """
    if not scores:
        return {}
    values = list(scores.values())
    if method == "minmax":
        lo, hi = min(values), max(values)
        if hi - lo <= 1e-12:
            return {d: 1.0 for d in scores}
        return {d: (s - lo) / (hi - lo) for d, s in scores.items()}
    if method == "zscore":
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if std <= 1e-12:
            return {d: 0.0 for d in scores}
        return {d: (s - mean) / std for d, s in scores.items()}
    raise ValueError(f"unknown normalization {method!r} (minmax | zscore)")


def weighted_score_fusion(rankings: Sequence[Mapping[str, float]], weights: Sequence[float] | None = None,
                          normalization: Normalization = "minmax") -> list[tuple[str, float]]:
    """Weighted sum of normalised scores (CombSUM with weights).

    A doc missing from one ranking gets that ranking's lowest normalised score: it was not in the
    top of that list, so it is treated as no better than the worst doc the list did return (0 for
    minmax, the usual convention; the minimum z for zscore, rather than the mean that 0 would be).
    """
    ws = _check_weights(len(rankings), weights)
    normed = [normalize_scores(r, normalization) for r in rankings]
    docs = sorted({d for r in normed for d in r})
    fused: dict[str, float] = {}
    for doc in docs:
        total = 0.0
        for w, r in zip(ws, normed, strict=True):
            if r:
                total += w * r.get(doc, min(r.values()))
        fused[doc] = total
    return sort_fused(fused)
