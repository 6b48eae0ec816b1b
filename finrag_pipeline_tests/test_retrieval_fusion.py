"""Fusion on hand-made rankings; every expected value is computed by hand in the comments."""

from __future__ import annotations

import math

import pytest
from _retrieval_fakes import ListRetriever, hit

from finrag_pipeline.core.retrieval.fusion import (
    normalize_scores,
    reciprocal_rank_fusion,
    weighted_score_fusion,
)
from finrag_pipeline.core.retrieval.hybrid import HybridRRFRetriever, HybridWeightedRetriever

A = {"a": 10.0, "b": 6.0, "c": 2.0}
B = {"b": 0.9, "d": 0.5, "a": 0.1}
Z = 1.5 ** 0.5  # z of the extremes of three equally spaced values: 4 / sqrt(32/3) = sqrt(1.5)

RRF_CASES = [
    # a: 1/61+1/62, c: 1/63+1/61, b: 1/62, d: 1/63
    ("mapping_and_list", [A, ["c", "a", "d"]], 60, None,
     [("a", 1 / 61 + 1 / 62), ("c", 1 / 63 + 1 / 61), ("b", 1 / 62), ("d", 1 / 63)]),
    # x and y tie exactly (1/61 + 1/62 each): chunk_id decides
    ("tie_by_id", [["y", "x"], ["x", "y"]], 60, None, [("x", 1 / 61 + 1 / 62), ("y", 1 / 61 + 1 / 62)]),
    # rrf_k=1: a 1/2, b 1/3+1/2, c 1/3
    ("small_k", [["a", "b"], ["b", "c"]], 1, None, [("b", 1 / 3 + 1 / 2), ("a", 1 / 2), ("c", 1 / 3)]),
    # weights 2,1 with rrf_k=1: a 2/2+1/3, b 2/3+1/2
    ("weighted", [["a", "b"], ["b", "a"]], 1, [2.0, 1.0], [("a", 1 + 1 / 3), ("b", 2 / 3 + 1 / 2)]),
    # equal scores inside one mapping rank by id: a=1, b=2
    ("equal_scores_rank_by_id", [{"b": 1.0, "a": 1.0}], 60, None, [("a", 1 / 61), ("b", 1 / 62)]),
    ("empty", [{}, []], 60, None, []),
]


@pytest.mark.parametrize(("name", "rankings", "rrf_k", "weights", "expected"), RRF_CASES, ids=[c[0] for c in RRF_CASES])
def test_rrf(name, rankings, rrf_k, weights, expected):
    got = reciprocal_rank_fusion(rankings, rrf_k, weights)
    assert [d for d, _ in got] == [d for d, _ in expected]
    for (_, s), (_, e) in zip(got, expected, strict=True):
        assert s == pytest.approx(e)


NORM_CASES = [
    ("minmax", A, "minmax", {"a": 1.0, "b": 0.5, "c": 0.0}),
    ("zscore", A, "zscore", {"a": Z, "b": 0.0, "c": -Z}),
    ("minmax_single", {"a": 3.0}, "minmax", {"a": 1.0}),
    ("minmax_all_equal", {"a": 2.0, "b": 2.0}, "minmax", {"a": 1.0, "b": 1.0}),
    ("zscore_all_equal", {"a": 2.0, "b": 2.0}, "zscore", {"a": 0.0, "b": 0.0}),
    ("empty", {}, "minmax", {}),
]


@pytest.mark.parametrize(("name", "scores", "method", "expected"), NORM_CASES, ids=[c[0] for c in NORM_CASES])
def test_normalize(name, scores, method, expected):
    got = normalize_scores(scores, method)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value)


WEIGHTED_CASES = [
    # A -> a 1, b .5, c 0;  B -> b 1, d .5, a 0; missing = list minimum (0)
    # a .5*1+.5*0=.5  b .5*.5+.5*1=.75  c 0  d .5*0+.5*.5=.25
    ("minmax_equal_weights", [A, B], [0.5, 0.5], "minmax", [("b", 0.75), ("a", 0.5), ("d", 0.25), ("c", 0.0)]),
    # weights .8/.2: a .8  b .4+.2=.6  d .1  c 0
    ("minmax_skewed", [A, B], [0.8, 0.2], "minmax", [("a", 0.8), ("b", 0.6), ("d", 0.1), ("c", 0.0)]),
    # A z: a Z, b 0, c -Z;  B z: b Z, d 0, a -Z; missing = list minimum (-Z)
    # a 0, b Z, c -2Z, d -Z
    ("zscore", [A, B], [1.0, 1.0], "zscore", [("b", Z), ("a", 0.0), ("d", -Z), ("c", -2 * Z)]),
    # x and y both 1.0 after minmax: tie broken by id
    ("tie_by_id", [{"y": 1.0, "x": 1.0}], None, "minmax", [("x", 1.0), ("y", 1.0)]),
]


@pytest.mark.parametrize(("name", "rankings", "weights", "method", "expected"), WEIGHTED_CASES,
                         ids=[c[0] for c in WEIGHTED_CASES])
def test_weighted(name, rankings, weights, method, expected):
    got = weighted_score_fusion(rankings, weights, method)
    assert [d for d, _ in got] == [d for d, _ in expected]
    for (_, s), (_, e) in zip(got, expected, strict=True):
        assert s == pytest.approx(e, abs=1e-9)


def test_weights_must_match_rankings():
    with pytest.raises(ValueError, match="2 weights for 1"):
        reciprocal_rank_fusion([A], weights=[1, 2])
    with pytest.raises(ValueError, match="unknown normalization"):
        weighted_score_fusion([A], normalization="rank")  # type: ignore[arg-type]


def _bases():
    lexical = ListRetriever([hit("a", 10), hit("b", 6), hit("c", 2)], name="bm25")
    dense = ListRetriever([hit("b", 0.9), hit("d", 0.5), hit("a", 0.1)], name="dense")
    return lexical, dense


def test_hybrid_rrf_retriever_hits_ranks_and_stage_scores():
    r = HybridRRFRetriever(list(_bases()), rrf_k=60)
    result = r.retrieve("q", 3)
    # a: 1/61+1/63, b: 1/62+1/61, c: 1/63, d: 1/62 -> b, a, d
    assert [h.chunk_id for h in result.hits] == ["b", "a", "d"]
    assert [h.rank for h in result.hits] == [1, 2, 3]
    assert all(h.stage == "rrf" for h in result.hits)
    assert result.hits[0].stage_scores == {"bm25": 6, "dense": 0.9, "rrf": pytest.approx(1 / 62 + 1 / 61)}
    assert {"bm25", "dense", "rrf", "total"} <= set(result.timings_ms)


def test_hybrid_weighted_retriever_matches_function():
    r = HybridWeightedRetriever(list(_bases()), weights=[0.5, 0.5], normalization="minmax")
    hits = r.search("q", 4)
    assert [(h.chunk_id, round(h.score, 6)) for h in hits] == [("b", 0.75), ("a", 0.5), ("d", 0.25), ("c", 0.0)]
    assert not math.isnan(hits[-1].score)


def test_hybrid_fetches_deeper_than_k():
    lexical, dense = _bases()
    HybridRRFRetriever([lexical, dense], fetch_k=40).search("q", 2)
    assert lexical.calls[0][1] == 40 and dense.calls[0][1] == 40
