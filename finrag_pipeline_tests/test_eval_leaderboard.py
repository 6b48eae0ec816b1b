"""core/evaluation/leaderboard.py: newest runs, bootstrap leaderboard and paired comparisons, by hand.

Every expected number below is worked out from the rows the test writes; the bootstrap bounds are
checked against stats.bootstrap_ci / paired_comparison on the hand-listed values (same seed).
"""

from __future__ import annotations

import datetime as dt

import duckdb
import pandas as pd
import pytest
from _synthetic_warehouse import STATS, T1, build_synthetic_warehouse

from finrag_pipeline.core.evaluation.leaderboard import (
    COMPARISON_COLUMNS,
    LEADERBOARD_COLUMNS,
    build_eval_statistics,
    compute_statistics,
    latest_answer_rows,
    latest_retrieval_rows,
    leaderboard_markdown,
)
from finrag_pipeline.core.evaluation.runner import (
    ANSWER_COLUMNS,
    RETRIEVAL_COLUMNS,
    RETRIEVAL_METRICS,
    StatsConfig,
)
from finrag_pipeline.core.evaluation.stats import bootstrap_ci, paired_comparison
from finrag_pipeline.core.reporting.report import interval_bounds
from finrag_pipeline.core.warehouse import TABLE_DDL, Warehouse

FAST = StatsConfig(n_boot=400, n_perm=999, seed=7)
T = [dt.datetime(2026, 3, 1, h) for h in range(6)]


def rrow(config, qa_id, value, *, status="ok", run_id="R1", filing="F1", scope="filing", k=5, retriever=None,
         chunking=None, at=T[1], chunk_value="same", page_value="same"):
    """One eval.retrieval_results row with every metric = ``value`` (chunk/page overridable)."""
    row = dict.fromkeys(RETRIEVAL_COLUMNS)
    cv = value if chunk_value == "same" else chunk_value
    pv = value if page_value == "same" else page_value
    row.update({m: (cv if m.endswith("_chunk") else pv) for m in RETRIEVAL_METRICS})
    row.update(run_id=run_id, filing_id=filing, scope=scope, config_name=config,
               retriever=retriever or config.split("@")[0], k=k, chunking=chunking, qa_id=qa_id, status=status,
               evaluated_at=at)
    return row


def arow(config, qa_id, figure, *, state="answered", run_id="X1", filing="F1", at=T[1], error=None, model=None,
         correct=1.0):
    row = dict.fromkeys(ANSWER_COLUMNS)
    row.update(run_id=run_id, filing_id=filing, config_name=config, model=model or config, prompt_type="standard",
               temperature=0.0, top_p=1.0, retriever="bm25", k=5, qa_id=qa_id, response_state=state,
               correctness=figure, grounded=figure, citation_precision=figure, citation_recall=figure,
               state_correct=correct, error=error, evaluated_at=at)
    return row


