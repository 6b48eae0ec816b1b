"""Runs started from this process are runs of the code location's jobs (fast: a one-asset job)."""

import dagster as dg
import pytest

from finrag_pipeline.defs.local_runs import execute_job, repository_label, run_tags


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["AAPL-2022-10K", "MSFT-2022-10K"]))
def tiny(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partition": context.partition_key})


DEFS = dg.Definitions(assets=[tiny], jobs=[dg.define_asset_job("tiny_job", selection=[tiny])])


def test_a_run_carries_the_code_locations_origin_and_its_trigger():
    with dg.instance_for_test() as instance:
        result = execute_job(DEFS, "tiny_job", instance, trigger="inbox", partition_key="MSFT-2022-10K",
                             tags={"finrag/source_file": "msft.pdf"})
        assert result.success
        run = instance.get_run_by_id(result.run_id)
        assert run.job_name == "tiny_job"
        assert run.remote_job_origin.repository_origin.get_label() == repository_label() == "__repository__@finrag_pipeline"
        assert run.remote_job_origin.job_name == "tiny_job"
        assert {k: run.tags[k] for k in ("finrag/trigger", "finrag/filing", "finrag/source_file", "dagster/partition")} == {
            "finrag/trigger": "inbox", "finrag/filing": "MSFT-2022-10K", "finrag/source_file": "msft.pdf",
            "dagster/partition": "MSFT-2022-10K"}
        # stored with the repository label tag (added from the origin): the job page's filter finds it
        found = instance.get_runs(dg.RunsFilter(job_name="tiny_job", tags={".dagster/repository": repository_label()}))
        assert [r.run_id for r in found] == [result.run_id]
        # the instance's own method is back: a run created later without the helper has no origin
        assert "create_run_for_job" not in vars(instance)


def test_unknown_triggers_are_refused():
    assert run_tags("schedule", "AAPL-2022-10K") == {"finrag/trigger": "schedule", "finrag/filing": "AAPL-2022-10K"}
    assert run_tags("automation") == {"finrag/trigger": "automation"}
    with pytest.raises(ValueError, match="unknown trigger"):
        run_tags("manual")


def test_the_nightly_schedule_tags_each_run_schedule_and_its_filing(tmp_path, monkeypatch):
    import datetime as dt

    from _synthetic_warehouse import build_synthetic_warehouse

    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.defs.automation.schedules import nightly_reevaluation
    from finrag_pipeline.defs.resources import FinragResource

    monkeypatch.setenv("FINRAG_HOME", str(tmp_path))
    build_synthetic_warehouse(FinragPaths.from_env(str(tmp_path)).ensure().warehouse)
    context = dg.build_schedule_context(scheduled_execution_time=dt.datetime(2026, 11, 30, 3, 0))
    requests = nightly_reevaluation(context, finrag=FinragResource())
    assert [(r.partition_key, r.tags["finrag/trigger"], r.tags["finrag/filing"], r.run_key) for r in requests] == [
        ("AAPL-2022-10K", "schedule", "AAPL-2022-10K", "nightly:2026-11-30:AAPL-2022-10K"),
        ("MSFT-2022-10K", "schedule", "MSFT-2022-10K", "nightly:2026-11-30:MSFT-2022-10K")]


def test_an_inbox_tick_summary_names_every_outcome():
    from finrag_pipeline.core.catalog import Registration
    from finrag_pipeline.defs.automation.sensors import tick_summary

    outcomes = [("a.pdf", Registration("a.pdf", "1" * 64, "registered", "Apple 10-K FY2025", "AAPL-2025-10K")),
                ("b.htm", Registration("b.htm", "2" * 64, "updated", "new bytes", "MSFT-2024-10K")),
                ("c.pdf", Registration("c.pdf", "3" * 64, "duplicate", "same bytes as AAPL-2025-10K")),
                ("menu.html", Registration("menu.html", "4" * 64, "not_a_filing", "no 10-K cover")),
                ("scan.pdf", Registration("scan.pdf", "5" * 64, "scanned", "no text layer"))]
    assert tick_summary(outcomes) == (
        "2 registered (a.pdf -> AAPL-2025-10K, b.htm -> MSFT-2024-10K); 1 duplicate(s) (c.pdf); "
        "2 quarantined: menu.html [not_a_filing: no 10-K cover]; scan.pdf [scanned: no text layer]")
    assert tick_summary([]) == "0 registered; 0 duplicate(s); 0 quarantined"


def test_a_qa_set_change_is_a_runless_materialization_of_its_partitions():
    from finrag_pipeline.defs.local_runs import QA_SET_ASSET, report_qa_sets_changed
    from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, ["AAPL-2022-10K", "MSFT-2022-10K"])
        reported = report_qa_sets_changed(instance, ["MSFT-2022-10K", "AAPL-2022-10K", "MSFT-2022-10K",
                                                     "NFLX-2022-10K"], change="finrag qa import fb.jsonl")
        assert reported == ["AAPL-2022-10K", "MSFT-2022-10K"]   # once each; not a partition: skipped
        assert instance.get_materialized_partitions(QA_SET_ASSET) == {"AAPL-2022-10K", "MSFT-2022-10K"}
        record = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=QA_SET_ASSET, asset_partitions=["MSFT-2022-10K"]), limit=1).records[0]
        assert record.run_id == ""
        assert record.asset_materialization.metadata["change"].value == "finrag qa import fb.jsonl"
        assert record.asset_materialization.metadata["finrag/trigger"].value == "cli"
        with pytest.raises(ValueError, match="unknown trigger"):
            report_qa_sets_changed(instance, ["AAPL-2022-10K"], change="x", trigger="manual")


def test_a_worker_rebuilds_the_code_locations_job_from_the_public_reconstructable_pointer():
    """Distributed mode hands Celery workers ``reconstructable_job``'s pointer (dg.build_reconstructable_job):
    it must rebuild the named job of finrag_pipeline.definitions and subset it; the implicit asset job, which
    that pointer cannot name, is refused with the reason, and the tests' driver reaches it another way."""
    from _dagster_driver import code_location_recon_job

    from finrag_pipeline.defs.local_runs import IMPLICIT_ASSET_JOB, reconstructable_job

    recon = reconstructable_job("evaluate_filing")
    assert recon.get_definition().name == "evaluate_filing"
    origin = recon.get_python_origin()
    assert dg.deserialize_value(dg.serialize_value(origin)) == origin  # what travels to the worker
    subset = recon.get_subset(asset_selection={dg.AssetKey("retrieval_eval")})
    assert subset.get_definition().asset_selection == {dg.AssetKey("retrieval_eval")}
    with pytest.raises(ValueError, match="launched by the daemon"):
        reconstructable_job(IMPLICIT_ASSET_JOB)
    assert code_location_recon_job(IMPLICIT_ASSET_JOB).get_definition().name == IMPLICIT_ASSET_JOB
