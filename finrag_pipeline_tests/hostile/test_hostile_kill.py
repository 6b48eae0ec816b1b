"""kill -9 in the middle of a real `finrag ingest` subprocess, then a re-run: the killed Dagster run is
marked failed (here by the inbox sensor's tick; the CLI does the same at its start, test_hostile_runs.py),
the half-indexed filing is found incomplete by its counts and repaired, and nothing is duplicated."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from _hostile import PDF_EXCERPT, assert_no_duplicate_rows

from finrag_pipeline.core.completion import check_filings
from finrag_pipeline.core.paths import REPO_ROOT, FinragPaths
from finrag_pipeline.core.storage.seam import LocalStorage
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]
FID = "AAPL-2022-10K"


def _cli(home, *args) -> list[str]:
    return [sys.executable, "-m", "finrag_pipeline.cli", "--home", str(home), *args]


def _env(home) -> dict[str, str]:
    env = dict(os.environ, FINRAG_HOME=str(home), DAGSTER_HOME=str(home / "dagster_home"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return env


def test_kill_9_mid_ingest_then_rerun_repairs(sandbox):
    import dagster as dg

    shutil.copy(PDF_EXCERPT, sandbox.src / "apple.pdf")
    sandbox.freeze()
    home = sandbox.home
    proc = subprocess.Popen(_cli(home, "ingest", "--no-eval", str(sandbox.src / "apple.pdf")), env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    # Kill it as soon as the BM25 partition is committed: the vector index and the QA set are still to come.
    deadline = time.monotonic() + 240
    instance = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (home / "dagster_home" / "dagster.yaml").exists():
                instance = instance or dg.DagsterInstance.from_config(str(home / "dagster_home"))
                if FID in instance.get_materialized_partitions(dg.AssetKey("bm25_index")):
                    break
            time.sleep(0.1)
        assert proc.poll() is None, "the ingest finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    paths = FinragPaths.from_env(str(home))
    wh = Warehouse(paths.warehouse)
    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    killed = [r for r in instance.get_runs() if r.job_name == "ingest_filing"]
    assert [r.status for r in killed] == [dg.DagsterRunStatus.STARTED]        # what Dagster believes
    before = check_filings(wh, LocalStorage(paths), [FID])[FID]
    assert not before.complete or FID not in instance.get_materialized_partitions(dg.AssetKey("qa_set"))

    # The inbox sensor (what the daemon runs every 30 s) sees the same: it fails the dead run and asks for one
    # repair run of the filing, keyed by its version (the daemon launches one run per run key: no retry loop).
    from _dagster_driver import tick_inbox_sensor

    mp = pytest.MonkeyPatch()
    mp.setenv("FINRAG_HOME", str(home))
    try:
        tick = tick_inbox_sensor(instance)
        assert instance.get_run_by_id(killed[0].run_id).status == dg.DagsterRunStatus.FAILURE
        assert [(r.partition_key, r.run_key) for r in tick.run_requests] == [
            (FID, f"repair:{FID}:{wh.query_df('SELECT content_sha256 FROM core.filings').iloc[0, 0][:16]}")]
    finally:
        mp.undo()

    rerun = subprocess.run(_cli(home, "ingest", "--no-eval", str(sandbox.src / "apple.pdf")), env=_env(home),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert f"{FID} is not completely ingested" in rerun.stdout and "apple.pdf: duplicate" in rerun.stdout
    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    assert instance.get_run_by_id(killed[0].run_id).status == dg.DagsterRunStatus.FAILURE
    after = check_filings(wh, LocalStorage(paths), [FID])[FID]
    assert after.complete and after.tantivy_docs == after.lance_rows == after.leaf_chunks > 0
    assert FID in instance.get_materialized_partitions(dg.AssetKey("qa_set"))
    assert_no_duplicate_rows(wh)
    sandbox.assert_nothing_outside()
