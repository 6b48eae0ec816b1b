"""The Dagster layer for real: the whole graph on real filings in an ephemeral instance, checks included;
then a new 10-K lands in the inbox and everything re-evaluates by itself.

Corpus: four pages cut from Apple's FY2022 PDF and Apple's FY2024 inline-XBRL 10-K. The arrival is
Apple's FY2025 10-K (finrag_pipeline_tests/data). One module-scoped pipeline keeps the suite affordable
(embedding a whole 10-K takes ~30-60 s on 2 cores); the tests run in file order on that state.
"""

import shutil
from pathlib import Path

import dagster as dg
import pytest
from _dagster_driver import execute_sensor_result, run_automation_until_quiet, tick_inbox_sensor

from finrag_pipeline.core.inbox import InboxCursor
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR, FinragPaths
from finrag_pipeline.core.warehouse import Warehouse
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

DATA = Path(__file__).parent / "data"
pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    home = tmp_path_factory.mktemp("finrag_home")
    mp = pytest.MonkeyPatch()
    mp.setenv("FINRAG_HOME", str(home))
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copy(DATA / "apple_2022_excerpt.pdf", corpus)
    shutil.copy(SAMPLE_FILINGS_DIR / "aapl-10-k-2024-11-01.html", corpus)
    paths = FinragPaths.from_env(str(home)).ensure()
    instance = dg.DagsterInstance.ephemeral()
    report = run_pipeline([corpus], paths, instance, defs, progress=lambda _msg: None)
    yield {"paths": paths, "instance": instance, "defs": defs, "report": report, "wh": Warehouse(paths.warehouse)}
    mp.undo()


def _count(wh: Warehouse, sql: str, params=()) -> int:
    return int(wh.query_df(sql, list(params)).iloc[0, 0])


def test_whole_graph_materializes_with_checks_passing(pipeline):
    report, instance, wh = pipeline["report"], pipeline["instance"], pipeline["wh"]
    assert report.failed == {}
    assert {r.filing_id for r in report.registrations} == {"AAPL-2022-10K", "AAPL-2024-10K"}
    for fid in ("AAPL-2022-10K", "AAPL-2024-10K"):
        for asset in ("filings", "pages", "table_rows", "xbrl_facts", "chunks", "bm25_index", "vector_index",
                      "qa_set", "retrieval_eval", "answer_eval"):
            assert fid in instance.get_materialized_partitions(dg.AssetKey(asset)), (asset, fid)
    # every asset check ran and passed: ingest/index checks per filing, and the dbt tests on the marts
    assert report.failed_checks == []
    for fid in ("AAPL-2022-10K", "AAPL-2024-10K"):
        ran = {check for _asset, check, partition, _ok, _sev in report.checks if partition == fid}
        assert {"pages_have_text", "chunks_are_well_formed", "facts_have_units_and_periods",
                "bm25_index_rows_equal_leaf_chunks", "vector_index_rows_equal_leaf_chunks"} <= ran
    assert sum(1 for _a, _c, partition, _ok, _sev in report.checks if partition is None) > 20

    # what ingest wrote, checked against the filings
    apple22 = wh.query_df("SELECT * FROM core.table_rows WHERE filing_id = 'AAPL-2022-10K' AND row_label = 'Total net sales'")
    assert len(apple22) >= 1 and "394,328" in apple22.iloc[0]["cells"]
    assert _count(wh, "SELECT count(*) FROM core.xbrl_facts WHERE filing_id = 'AAPL-2024-10K'") > 900
    leaves = _count(wh, "SELECT count(*) FROM core.chunks WHERE filing_id = 'AAPL-2024-10K' AND is_leaf")
    paths = pipeline["paths"]
    finrag, embedder = FinragResource(), EmbedderResource()
    assert finrag.tantivy().count("AAPL-2024-10K") == leaves
    assert finrag.lance(embedder.get()).count("AAPL-2024-10K") == leaves
    # QA sets and both evaluation scopes
    assert _count(wh, "SELECT count(*) FROM qa.items WHERE filing_id = 'AAPL-2024-10K'") >= 24
    scopes = wh.query_df("SELECT DISTINCT scope FROM eval.retrieval_results")["scope"].tolist()
    assert sorted(scopes) == ["corpus", "filing"]
    # marts, snapshot and report
    board = wh.query_df("SELECT * FROM marts.mart_retriever_leaderboard")
    assert len(board) > 0
    assert paths.warehouse_snapshot.exists()
    assert (paths.reports_dir / "finrag_report.html").stat().st_size > 10_000
    # what the runs printed (dbt's log lines) went to FINRAG_HOME/logs, dbt's artifacts to dbt_target/
    assert "PASS" in (paths.logs_dir / "build_marts.log").read_text()
    assert (paths.home / "dbt_target" / "run_results.json").exists()
    assert (paths.home / "dbt_target" / "dbt.log").exists()


