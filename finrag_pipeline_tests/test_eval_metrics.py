"""Retrieval metrics: hand-computed tables, then a cross-check against trec_eval (pytrec_eval)."""

from __future__ import annotations

import math
import random

import pytest

from finrag_pipeline.core.scoring import metrics as m

L2_3 = 1 / math.log2(3)   # discount at rank 2
L2_5 = 1 / math.log2(5)   # discount at rank 4

# (case, ranked ids, required groups, k, expected {metric: value})
CASES = [
    ("three singletons, k=3", ["a", "b", "c", "d"], [{"a"}, {"c"}, {"e"}], 3,
     {"first_relevant_rank": 1, "hit": 1.0, "mrr": 1.0, "precision": 2 / 3, "recall": 2 / 3,
      "ap": (1 / 1 + 2 / 3) / 3, "ndcg": (1 + 0.5) / (1 + L2_3 + 0.5), "all_evidence_hit": 0.0}),
    ("k larger than the list: precision still divides by k", ["x", "a"], [{"a"}], 10,
     {"first_relevant_rank": 2, "hit": 1.0, "mrr": 0.5, "precision": 0.1, "recall": 1.0, "ap": 0.5,
      "ndcg": L2_3, "all_evidence_hit": 1.0}),
    ("nothing relevant retrieved", ["x", "y"], [{"a"}], 5,
     {"first_relevant_rank": None, "hit": 0.0, "mrr": 0.0, "precision": 0.0, "recall": 0.0, "ap": 0.0,
      "ndcg": 0.0, "all_evidence_hit": 0.0}),
    ("empty ranking", [], [{"a"}], 3,
     {"first_relevant_rank": None, "hit": 0.0, "mrr": 0.0, "precision": 0.0, "recall": 0.0, "ap": 0.0,
      "ndcg": 0.0, "all_evidence_hit": 0.0}),
    ("two groups, alternatives: second alternative earns precision but no group gain",
     ["a1", "a2", "x", "b1"], [{"a1", "a2"}, {"b1"}], 4,
     {"first_relevant_rank": 1, "hit": 1.0, "mrr": 1.0, "precision": 3 / 4, "recall": 1.0,
      "ap": 0.5 * (1 / 1 + 3 / 4), "ndcg": (1 + L2_5) / (1 + L2_3), "all_evidence_hit": 1.0}),
    ("two groups cut at k=2: one group found", ["a1", "a2", "x", "b1"], [{"a1", "a2"}, {"b1"}], 2,
     {"first_relevant_rank": 1, "hit": 1.0, "mrr": 1.0, "precision": 1.0, "recall": 0.5, "ap": 0.5,
      "ndcg": 1 / (1 + L2_3), "all_evidence_hit": 0.0}),
    ("one page satisfies two overlapping groups", ["p2"], [{"p1", "p2"}, {"p2", "p3"}], 1,
     {"first_relevant_rank": 1, "hit": 1.0, "mrr": 1.0, "precision": 1.0, "recall": 1.0, "ap": 1.0,
      "ndcg": 1.0, "all_evidence_hit": 1.0}),
    # {p1} implies {p1, p2}: only p1 is required, so p2 is not evidence any more
    ("implied group dropped: {p1} makes {p1,p2} redundant", ["p2", "p1"], [{"p1"}, {"p1", "p2"}], 2,
     {"first_relevant_rank": 2, "hit": 1.0, "mrr": 0.5, "precision": 0.5, "recall": 1.0, "ap": 0.5,
      "ndcg": L2_3, "all_evidence_hit": 1.0}),
    ("duplicate ids count once", ["a", "a", "b"], [{"b"}], 2,
     {"first_relevant_rank": 2, "hit": 1.0, "mrr": 0.5, "precision": 0.5, "recall": 1.0, "ap": 0.5,
      "ndcg": L2_3, "all_evidence_hit": 1.0}),
]


