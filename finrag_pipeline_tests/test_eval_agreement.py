"""External agreement (core/evaluation/agreement.py): rank correlations against hand computations."""

import json

import numpy as np
import pandas as pd
import pytest

from finrag_pipeline.core.evaluation.agreement import (
    agreement_markdown,
    build_external_agreement,
    compute_external_agreement,
    flipped_pairs,
    kendall_tau_b,
    spearman_rho,
)
from finrag_pipeline.core.evaluation.runner import AgreementConfig, StatsConfig
from finrag_pipeline.core.warehouse import Warehouse


@pytest.mark.parametrize(("x", "y", "tau", "rho"), [
    ([1, 2, 3, 4], [1, 2, 3, 4], 1.0, 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0, -1.0),
    # one discordant pair of 6: (5 - 1) / 6; ranks (1,2,3,4) vs (2,1,3,4): 1 - 6 * 2 / (4 * 15) = 0.8
    ([0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4], 4 / 6, 0.8),
    # tau-b with ties: C = 4, D = 0, n0 = 6, one pair tied in x, one in y: 4 / sqrt(5 * 5);
    # average ranks x (1.5, 1.5, 3, 4), y (1, 2.5, 2.5, 4), centred (-1, -1, .5, 1.5), (-1.5, 0, 0, 1.5):
    # Pearson = 3.75 / sqrt(4.5 * 4.5) = 5/6
    ([1, 1, 2, 3], [1, 2, 2, 3], 0.8, 5 / 6),
    # a leaderboard all tied: undefined, not 0
    ([0.5, 0.5, 0.5], [0.1, 0.2, 0.3], None, None),
    ([1.0], [2.0], None, None),
])
def test_rank_correlations_hand_computed(x, y, tau, rho):
    got_tau, got_rho = kendall_tau_b(x, y), spearman_rho(x, y)
    assert (got_tau is None) if tau is None else got_tau == pytest.approx(tau)
    assert (got_rho is None) if rho is None else got_rho == pytest.approx(rho)


def test_tau_b_matches_scipy_on_random_ties():
    import scipy.stats as scipy_stats
    rng = np.random.default_rng(3)
    for _ in range(20):
        x, y = rng.integers(0, 4, 7).astype(float), rng.integers(0, 4, 7).astype(float)
        ref = scipy_stats.kendalltau(x, y).statistic          # tau-b is scipy's default variant
        got = kendall_tau_b(x, y)
        assert (got is None and np.isnan(ref)) or got == pytest.approx(ref)
        ref_rho = scipy_stats.spearmanr(x, y).statistic
        got_rho = spearman_rho(x, y)
        assert (got_rho is None and np.isnan(ref_rho)) or got_rho == pytest.approx(ref_rho)


def test_flipped_pairs_are_strict_on_both_sides():
    names = ["a", "b", "c", "d"]
    assert flipped_pairs(names, [0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4]) == [("b", "a")]
    assert flipped_pairs(names, [0.1, 0.2, 0.3, 0.4], [0.3, 0.3, 0.3, 0.3]) == []   # ties are not flips


# A small evaluation: three configurations; synthetic questions s1, s2 on F1 (s3 on F2, outside the
# external set's filings); external questions e1..e3 on F1 and e4 without evidence.
#   synthetic on F1: A (1, 1) = 1.0, B (1, 0) = 0.5, C (0, 0) = 0.0        -> A > B > C
#   external:        A (0, 0, 1) = 1/3, B (1, 1, 0) = 2/3, C (0, 1, 0) = 1/3 -> B > A = C
# tau-b: (A,B) discordant, (A,C) tied on external, (B,C) concordant: (1 - 1) / sqrt(3 * 2) = 0
# rho: ranks A, B, C = (3, 2, 1) vs (1.5, 3, 1.5): covariance 0 -> 0
# flips: A > B on synthetic, B > A on external.
SCORES = {
    ("F1", "s1"): {"A": 1, "B": 1, "C": 0}, ("F1", "s2"): {"A": 1, "B": 0, "C": 0},
    ("F2", "s3"): {"A": 0, "B": 1, "C": 1},
    ("F1", "e1"): {"A": 0, "B": 1, "C": 0}, ("F1", "e2"): {"A": 0, "B": 1, "C": 1},
    ("F1", "e3"): {"A": 1, "B": 0, "C": 0}, ("F1", "e4"): {"A": None, "B": None, "C": None},
}


