"""What the Dagster UI shows, asked the way the UI asks: the webserver's GraphQL API over the
workspace.yaml code location, on a persistent instance after the demo's jobs ran.

- every run belongs to a job of the code location (repository label tag and remote origin, which the
  job pages and the Overview timeline filter on), tagged with its trigger and filing;
- each filing's check results are recorded under its partition, so one filing's failure cannot hide
  behind another's pass;
- assets report dagster/row_count per filing beside the corpus total; dbt models carry their schema;
- an inbox tick that only quarantines a file says so.

Corpus: two 3-4 page excerpts of Apple's 10-Ks (FY2022 from test data, FY2021 cut from the sample PDF).
"""

import shutil
from pathlib import Path

import dagster as dg
import pypdfium2 as pdfium
import pytest
from _dagster_driver import tick_inbox_sensor

from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR, FinragPaths
from finrag_pipeline.defs.local_runs import (
    FILING_TAG,
    IMPLICIT_ASSET_JOB,
    TRIGGER_TAG,
    execute_job,
    get_instance,
    repository_label,
)

DATA = Path(__file__).parent / "data"
FILINGS = ("AAPL-2021-10K", "AAPL-2022-10K")
pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS_QUERY = """
query JobRuns($filter: RunsFilter!) {
  pipelineRunsOrError(filter: $filter) {
    __typename
    ... on Runs { results { runId pipelineName status tags { key value }
                            repositoryOrigin { repositoryName repositoryLocationName } } }
  }
}"""

CHECK_QUERY = """
query Checks($assetKey: AssetKeyInput!, $checkName: String!, $partition: String) {
  assetCheckExecutions(assetKey: $assetKey, checkName: $checkName, limit: 20, partition: $partition) {
    runId partition status evaluation { partition success }
  }
}"""


def _apple_2021_excerpt(folder: Path) -> Path:
    """Cover, Item 1A and the statement of operations (pages 1, 9, 32) of the sample FY2021 10-K."""
    source = pdfium.PdfDocument(str(SAMPLE_FILINGS_DIR / "APPLE_2021_10K.pdf"))
    dest = pdfium.PdfDocument.new()
    dest.import_pages(source, [0, 8, 31])
    out = folder / "apple_2021_excerpt.pdf"
    dest.save(str(out))
    return out


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    home = tmp_path_factory.mktemp("finrag_home")
    mp = pytest.MonkeyPatch()
    mp.setenv("FINRAG_HOME", str(home))
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copy(DATA / "apple_2022_excerpt.pdf", corpus)
    _apple_2021_excerpt(corpus)
    paths = FinragPaths.from_env(str(home)).ensure()
    instance = get_instance(paths)  # persistent, as `finrag demo` and `dagster dev` use it
    report = run_pipeline([corpus], paths, instance, defs, progress=lambda _msg: None, trigger="demo")
    assert report.failed == {}, report.failed

    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    # The webserver's own workspace: the code location of workspace.yaml in a gRPC server process.
    with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(REPO_ROOT / "workspace.yaml")])) as process:
        yield {"defs": defs, "instance": instance, "paths": paths, "report": report, "process": process}
    instance.dispose()
    mp.undo()


def _graphql(ui, query: str, variables: dict) -> dict:
    from dagster_graphql.test.utils import execute_dagster_graphql

    result = execute_dagster_graphql(ui["process"].create_request_context(), query, variables)
    assert not result.errors, result.errors
    return result.data


def _job_runs(ui, job: str) -> list[dict]:
    """The runs the job's page lists: its name and the repository label tag (PipelineRunsRoot.tsx)."""
    data = _graphql(ui, RUNS_QUERY, {"filter": {
        "pipelineName": job, "tags": [{"key": ".dagster/repository", "value": repository_label()}]}})
    return data["pipelineRunsOrError"]["results"]


def _tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def test_the_code_location_is_the_one_the_runs_name(ui):
    locations = ui["process"].create_request_context().code_location_names
    assert repository_label() == "__repository__@finrag_pipeline"
    assert locations == ["finrag_pipeline"]
    # automation runs through automation-condition sensors: the UI then shows no global "Auto-materializing"
    # switch (DaemonList.tsx renders it only when useAutoMaterializeSensors is false), so nothing claims
    # automation is off while the sensors run
    data = _graphql(ui, "query { instance { useAutoMaterializeSensors } }", {})
    assert data["instance"]["useAutoMaterializeSensors"] is True


def test_demo_runs_are_listed_on_their_job_pages_with_trigger_and_filing(ui):
    ingest = _job_runs(ui, "ingest_filing")
    assert sorted(_tags(r)[FILING_TAG] for r in ingest) == list(FILINGS)
    evaluate = _job_runs(ui, "evaluate_filing")
    assert sorted(_tags(r)[FILING_TAG] for r in evaluate) == list(FILINGS)
    for job, n in (("refresh_corpus_state", 1), ("build_marts", 1)):
        assert len(_job_runs(ui, job)) == n, job
    for run in ingest + evaluate:
        tags = _tags(run)
        assert tags[TRIGGER_TAG] == "demo" and run["status"] == "SUCCESS"
        assert tags["dagster/partition"] == tags[FILING_TAG]
        # the Overview timeline places a run by its repository origin
        assert run["repositoryOrigin"] == {"repositoryName": "__repository__",
                                           "repositoryLocationName": "finrag_pipeline"}
    # nothing the demo ran is outside the code location's jobs (GraphQL hides the .dagster/ tags: the
    # job-page filter above is what shows they carry the repository label)
    everything = _graphql(ui, RUNS_QUERY, {"filter": {}})["pipelineRunsOrError"]["results"]
    assert len(everything) == 6
    assert all(r["repositoryOrigin"]["repositoryLocationName"] == "finrag_pipeline" for r in everything)