def test_rerunning_an_asset_is_idempotent(pipeline):
    defs, instance, wh = pipeline["defs"], pipeline["instance"], pipeline["wh"]
    before = {t: _count(wh, f"SELECT count(*) FROM {t}") for t in
              ("core.pages", "core.table_rows", "core.xbrl_facts", "core.chunks", "qa.items", "eval.retrieval_results")}
    ids_before = set(wh.query_df("SELECT chunk_id FROM core.chunks WHERE filing_id = 'AAPL-2024-10K'")["chunk_id"])
    result = defs.resolve_job_def("ingest_filing").execute_in_process(instance=instance, partition_key="AAPL-2024-10K")
    assert result.success
    result = defs.resolve_job_def("evaluate_filing").execute_in_process(instance=instance, partition_key="AAPL-2024-10K")
    assert result.success
    after = {t: _count(wh, f"SELECT count(*) FROM {t}") for t in before}
    assert after == before
    assert set(wh.query_df("SELECT chunk_id FROM core.chunks WHERE filing_id = 'AAPL-2024-10K'")["chunk_id"]) == ids_before


# ---------------------------------------------------------------------------------------------
# A new 10-K lands in the inbox: the sensor registers it, automation re-evaluates everything.


def _run_automation_until_quiet(pipeline, cursor=None):
    return run_automation_until_quiet(pipeline["defs"], pipeline["instance"], cursor)


def _tick_inbox(pipeline, cursor=None) -> dg.SensorResult:
    return tick_inbox_sensor(pipeline["instance"], cursor)