def _rows() -> pd.DataFrame:
    rows = []
    for (fid, qa), by_cfg in SCORES.items():
        for cfg, value in by_cfg.items():
            for k, v in ((5, value), (10, 1.0)):   # k=10 would make every configuration tie: must be ignored
                rows.append({"run_id": f"{cfg}-{fid}-{k}", "filing_id": fid, "scope": "filing",
                             "config_name": f"{cfg}@{k}", "retriever": cfg, "k": k, "chunking": None,
                             "qa_id": qa, "all_evidence_hit": None if v is None and k == 5 else v,
                             "status": "no_relevant" if qa == "e4" else "ok",
                             "evaluated_at": pd.Timestamp("2026-01-01")})
    return pd.DataFrame(rows)


def _items() -> pd.DataFrame:
    return pd.DataFrame([
        {"qa_id": qa, "filing_id": fid, "source": "financebench" if qa.startswith("e") else "generated",
         "metadata": json.dumps({"external_set": "analyst_questions"} if qa.startswith("e") else {})}
        for fid, qa in SCORES])


def test_agreement_on_a_hand_computed_case():
    summary, configs = compute_external_agreement(_rows(), _items(), AgreementConfig(),
                                                  StatsConfig(n_boot=200, seed=1))
    assert len(summary) == 1
    row = summary.iloc[0]
    assert (row["external_set"], row["source"], row["scope"], row["k"]) == ("analyst_questions", "financebench",
                                                                          "filing", 5)
    assert row["n_configs"] == 3 and row["n_filings"] == 1 and json.loads(row["filing_ids"]) == ["F1"]
    assert row["n_external_questions"] == 3 and row["n_synthetic_questions"] == 2   # e4 and F2 left out
    assert row["kendall_tau_b"] == pytest.approx(0.0) and row["spearman_rho"] == pytest.approx(0.0)
    assert row["n_flipped_pairs"] == 1 and row["n_pairs"] == 3
    assert json.loads(row["flipped_pairs"]) == ["A@5 > B@5 on synthetic, B@5 > A@5 on external"]
    assert row["best_synthetic"] == "A@5" and row["best_external"] == "B@5"
    assert -1 <= row["kendall_ci_low"] <= row["kendall_ci_high"] <= 1 and 0 < row["n_boot_valid"] <= 200
    by_cfg = configs.set_index("config_name")
    assert by_cfg.loc["A@5", "synthetic_mean"] == pytest.approx(1.0)
    assert by_cfg.loc["A@5", "external_mean"] == pytest.approx(1 / 3)
    assert (by_cfg.loc["A@5", "synthetic_rank"], by_cfg.loc["A@5", "external_rank"]) == (1.0, 2.5)
    assert by_cfg.loc["B@5", "rank_change"] == pytest.approx(2.0 - 1.0)
    # seeded: the same input gives the same interval
    again, _ = compute_external_agreement(_rows(), _items(), AgreementConfig(), StatsConfig(n_boot=200, seed=1))
    assert again.iloc[0]["kendall_ci_low"] == row["kendall_ci_low"]


def test_failures_count_as_zero_not_missing():
    rows = _rows()
    # B fails on every external question: its external mean is 0, it drops to last, order flips more
    failed = (rows["config_name"] == "B@5") & rows["qa_id"].isin(["e1", "e2", "e3"])
    rows.loc[failed, "status"], rows.loc[failed, "all_evidence_hit"] = "error", None
    _, configs = compute_external_agreement(rows, _items(), AgreementConfig(), StatsConfig(n_boot=50))
    b = configs.set_index("config_name").loc["B@5"]
    assert b["external_mean"] == 0.0 and b["n_external"] == 3


def test_too_few_configurations_is_null_with_a_reason():
    rows = _rows()
    rows = rows[rows["retriever"] != "C"]
    summary, _ = compute_external_agreement(rows, _items(), AgreementConfig(), StatsConfig(n_boot=50))
    row = summary.iloc[0]
    assert row["kendall_tau_b"] is None and row["spearman_rho"] is None and "needs 3" in row["note"]
    assert row["n_flipped_pairs"] == 1                      # flips are still listed


def test_no_external_set_gives_empty_tables_and_a_message(tmp_path):
    items = _items()
    items["source"] = "generated"
    summary, configs = compute_external_agreement(_rows(), items)
    assert summary.empty and configs.empty
    assert "No external QA set" in agreement_markdown(summary)


def test_build_replaces_the_tables(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    rows = _rows()
    rows["run_id"] = rows["run_id"]
    wh.replace_rows("eval.retrieval_results", rows, where={})
    wh.replace_rows("qa.items", _items().assign(status="accepted"), where={})
    for _ in range(2):   # idempotent
        build_external_agreement(wh, AgreementConfig(), StatsConfig(n_boot=50))
    got = wh.query_df("SELECT external_set, scope, kendall_tau_b FROM eval.external_agreement")
    assert len(got) == 1 and got.iloc[0]["kendall_tau_b"] == pytest.approx(0.0)
    assert wh.query_df("SELECT count(*) AS n FROM eval.external_agreement_configs").iloc[0]["n"] == 3
