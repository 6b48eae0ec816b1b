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