def cmp_row(result, config, metric="ndcg_page", kind="retrieval"):
    c = result.comparisons
    rows = c[(c["kind"] == kind) & (c["config_name"] == config) & (c["metric"] == metric)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def board_row(result, config, metric, kind="retrieval", scope="filing"):
    b = result.leaderboard
    sel = (b["kind"] == kind) & (b["config_name"] == config) & (b["metric"] == metric)
    if kind == "retrieval":
        sel &= b["scope"] == scope
    rows = b[sel]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# ---------------------------------------------------------------------------------------------
# Newest run per configuration x filing x scope (dbt int_retrieval_run_order / int_answer_latest)


def _runs(*rows):
    return pd.DataFrame([dict(run_id=r, started_at=s, finished_at=f) for r, s, f in rows])


@pytest.mark.parametrize(("case", "rows", "runs", "winner"), [
    ("newest evaluated_at wins", [("R1", T[1]), ("R2", T[2])], None, "R2"),
    ("older evaluated_at, but eval.runs says R1 finished later", [("R1", T[1]), ("R2", T[2])],
     _runs(("R1", T[0], T[4]), ("R2", T[0], T[3])), "R1"),
    ("finished_at NULL -> started_at", [("R1", T[3]), ("R2", T[2])],
     _runs(("R1", T[1], None), ("R2", T[0], T[2])), "R2"),
    ("run missing from eval.runs -> its evaluated_at", [("R1", T[5]), ("R2", T[2])],
     _runs(("R2", T[0], T[3])), "R1"),
    ("same time -> larger run_id", [("R1", T[2]), ("R2", T[2])], None, "R2"),
    ("NULL time sorts last", [("R1", T[1]), ("R9", None)], None, "R1"),
])
def test_newest_run_is_picked_like_dbt(case, rows, runs, winner):
    raw = pd.DataFrame([rrow("bm25@5", q, 1.0, run_id=run_id, at=at) for run_id, at in rows for q in ("q1", "q2")])
    raw["evaluated_at"] = pd.to_datetime(raw["evaluated_at"])
    latest = latest_retrieval_rows(raw, runs)
    assert set(latest["run_id"]) == {winner}, case
    assert sorted(latest["qa_id"]) == ["q1", "q2"]


def test_newest_run_is_per_filing_and_scope_and_chunking_null_safe():
    raw = pd.DataFrame([
        rrow("bm25@5", "q1", 1.0, run_id="A", filing="F1", at=T[1]),
        rrow("bm25@5", "q1", 0.0, run_id="B", filing="F1", at=T[2]),      # replaces A
        rrow("bm25@5", "m1", 1.0, run_id="C", filing="F2", at=T[0]),      # another filing: kept
        rrow("bm25@5", "q1", 1.0, run_id="D", filing="F1", scope="corpus", at=T[0]),  # another scope: kept
    ])
    assert sorted(latest_retrieval_rows(raw)["run_id"]) == ["B", "C", "D"]
    answers = pd.DataFrame([arow("ext", "q1", 1.0, run_id="X1", at=T[1]), arow("ext", "q1", 0.0, run_id="X2", at=T[2]),
                            arow("ext", "m1", 1.0, run_id="X3", filing="F2", at=T[0])])
    assert sorted(latest_answer_rows(answers)["run_id"]) == ["X2", "X3"]


def test_failed_answers_score_zero_only_where_a_metric_applies():
    """As stg_answer_results: a failure on an answerable question scores 0; on an unanswerable one
    correctness stays NULL (it does not apply) and abstention_correct keeps its recorded 0; the rate
    non_committal is never set to 0 for a failure."""
    ok = arow("llm", "q1", 1.0, run_id="X1") | {"answerable": True, "non_committal": 0.0}
    failed = arow("llm", "q2", None, state="backend_error", run_id="X1", error="timeout") | {"answerable": True}
    failed_unanswerable = arow("llm", "u1", None, state="backend_error", run_id="X1", error="timeout") | {
        "answerable": False, "abstention_correct": 0.0}
    df = latest_answer_rows(pd.DataFrame([ok, failed, failed_unanswerable])).set_index("qa_id")
    assert df.loc["q2", "correctness"] == 0.0 and pd.isna(df.loc["q2", "non_committal"])
    assert pd.isna(df.loc["u1", "correctness"]) and df.loc["u1", "abstention_correct"] == 0.0
    assert df.loc["q1", "non_committal"] == 0.0


# ---------------------------------------------------------------------------------------------
# Leaderboard: failures 0, no_relevant out, NULL = not computable (coverage)


def test_leaderboard_counts_failures_as_zero_and_reports_coverage():
    raw = pd.DataFrame([
        rrow("bm25@5", "q1", 1.0),
        rrow("bm25@5", "q2", 0.0),
        rrow("bm25@5", "q3", 0.5),
        rrow("bm25@5", "q4", 0.9, status="error"),     # a failure scores 0 whatever was stored
        rrow("bm25@5", "q5", None, status="no_relevant"),
        rrow("bm25@5", "q6", 1.0, chunk_value=None),   # chunk level not computable
        rrow("bm25@5", "q7", None, status=None),       # no status at all: a failure (dbt staging rule)
    ])
    res = compute_statistics(raw, None, None, FAST)
    cases = [
        # metric, hand-listed values that enter the mean (None = not computable), n, n_total
        ("hit_chunk", [1.0, 0.0, 0.5, 0.0, None, 0.0], 5, 6),
        ("ndcg_page", [1.0, 0.0, 0.5, 0.0, 1.0, 0.0], 6, 6),
        ("all_evidence_hit", [1.0, 0.0, 0.5, 0.0, 1.0, 0.0], 6, 6),
    ]
    for metric, values, n, n_total in cases:
        row = board_row(res, "bm25@5", metric)
        expected = bootstrap_ci(values, n_boot=FAST.n_boot, confidence=FAST.confidence, seed=FAST.seed)
        assert row["mean"] == pytest.approx(expected.mean), metric
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.ci_low, expected.ci_high)), metric
        assert (row["n"], row["n_total"], row["coverage"]) == (n, n_total, pytest.approx(n / n_total)), metric
        assert (row["n_questions"], row["n_no_relevant"], row["n_failed"], row["n_filings"]) == (7, 1, 2, 1)
        assert (row["n_boot"], row["seed"], row["confidence"]) == (FAST.n_boot, FAST.seed, FAST.confidence)
    assert board_row(res, "bm25@5", "hit_chunk")["mean"] == pytest.approx(1.5 / 5)
    assert set(res.leaderboard["metric"]) == set(RETRIEVAL_METRICS)
    assert list(res.leaderboard.columns) == list(LEADERBOARD_COLUMNS)