def test_automation_runs_are_runs_of_the_asset_job_tagged_automation(ui):
    result = execute_job(ui["defs"], IMPLICIT_ASSET_JOB, ui["instance"], trigger="automation",
                         asset_selection=[dg.AssetKey("eval_report")])
    assert result.success
    runs = _job_runs(ui, IMPLICIT_ASSET_JOB)
    assert [_tags(r)[TRIGGER_TAG] for r in runs] == ["automation"]
    assert FILING_TAG not in _tags(runs[0])  # eval_report is not partitioned


def test_each_filings_checks_are_recorded_under_its_partition(ui):
    for asset, check in (("pages", "pages_have_text"), ("chunks", "chunks_are_well_formed"),
                         ("bm25_index", "bm25_index_rows_equal_leaf_chunks")):
        executions = _graphql(ui, CHECK_QUERY, {"assetKey": {"path": [asset]}, "checkName": check})[
            "assetCheckExecutions"]
        assert sorted(e["partition"] for e in executions) == list(FILINGS), (asset, check)
        assert all(e["evaluation"]["partition"] == e["partition"] and e["status"] == "SUCCEEDED"
                   for e in executions)
        for fid in FILINGS:  # the UI's per-partition view
            one = _graphql(ui, CHECK_QUERY, {"assetKey": {"path": [asset]}, "checkName": check,
                                             "partition": fid})["assetCheckExecutions"]
            assert [e["partition"] for e in one] == [fid]
    assert {partition for _a, _c, partition, _ok, _sev in ui["report"].checks if partition} == set(FILINGS)


def _latest(ui, asset: str, partition: str | None = None) -> dict:
    key = dg.AssetKey.from_user_string(asset)
    event = ui["instance"].get_latest_materialization_event(key) if partition is None else next(
        r.event_log_entry for r in ui["instance"].fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1).records)
    return event.asset_materialization.metadata


def test_row_counts_per_filing_and_for_the_corpus(ui):
    from finrag_pipeline.core.warehouse import Warehouse

    wh = Warehouse(ui["paths"].warehouse)
    for asset, table in (("pages", "core.pages"), ("chunks", "core.chunks"), ("qa_set", "qa.items")):
        totals = set()
        for fid in FILINGS:
            meta = _latest(ui, asset, fid)
            n = int(wh.query_df(f"SELECT count(*) FROM {table} WHERE filing_id = ?", [fid]).iloc[0, 0])
            assert meta["dagster/row_count"].value == n > 0, (asset, fid)
            totals.add(meta["rows_all_filings"].value)
        # the second filing's run saw both filings' rows
        assert max(totals) == int(wh.query_df(f"SELECT count(*) FROM {table}").iloc[0, 0])
    assert _latest(ui, "pages", "AAPL-2022-10K")["dagster/row_count"].value == 4
    assert _latest(ui, "corpus_state")["dagster/row_count"].value == 2


def test_dbt_models_carry_their_schema_and_row_count(ui):
    from finrag_pipeline.core.warehouse import Warehouse

    meta = _latest(ui, "marts/mart_retriever_leaderboard")
    wh = Warehouse(ui["paths"].warehouse)
    columns = wh.query_df("SELECT column_name FROM information_schema.columns WHERE table_schema = 'marts' "
                          "AND table_name = 'mart_retriever_leaderboard' ORDER BY ordinal_position")["column_name"]
    schema = {c.name: c for c in meta["dagster/column_schema"].value.columns}
    assert list(schema) == list(columns) and len(schema) > 60
    assert all(c.type for c in schema.values())
    assert "bootstrap" in schema["ndcg_page_boot_ci_low"].description
    assert schema["scope"].description.startswith("filing = the filing alone")
    n = int(wh.query_df("SELECT count(*) FROM marts.mart_retriever_leaderboard").iloc[0, 0])
    assert meta["dagster/row_count"].value == n > 0
    graph = ui["defs"].resolve_asset_graph()
    assert graph.get(dg.AssetKey(["staging", "stg_retrieval_results"])).group_name == "staging"
    assert graph.get(dg.AssetKey(["marts", "mart_retriever_leaderboard"])).group_name == "marts"


def test_eval_report_links_over_http_with_a_summary(ui):
    meta = _latest(ui, "eval_report")
    assert meta["report"].value.startswith("http://127.0.0.1:") and meta["report"].value.endswith("/finrag_report.html")
    summary = meta["best_per_scope_and_k"].value
    assert "| scope " in summary and "corpus" in summary and "filing" in summary


def test_an_inbox_tick_that_only_quarantines_says_what_it_did(ui):
    paths = ui["paths"]
    (paths.inbox / "menu.html").write_text("<html><body><h1>Lunch menu</h1><p>Soup.</p></body></html>")
    shutil.copy(DATA / "apple_2022_excerpt.pdf", paths.inbox / "again.pdf")
    result = tick_inbox_sensor(ui["instance"])
    assert result.run_requests == []
    reason = result.skip_reason.skip_message if hasattr(result.skip_reason, "skip_message") else str(result.skip_reason)
    assert reason.startswith("0 registered; 1 duplicate(s) (again.pdf); 1 quarantined: menu.html [not_a_filing")
    [observation] = result.asset_events
    assert observation.metadata["file"].value == "menu.html"
    assert observation.metadata["tick"].value == reason
    assert observation.metadata["dagster/row_count"].value == 1   # files held in quarantine
