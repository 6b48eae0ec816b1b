"""Runs whose process died: marked failed at the next start (CLI) or sensor tick, never left STARTED."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def _run(instance, token: str | None, status):
    import dagster as dg

    run = dg.DagsterRun(job_name="ingest_filing", status=status,
                        tags={"dagster/partition": "AAPL-2022-10K"} | ({"finrag/process": token} if token else {}))
    return instance.add_run(run)


def test_runs_of_dead_processes_are_failed_and_live_ones_are_left_alone():
    import dagster as dg

    from finrag_pipeline.defs.run_health import fail_dead_runs, process_token

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead_token = process_token(child.pid)
    child.kill()
    child.wait()
    instance = dg.DagsterInstance.ephemeral()
    dead = _run(instance, dead_token, dg.DagsterRunStatus.STARTED)
    live = _run(instance, process_token(), dg.DagsterRunStatus.STARTED)          # this very process
    reused = _run(instance, process_token().rsplit(":", 1)[0] + ":1", dg.DagsterRunStatus.STARTED)  # pid reused
    foreign = _run(instance, "another-host:1:1", dg.DagsterRunStatus.STARTED)
    daemon = _run(instance, None, dg.DagsterRunStatus.STARTED)                  # left to run monitoring

    failed = dict(fail_dead_runs(instance))
    assert set(failed) == {dead.run_id, reused.run_id}
    assert f"process {child.pid} died" in failed[dead.run_id]
    status = {r: instance.get_run_by_id(r).status for r in (dead.run_id, live.run_id, reused.run_id,
                                                          foreign.run_id, daemon.run_id)}
    assert status == {dead.run_id: dg.DagsterRunStatus.FAILURE, live.run_id: dg.DagsterRunStatus.STARTED,
                      reused.run_id: dg.DagsterRunStatus.FAILURE, foreign.run_id: dg.DagsterRunStatus.STARTED,
                      daemon.run_id: dg.DagsterRunStatus.STARTED}
    assert fail_dead_runs(instance) == []                                        # once only
