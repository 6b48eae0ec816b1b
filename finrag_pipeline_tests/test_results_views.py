"""The results views (core/scoring/results_views.py): one definition of "the newest run of each
configuration, scored by these rules", read by the bootstrap leaderboard, the report and the web explorer.

``data/leaderboard_before_views/`` holds eval.leaderboard and eval.comparisons as
core/evaluation/leaderboard.py computed them BEFORE the views existed (its own pandas newest-run and
scoring code, commit 4a8de1f) on the synthetic evaluated home of ``_synthetic_warehouse.py``: the
views must give the same rows, value for value.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from _synthetic_warehouse import STATS, T1, build_synthetic_warehouse

from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics, compute_statistics
from finrag_pipeline.core.reporting import report
from finrag_pipeline.core.scoring.results_views import (
    ANSWER_CURRENT,
    RETRIEVAL_CURRENT,
    ensure_views,
    view_sql,
    views_version,
)
from finrag_pipeline.core.warehouse import Warehouse

BEFORE = Path(__file__).parent / "data" / "leaderboard_before_views"


def _recorded_metrics(df: pd.DataFrame, before: pd.DataFrame) -> pd.DataFrame:
    """The rows of the metrics the recording has: metrics registered after it (e.g. the page-ranking
    metrics) are extra rows, and every recorded row must come back unchanged."""
    return _as_recorded(df[df["metric"].isin(set(before["metric"]))].reset_index(drop=True))


def _as_recorded(df: pd.DataFrame) -> pd.DataFrame:
    """A frame as the CSV of the recording stores it (same text -> same parsed values and dtypes)."""
    from io import StringIO

    return pd.read_csv(StringIO(df.to_csv(index=False)))


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Warehouse:
    return build_synthetic_warehouse(tmp_path_factory.mktemp("views") / "warehouse.duckdb")


def test_leaderboard_rows_identical_before_and_after_the_views(home):
    result = build_eval_statistics(home, STATS, built_at=T1)
    before = pd.read_csv(BEFORE / "leaderboard.csv")
    assert len(before) == 127 and set(before["kind"]) == {"retrieval", "answer"}
    pd.testing.assert_frame_equal(_recorded_metrics(result.leaderboard, before), before)
    comparisons = pd.read_csv(BEFORE / "comparisons.csv")
    pd.testing.assert_frame_equal(_recorded_metrics(result.comparisons, comparisons), comparisons)
    # and what was written is what was computed
    stored = home.query_df("select * from eval.leaderboard")
    assert len(stored) == len(result.leaderboard)


def test_frames_and_warehouse_give_the_same_statistics(home):
    """compute_statistics on raw frames (in-memory views) == build_eval_statistics on the warehouse."""
    raw = home.query_df("select * from eval.retrieval_results")
    answers = home.query_df("select * from eval.answer_results")
    runs = home.query_df("select * from eval.runs")
    from_frames = compute_statistics(raw, answers, runs, STATS, built_at=T1)
    before = pd.read_csv(BEFORE / "leaderboard.csv")
    pd.testing.assert_frame_equal(_recorded_metrics(from_frames.leaderboard, before), before)


def test_report_and_web_read_the_same_current_rows(home):
    with duckdb.connect(str(home.path), read_only=True) as con:
        via_report = report._latest_retrieval_rows(con)
        via_view = con.execute(f"select * from {RETRIEVAL_CURRENT} order by source_row").df()
        answers = con.execute(f"select * from {ANSWER_CURRENT} order by source_row").df()
        n_answer_rows = con.execute("select count(*) from eval.answer_results").fetchone()[0]
    pd.testing.assert_frame_equal(via_report, via_view)
    # the synthetic home has older runs: the current rows are fewer than all rows, and one run per key
    assert 0 < len(via_view) < len(home.query_df("select * from eval.retrieval_results"))
    per_key = via_view.groupby(["config_name", "retriever", "k", "chunking", "filing_id", "scope"],
                               dropna=False)["run_id"].nunique()
    assert per_key.max() == 1
    assert 0 < len(answers) <= n_answer_rows and set(answers["run_id"]) <= {"X1", "X2", "X3"}


@pytest.mark.parametrize(("status", "stored", "expected_status", "expected_value", "failed"), [
    ("ok", 0.5, "ok", 0.5, False),
    ("ok", None, "ok", None, False),              # not computable: stays NULL (coverage)
    ("no_relevant", 1.0, "no_relevant", None, False),   # left out of every mean
    ("error", None, "error", 0.0, True),           # a failure scores 0
    ("timeout", 0.9, "error", 0.0, True),          # any other status is a failure
    (None, 0.9, "error", 0.0, True),               # so is no status at all
])
def test_retrieval_scoring_rules(tmp_path, status, stored, expected_status, expected_value, failed):
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.replace_rows("eval.retrieval_results", [dict(run_id="R", filing_id="F", scope="filing", config_name="c",
                                                    retriever="bm25", k=5, qa_id="q", status=status,
                                                    hit_chunk=stored, latency_ms=12.0)], where={})
    row = wh.query_df(f"select * from {RETRIEVAL_CURRENT}").iloc[0]
    assert row["status"] == expected_status and bool(row["is_failed"]) is failed
    assert row["recorded_status"] == status or (status is None and row["recorded_status"] is None)
    assert (pd.isna(row["hit_chunk"]) if expected_value is None else row["hit_chunk"] == expected_value)
    assert pd.isna(row["latency_ms"]) if failed else row["latency_ms"] == 12.0


@pytest.mark.parametrize(("state", "error", "answerable", "correctness", "non_committal", "exp_state", "exp_corr"), [
    ("answered", None, True, 1.0, 0.0, "answered", 1.0),
    ("backend_error", "boom", True, None, None, "backend_error", 0.0),
    ("invalid_output", None, True, None, 1.0, "invalid_output", 0.0),   # rate kept as recorded
    ("error", None, True, 1.0, None, "backend_error", 0.0),             # legacy failure state
    (None, "timeout", True, None, None, "backend_error", 0.0),           # no state, an error message
    ("backend_error", "boom", False, None, None, "backend_error", None),  # metric does not apply
    (None, None, True, 0.5, None, "unknown", 0.5),
])
def test_answer_scoring_rules(tmp_path, state, error, answerable, correctness, non_committal, exp_state, exp_corr):
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.replace_rows("eval.answer_results", [dict(run_id="X", filing_id="F", config_name="c", qa_id="q",
                                                 response_state=state, error=error, answerable=answerable,
                                                 correctness=correctness, non_committal=non_committal)], where={})
    row = wh.query_df(f"select * from {ANSWER_CURRENT}").iloc[0]
    assert row["response_state"] == exp_state
    assert (pd.isna(row["correctness"]) if exp_corr is None else row["correctness"] == exp_corr)
    assert (pd.isna(row["non_committal"]) if non_committal is None else row["non_committal"] == non_committal)


def test_a_failed_answer_scores_0_on_a_judge_metric_only_where_a_judge_scored(tmp_path):
    """Without a judge (no judge_model) faithfulness is never computed: a backend_error stays NULL there, so
    the marts and the report say "n/a" instead of a mean of zeros. With a judge it counts 0 as usual."""
    wh = Warehouse(tmp_path / "w.duckdb")
    states = (("q1", "answered", 0.8), ("q2", "backend_error", None), ("q3", "abstained", 0.0))
    rows = [dict(run_id="X", filing_id="F", config_name=config, config_hash=config, qa_id=qa, answerable=True,
                 response_state=state, error="boom" if state == "backend_error" else None,
                 faithfulness=faith if judged or state == "abstained" else None,
                 judge_reasons='{"faithfulness": "1 of 1 claims"}' if judged and state == "answered" else None)
            for config, judged in (("no-judge", False), ("judged", True)) for qa, state, faith in states]
    wh.replace_rows("eval.answer_results", rows, where={})
    got = {(r.config_name, r.qa_id): r.faithfulness for r in wh.query_df(f"select * from {ANSWER_CURRENT}").itertuples()}
    # the abstention's stored 0 (as rows written before the fix have it) is no score without a judge either
    assert all(pd.isna(got[("no-judge", qa)]) for qa in ("q1", "q2", "q3"))
    assert (got[("judged", "q1")], got[("judged", "q2")], got[("judged", "q3")]) == (0.8, 0.0, 0.0)
    # the report names the reason beside its "n/a" even where the row's notes predate it
    with wh.connect(read_only=True) as con:
        reasons = report.load_answer_na_reasons(con)
    assert reasons[(None, None, None, "faithfulness")] == "no judge configured"


def test_views_are_recreated_only_when_their_sql_changes(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.connect() as con:
        comments = dict(con.execute("select view_name, comment from duckdb_views() where schema_name = 'eval'")
                        .fetchall())
        assert {n.split(".")[1] for n in view_sql()} <= set(comments)
        assert set(comments.values()) == {views_version()}
        executed: list[str] = []
        real = con.execute
        ensure_views(type("Spy", (), {"execute": lambda self, sql, *a: executed.append(sql) or real(sql, *a)})())
        assert not any(s.startswith("create") for s in executed)   # up to date: nothing rewritten


def test_no_other_module_picks_the_newest_run_itself():
    """The newest-run rule (a window over configuration keys ordered by time) is written once, in
    results_views.py; the dbt models, the report, the web explorer and the leaderboard select from the views."""
    import re

    from finrag_pipeline.core.paths import REPO_ROOT

    rule = re.compile(r"partition\s+by[^)]*order\s+by[^)]*\b(last_at|last_evaluated_at|evaluated_at|run_at)\b\)?\s*desc"
                      r"|_newest_runs|drop_duplicates\([^)]*run_id", re.I | re.S)
    offenders = []
    for folder, pattern in (("finrag_pipeline", "*.py"), ("dbt_metrics/models", "*.sql"), ("benchmarks", "*.py")):
        for path in (REPO_ROOT / folder).rglob(pattern):
            if path.name == "results_views.py":
                continue
            if rule.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []
    assert rule.search(view_sql()["eval.retrieval_run_order"])     # the pattern does find the one definition


def test_an_older_warehouse_gets_the_views_on_its_first_writable_open(tmp_path):
    """A warehouse file written before the views existed: the report, reading it read-only, says what to
    do instead of showing an empty leaderboard; one writable open creates the views."""
    from finrag_pipeline.core.warehouse import TABLE_DDL

    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create schema eval")
        for table in ("eval.retrieval_results", "eval.answer_results", "eval.runs"):
            con.execute(f"create table {table} ({TABLE_DDL[table]})")
        con.execute("insert into eval.retrieval_results (run_id, config_name, qa_id, status, hit_chunk) "
                    "values ('R', 'bm25', 'q1', 'ok', 1.0)")
    with duckdb.connect(str(path), read_only=True) as con, pytest.raises(report.ResultsViewsMissing,
                                                                           match="predates the results views"):
        report._latest_retrieval_rows(con)
    with Warehouse(path).connect():
        pass
    with duckdb.connect(str(path), read_only=True) as con:
        rows = report._latest_retrieval_rows(con)
    assert rows[["qa_id", "hit_chunk", "status"]].values.tolist() == [["q1", 1.0, "ok"]]
