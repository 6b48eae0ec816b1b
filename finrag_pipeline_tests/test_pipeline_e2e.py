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

from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR, FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

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
        ran = {check for _asset, check, partition, _ok in report.checks if partition == fid}
        assert {"pages_have_text", "chunks_are_well_formed", "facts_have_units_and_periods",
                "bm25_index_rows_equal_leaf_chunks", "vector_index_rows_equal_leaf_chunks"} <= ran
    assert sum(1 for _a, _c, partition, _ok in report.checks if partition is None) > 20

    # what ingest wrote, checked against the filings
    apple22 = wh.query_df("SELECT * FROM core.table_rows WHERE filing_id = 'AAPL-2022-10K' AND row_label = 'Total net sales'")
    assert len(apple22) >= 1 and "394,328" in apple22.iloc[0]["cells"]
    assert _count(wh, "SELECT count(*) FROM core.xbrl_facts WHERE filing_id = 'AAPL-2024-10K'") > 900
    leaves = _count(wh, "SELECT count(*) FROM core.chunks WHERE filing_id = 'AAPL-2024-10K' AND is_leaf")
    paths = pipeline["paths"]
    from finrag_pipeline.defs.resources import _lance, _tantivy, _embedder
    assert _tantivy(str(paths.tantivy_dir)).count("AAPL-2024-10K") == leaves
    assert _lance(str(paths.lancedb_dir), _embedder("", "", "")).count("AAPL-2024-10K") == leaves
    # QA sets and both evaluation scopes
    assert _count(wh, "SELECT count(*) FROM qa.items WHERE filing_id = 'AAPL-2024-10K'") >= 24
    scopes = wh.query_df("SELECT DISTINCT scope FROM eval.retrieval_results")["scope"].tolist()
    assert sorted(scopes) == ["corpus", "filing"]
    # marts, snapshot and report
    board = wh.query_df("SELECT * FROM marts.mart_retriever_leaderboard")
    assert len(board) > 0
    assert paths.warehouse_snapshot.exists()
    assert (paths.reports_dir / "finrag_report.html").stat().st_size > 10_000


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