def test_new_filing_in_inbox_reevaluates_every_qa_set(pipeline):
    paths, wh, instance = pipeline["paths"], pipeline["wh"], pipeline["instance"]
    _requested, auto_cursor = _run_automation_until_quiet(pipeline)  # settle: the daemon's first ticks
    old_state = wh.query_df("SELECT DISTINCT corpus_state FROM eval.retrieval_results")["corpus_state"].tolist()

    shutil.copy(DATA / "aapl-10-k-2025-10-31.html", paths.inbox)
    result = _tick_inbox(pipeline)
    assert [r.partition_key for r in result.run_requests] == ["AAPL-2025-10K"]
    assert result.dynamic_partitions_requests[0].partition_keys == ["AAPL-2025-10K"]
    assert not any(paths.inbox.iterdir())  # the file left the inbox
    assert all(run.success for run in execute_sensor_result(pipeline["defs"], instance, result))

    requested, auto_cursor = _run_automation_until_quiet(pipeline, auto_cursor)
    # the corpus changed, so every filing's evaluation re-ran, then the marts, snapshot and report
    assert ("corpus_state", None) in requested
    for fid in ("AAPL-2022-10K", "AAPL-2024-10K", "AAPL-2025-10K"):
        assert ("retrieval_eval", fid) in requested
    assert ("marts/mart_retriever_leaderboard", None) in requested and ("eval_report", None) in requested

    new = "AAPL-2025-10K"
    assert _count(wh, "SELECT count(*) FROM core.chunks WHERE filing_id = ?", [new]) > 300
    assert _count(wh, "SELECT count(*) FROM qa.items WHERE filing_id = ?", [new]) >= 24
    assert _count(wh, "SELECT count(*) FROM eval.retrieval_results WHERE filing_id = ?", [new]) > 0
    assert FinragResource().tantivy().count(new) == _count(
        wh, "SELECT count(*) FROM core.chunks WHERE filing_id = ? AND is_leaf", [new])
    # the older filings' whole-corpus results were recomputed against the grown corpus (history kept)
    for fid in ("AAPL-2022-10K", "AAPL-2024-10K"):
        states = wh.query_df("SELECT DISTINCT corpus_state, n_filings_in_corpus FROM eval.retrieval_results "
                             "WHERE filing_id = ? AND scope = 'corpus'", [fid])
        assert set(states["n_filings_in_corpus"]) == {2, 3}
        assert set(old_state) < set(states["corpus_state"])
    # the marts include the new filing
    years = wh.query_df("SELECT DISTINCT fiscal_year FROM marts.mart_metrics_by_fiscal_year")["fiscal_year"]
    assert 2025 in set(years.astype(int))
    pipeline["inbox_cursor"] = result.cursor
    pipeline["auto_cursor"] = auto_cursor


def test_same_file_again_changes_nothing_and_garbage_is_quarantined(pipeline):
    paths, wh = pipeline["paths"], pipeline["wh"]
    counts = {t: _count(wh, f"SELECT count(*) FROM {t}") for t in ("core.filings", "core.chunks", "qa.items",
                                                                     "eval.retrieval_results")}
    shutil.copy(DATA / "aapl-10-k-2025-10-31.html", paths.inbox / "copy-of-apple.html")
    (paths.inbox / "notes.html").write_text("<html><body><h1>Lunch menu</h1><p>Soup.</p></body></html>")
    result = _tick_inbox(pipeline, pipeline["inbox_cursor"])
    assert result.run_requests == []
    assert {o.metadata["status"].value for o in result.asset_events} == {"not_a_filing"}
    reason = paths.quarantine / "notes.html.reason.txt"
    assert "not_a_filing" in reason.read_text() and (paths.quarantine / "notes.html").exists()
    assert (paths.home / "processed" / "duplicates" / "copy-of-apple.html").exists()
    log = wh.query_df("SELECT original_name, status FROM core.ingest_log WHERE original_name IN "
                      "('copy-of-apple.html', 'notes.html')")
    assert set(map(tuple, log.values.tolist())) == {("copy-of-apple.html", "duplicate"), ("notes.html", "not_a_filing")}
    requested, _ = _run_automation_until_quiet(pipeline, pipeline["auto_cursor"])
    assert requested == []
    assert {t: _count(wh, f"SELECT count(*) FROM {t}") for t in counts} == counts


def test_sensor_cursor_survives_a_restart(pipeline):
    """A restarted sensor (same cursor, fresh context) neither re-runs handled files nor misses new ones."""
    paths = pipeline["paths"]
    cursor = pipeline["inbox_cursor"]
    assert _tick_inbox(pipeline, cursor).run_requests == []          # nothing pending: nothing requested
    # A crash after registration but before the cursor was saved: the file is back in the inbox and the old
    # cursor is used. Registration says duplicate and no second run is requested.
    shutil.copy(DATA / "aapl-10-k-2025-10-31.html", paths.inbox)
    again = _tick_inbox(pipeline, cursor)
    assert again.run_requests == []
    handled = InboxCursor.from_json(again.cursor).handled
    assert any(sha.startswith("548ae59778cf08ee") and status == "duplicate" for sha, status in handled.items())