def test_leaderboard_is_seeded():
    raw = pd.DataFrame([rrow("bm25@5", f"q{i}", ((i * 7) % 11) / 10) for i in range(30)])
    a, b = compute_statistics(raw, stats=FAST), compute_statistics(raw, stats=FAST)
    pd.testing.assert_frame_equal(a.leaderboard.drop(columns="built_at"), b.leaderboard.drop(columns="built_at"))
    other = compute_statistics(raw, stats=FAST.model_copy(update={"seed": 8}))
    assert not other.leaderboard["ci_low"].equals(a.leaderboard["ci_low"])


# ---------------------------------------------------------------------------------------------
# Paired comparisons against the best config of the scope x k


def _two_configs(best_vals, other_vals, other_qas=None):
    qas = [f"q{i:02d}" for i in range(len(best_vals))]
    rows = [rrow("a-best@5", q, v) for q, v in zip(qas, best_vals, strict=True)]
    rows += [rrow("b-other@5", q, v) for q, v in zip(other_qas or qas, other_vals, strict=True)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("case", "best_vals", "other_vals", "other_qas", "diff", "p", "dist", "n_pairs"), [
    ("identical per-question results", [1.0, 0.0, 0.5, 1.0, 0.25] * 4, [1.0, 0.0, 0.5, 1.0, 0.25] * 4, None,
     0.0, 1.0, False, 20),
    ("strictly worse on each of 20 questions", [1.0] * 20, [0.5, 0.25] * 10, None,
     -0.625, 1 / (1 + FAST.n_perm), True, 20),
    ("same mean, opposite questions (tie -> smaller name is best)", [1.0, 0.0] * 10, [0.0, 1.0] * 10, None,
     0.0, 1.0, False, 20),
    # 10 pairs: all-equal signs have probability 2/1024, so p is the seeded count, not 1/(1+n_perm)
    ("only the shared questions are paired", [1.0] * 20, [0.0] * 10, [f"q{i:02d}" for i in range(0, 20, 2)],
     -1.0, None, True, 10),
])
def test_paired_comparison_with_the_best(case, best_vals, other_vals, other_qas, diff, p, dist, n_pairs):
    res = compute_statistics(_two_configs(best_vals, other_vals, other_qas), stats=FAST)
    best = cmp_row(res, "a-best@5")
    assert (best["is_best"], best["best_config_name"], best["mean_diff"], best["p_value"],
            best["distinguishable"]) == (True, "a-best@5", 0.0, 1.0, False), case
    row = cmp_row(res, "b-other@5")
    assert (row["is_best"], row["best_config_name"], row["best_by"]) == (False, "a-best@5", "ndcg_page"), case
    assert row["mean_diff"] == pytest.approx(diff), case
    assert (row["distinguishable"], row["n_pairs"]) == (dist, n_pairs), case
    # CI and p are the paired bootstrap / sign-flip test of (other - best) on the shared questions.
    by_qa = dict(zip([f"q{i:02d}" for i in range(len(best_vals))], best_vals, strict=True))
    qas = other_qas or list(by_qa)
    expected = paired_comparison([by_qa[q] for q in qas], other_vals, n_boot=FAST.n_boot, n_perm=FAST.n_perm,
                                 confidence=FAST.confidence, seed=FAST.seed)
    assert row["p_value"] == pytest.approx(expected.p_value if p is None else p), case
    assert p is not None or row["p_value"] < 0.05
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.ci_low, expected.ci_high)), case
    assert row["distinguishable"] == (row["ci_low"] > 0 or row["ci_high"] < 0)
    assert (row["mean"], row["best_mean"]) == pytest.approx(
        (sum(other_vals) / len(other_vals), sum(best_vals) / len(best_vals)))
    assert list(res.comparisons.columns) == list(COMPARISON_COLUMNS)


