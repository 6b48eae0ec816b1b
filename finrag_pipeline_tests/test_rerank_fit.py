"""Fitting the feature reranker's weights on a split by filing (core/retrieval/rerank_fit.py)."""

from __future__ import annotations

import pytest

from finrag_pipeline.core.retrieval.rerank_fit import (
    Candidate,
    Example,
    fit_feature_weights,
    mean_score,
    pair_auc,
    score_example,
    split_by_filing,
)

FILINGS = [f"CO{i}-2022-10K" for i in range(8)]


def test_split_by_filing_is_fixed_disjoint_and_complete():
    train, test = split_by_filing(FILINGS)
    assert (len(train), len(test)) == (4, 4)
    assert set(train).isdisjoint(test) and set(train) | set(test) == set(FILINGS)
    assert split_by_filing(reversed(FILINGS)) == (train, test)          # not by order
    assert split_by_filing([*FILINGS, "CO0-2022-10K"]) == (train, test)  # duplicates ignored
    assert split_by_filing(FILINGS, salt="other") != (train, test)       # by the hash, not alphabetically
    assert split_by_filing(["A"]) == (["A"], [])


def ex(filing: str, figure_on_evidence: bool) -> Example:
    """Candidate 0: best base score, page 1; candidate 1: base 0, page 2 with a figure match.
    Evidence on page 2 when the figure feature points at it, else on page 1."""
    cands = (Candidate(filing, (1,), 1.0, {"figure": 0.0}), Candidate(filing, (2,), 0.0, {"figure": 1.0}))
    return Example(filing, cands, (frozenset({(filing, 2 if figure_on_evidence else 1)}),))


@pytest.mark.parametrize(("figure_weight", "expected"), [(0.0, 0.0), (0.4, 0.0), (0.5, 0.0), (0.8, 1.0)])
def test_score_example_hand_computed(figure_weight, expected):
    # candidate 1 wins only when 0.8 * 1 > 0.5 * 1; a tie (0.5) keeps the base order
    assert score_example(ex("F", True), {"figure": figure_weight}, 0.5, k=1) == expected


def test_fit_picks_the_feature_that_helps_and_not_the_one_that_hurts():
    helps = [ex(f, True) for f in FILINGS[:3]] + [ex(FILINGS[3], False)]
    weights, bw, train = fit_feature_weights(helps, k=1)
    assert weights["figure"] == 0.8 and bw == 0.5 and train == pytest.approx(3 / 4)
    assert weights["period"] == weights["line_item"] == weights["table_row"] == 0.0   # ties -> the simplest
    hurts = [ex(f, False) for f in FILINGS[:3]] + [ex(FILINGS[3], True)]
    weights, _, train = fit_feature_weights(hurts, k=1)
    assert weights["figure"] <= 0.5 and train == pytest.approx(3 / 4)
    assert mean_score([], weights, 0.5, 1) is None
    with pytest.raises(ValueError, match="no training questions"):
        fit_feature_weights([], k=1)


@pytest.mark.parametrize(("scored", "expected"), [
    ([(0.9, True), (0.1, False)], 1.0),                              # evidence above
    ([(0.1, True), (0.9, False)], 0.0),                              # evidence below
    ([(0.5, True), (0.5, False)], 0.5),                              # a tie counts half
    # 2 evidence x 3 other = 6 pairs: 0.8 beats all 3; 0.4 beats 0.3, ties 0.4, loses to 0.6 -> 4.5 / 6
    ([(0.8, True), (0.4, True), (0.6, False), (0.4, False), (0.3, False)], 0.75),
    ([(0.8, True), (0.4, True)], None),                              # no negative: nothing to separate
    ([], None),
])
def test_pair_auc_hand_computed(scored, expected):
    assert pair_auc(scored) == expected