@pytest.mark.parametrize(("case", "ranked", "groups", "k", "expected"), CASES, ids=[c[0] for c in CASES])
def test_hand_computed(case, ranked, groups, k, expected):
    got = m.evaluate_ranking(ranked, groups, k)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        if value is None:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(value, abs=1e-12), name


def test_no_relevant_item_gives_undefined_metrics():
    got = m.evaluate_ranking(["a", "b"], [], 5)
    assert all(v is None for v in got.values())
    with pytest.raises(ValueError):
        m.recall_at_k(["a"], [], 5)
    with pytest.raises(ValueError):
        m.ndcg_at_k(["a"], [set()], 5)


def test_ties_are_broken_by_id_deterministically():
    scores = {"b": 1.0, "a": 1.0, "c": 0.5, "d": 1.0}
    assert m.rank_ids(scores) == ["a", "b", "d", "c"]
    # same scores, different insertion order -> same ranking -> same metric
    shuffled = dict(reversed(list(scores.items())))
    assert m.rank_ids(shuffled) == m.rank_ids(scores)
    assert m.reciprocal_rank_at_k(m.rank_ids(scores), {"b"}, 3) == 0.5


def test_evaluate_run_plain_mappings():
    qrels = {"q1": {"a": 1, "z": 0}, "q2": {"c": 1}}
    run = {"q1": {"a": 0.9, "b": 0.8}, "q2": {"a": 0.5, "b": 0.5, "c": 0.5}}
    res = m.evaluate_run(qrels, run, k=2)
    assert res["q1"]["mrr"] == 1.0 and res["q1"]["recall"] == 1.0
    # tie on q2: order a, b, c -> c is outside the top 2
    assert res["q2"]["hit"] == 0.0


def test_ranked_pages_dedup_and_multi_page_hits():
    hits = [("F", [3, 4]), ("F", [4]), ("G", [4]), ("F", [1])]
    assert m.ranked_pages(hits) == [("F", 3), ("F", 4), ("G", 4), ("F", 1)]


def test_k_must_be_positive():
    with pytest.raises(ValueError):
        m.precision_at_k(["a"], {"a"}, 0)


# ---------------------------------------------------------------------------------------------
# Cross-check against trec_eval where the definitions agree: singleton groups, no score ties
# (trec_eval breaks ties by docno in reverse order; ours by id ascending), and reciprocal rank on
# a run cut at k (trec_eval's recip_rank has no cut-off).


def _random_case(rng: random.Random, qid: str):
    docs = [f"d{i:02d}" for i in range(rng.randint(1, 25))]
    ranked = rng.sample(docs, k=len(docs))
    relevant = set(rng.sample([f"d{i:02d}" for i in range(30)], k=rng.randint(1, 8)))
    run = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}  # strictly decreasing
    return {d: 1 for d in relevant}, run


@pytest.mark.parametrize("k", [1, 3, 5, 10, 20])
def test_agrees_with_pytrec_eval(k):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(k)
    qrels, run = {}, {}
    for i in range(60):
        qrels[f"q{i}"], run[f"q{i}"] = _random_case(rng, f"q{i}")
    measures = {f"P.{k}", f"recall.{k}", f"map_cut.{k}", f"ndcg_cut.{k}"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    cut_run = {q: dict(list(r.items())[:k]) for q, r in run.items()}
    ref_rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_run)
    ours = m.evaluate_run(qrels, run, k)
    for q in qrels:
        assert ours[q]["precision"] == pytest.approx(ref[q][f"P_{k}"], abs=1e-9)
        assert ours[q]["recall"] == pytest.approx(ref[q][f"recall_{k}"], abs=1e-9)
        assert ours[q]["ap"] == pytest.approx(ref[q][f"map_cut_{k}"], abs=1e-9)
        assert ours[q]["ndcg"] == pytest.approx(ref[q][f"ndcg_cut_{k}"], abs=1e-9)
        assert ours[q]["mrr"] == pytest.approx(ref_rr[q]["recip_rank"], abs=1e-9)