def test_best_is_chosen_per_scope_and_k_by_page_ndcg_then_page_hit_then_name():
    rows = []
    for q in ("q1", "q2"):
        # k=5: z@5 wins on page nDCG although y@5 is better at chunk level.
        rows += [rrow("z@5", q, 0.5, chunk_value=0.0, page_value=0.9), rrow("y@5", q, 0.5, chunk_value=1.0,
                                                                            page_value=0.8)]
        # k=10: same page nDCG; m@10 wins on page hit (tie-break), then name would pick l@10.
        r1 = rrow("m@10", q, 0.7, k=10)
        r1["hit_page"] = 1.0
        r2 = rrow("l@10", q, 0.7, k=10)
        r2["hit_page"] = 0.5
        rows += [r1, r2]
        # corpus scope is its own race.
        rows += [rrow("y@5", q, 1.0, scope="corpus"), rrow("z@5", q, 0.0, scope="corpus")]
        # a config with no page score at all is compared but can never be best
        rows += [rrow("n@5", q, None, page_value=None)]
    res = compute_statistics(pd.DataFrame(rows), stats=FAST)
    best = (res.comparisons[res.comparisons["metric"] == "ndcg_page"]
            .drop_duplicates(["scope", "k"]).set_index(["scope", "k"])["best_config_name"].to_dict())
    assert best == {("filing", 5): "z@5", ("filing", 10): "m@10", ("corpus", 5): "y@5"}
    n = res.comparisons[(res.comparisons["config_name"] == "n@5") & (res.comparisons["metric"] == "ndcg_page")]
    assert n.iloc[0]["n_pairs"] == 0 and n.iloc[0]["distinguishable"] is None
    # every metric is compared against that one best config
    assert set(res.comparisons[res.comparisons["config_name"] == "y@5"]["metric"]) == set(RETRIEVAL_METRICS)


# ---------------------------------------------------------------------------------------------
# Answers


def test_answer_leaderboard_and_comparisons():
    qas = [f"q{i:02d}" for i in range(20)]
    rows = [arow("good", q, 1.0) for q in qas]
    rows += [arow("twin", q, 1.0) for q in qas]
    rows += [arow("weak", q, 0.0, state="abstained", correct=0.0) for q in qas[:10]]
    rows += [arow("weak", q, None, state="backend_error", error="Timeout", correct=None) for q in qas[10:]]
    rows += [arow("weak", "u1", None, state="abstained", correct=1.0)]        # unanswerable, not scored
    res = compute_statistics(None, pd.DataFrame(rows), stats=FAST)
    weak = board_row(res, "weak", "correctness", kind="answer")
    assert (weak["mean"], weak["n"], weak["n_total"], weak["n_failed"], weak["n_questions"]) == (0.0, 20, 21, 10, 21)
    assert weak["scope"] is None and weak["model"] == "weak" and weak["top_p"] == 1.0
    sc = board_row(res, "weak", "state_correct", kind="answer")
    assert sc["mean"] == pytest.approx(1 / 21)                               # failures 0, u1 right
    twin = cmp_row(res, "twin", "correctness", kind="answer")
    assert (twin["best_config_name"], twin["mean_diff"], twin["p_value"], twin["distinguishable"]) == (
        "good", 0.0, 1.0, False)
    w = cmp_row(res, "weak", "correctness", kind="answer")
    assert (w["mean_diff"], w["ci_low"], w["ci_high"], w["distinguishable"], w["n_pairs"]) == (
        -1.0, -1.0, -1.0, True, 20)
    assert w["best_by"] == "correctness" and w["p_value"] == pytest.approx(1 / (1 + FAST.n_perm))


# ---------------------------------------------------------------------------------------------
# Warehouse tables, markdown, report


def test_build_writes_and_fully_replaces_the_tables(tmp_path):
    wh = build_synthetic_warehouse(tmp_path / "w.duckdb")
    first = build_eval_statistics(wh, STATS, built_at=T1)
    second = build_eval_statistics(wh, STATS, built_at=T1 + dt.timedelta(days=1))
    n_board = wh.query_df("select count(*) as n from eval.leaderboard")["n"][0]
    n_cmp = wh.query_df("select count(*) as n from eval.comparisons")["n"][0]
    assert n_board == len(first.leaderboard) == len(second.leaderboard) > 0      # replaced, not appended
    assert n_cmp == len(second.comparisons) > 0
    assert wh.query_df("select distinct built_at from eval.leaderboard")["built_at"].tolist() == [
        pd.Timestamp(T1 + dt.timedelta(days=1))]
    # 7 retrieval configs x 16 metrics (13 + the 3 ranked-page ones, NULL in these rows) + 3 answer configs
    # (one a sanity answerer) x 13 answer metrics (key_fact_recall among them)
    assert n_board == 7 * 16 + 3 * 13
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        types = dict(con.execute("select column_name, data_type from information_schema.columns "
                                 "where table_schema = 'eval' and table_name = 'comparisons'").fetchall())
        assert (types["is_best"], types["distinguishable"], types["k"]) == ("BOOLEAN", "BOOLEAN", "INTEGER")
        assert con.execute("""select distinguishable, n_pairs from eval.comparisons
            where config_name = 'dense-k10' and metric = 'ndcg_page'""").fetchall() == [(True, 20)]
    assert {"eval.leaderboard", "eval.comparisons"} <= set(TABLE_DDL)


def test_build_on_an_empty_warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    res = build_eval_statistics(wh, FAST)
    assert res.leaderboard.empty and res.comparisons.empty
    assert wh.query_df("select count(*) as n from eval.leaderboard")["n"][0] == 0
    assert leaderboard_markdown(res) == "_No evaluation results yet._"


def test_markdown_marks_the_best_and_the_indistinguishable(tmp_path):
    res = build_eval_statistics(build_synthetic_warehouse(tmp_path / "w.duckdb"), STATS)
    md = leaderboard_markdown(res)
    assert "**retrieval: scope=filing, k=10**" in md and "**answer: all answer configurations**" in md
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and "config" not in line}
    assert lines["bm25-k10"].endswith("| best |")
    assert lines["hybrid-k10"].endswith("| no (p=1) |")
    assert "| 1.000 [1.000, 1.000] |" in lines["hybrid-k10"]
    assert "| yes (p=0.0005) |" in lines["dense-k10"] and "-0.625 [" in lines["dense-k10"]


@pytest.mark.parametrize(("boot_low", "closed_low", "expected"), [
    (0.2, 0.1, 0.2),           # bootstrap wins
    (None, 0.1, 0.1),          # no bootstrap for this row: closed form
])
def test_interval_bounds_fall_back_per_row(boot_low, closed_low, expected):
    df = pd.DataFrame({"m_mean": [0.5], "m_ci_low": [closed_low], "m_ci_high": [0.9],
                       "m_boot_ci_low": [boot_low], "m_boot_ci_high": [0.8 if boot_low is not None else None]})
    low, high = interval_bounds(df, "m")
    assert low.iloc[0] == pytest.approx(expected)
    assert high.iloc[0] == pytest.approx(0.8 if boot_low is not None else 0.9)


def test_dagster_asset_materializes_the_tables(tmp_path):
    import dagster as dg

    from finrag_pipeline.defs.evaluation.assets import eval_statistics
    from finrag_pipeline.defs.resources import FinragResource

    build_synthetic_warehouse(tmp_path / "warehouse.duckdb")
    result = dg.materialize([eval_statistics], resources={"finrag": FinragResource(home=str(tmp_path))})
    assert result.success
    meta = result.asset_materializations_for_node("eval_statistics")[0].metadata
    assert meta["configs_not_distinguishable_from_best"].value >= 1          # hybrid-k10 at least
    assert "| hybrid-k10 |" in meta["leaderboard"].value
    assert Warehouse(tmp_path / "warehouse.duckdb").query_df(
        "select count(*) as n from eval.comparisons")["n"][0] > 0
