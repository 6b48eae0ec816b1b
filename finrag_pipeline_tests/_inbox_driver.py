"""Files land in the inbox and the sensors do the rest, as the daemon would: one inbox tick, the ingest runs
it requests, then automation ticks until quiet (corpus state, evaluations, marts). The deployment mode
comes from FINRAG_DEPLOYMENT, so the same script drives local and distributed mode.

    python -m finrag_pipeline_tests._inbox_driver ingest FILE...     # through the inbox sensor
    python -m finrag_pipeline_tests._inbox_driver reingest FILING_ID  # one ingest_filing run, retried as
                                                                       # the run-retry daemon would

Needs FINRAG_HOME; prints one JSON line (seconds per stage, failures, run ids) last.
"""

import json
import shutil
import sys
import time

from finrag_pipeline.core.deployment import load_deployment
from finrag_pipeline.core.paths import FinragPaths


def _ingest(files: list[str]) -> dict:
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import get_instance
    from finrag_pipeline_tests._dagster_driver import (
        execute_sensor_result,
        run_automation_until_quiet,
        tick_inbox_sensor,
    )

    paths = FinragPaths.from_env().ensure()
    instance = get_instance(paths)
    # the automation sensor's first ticks on an empty instance: afterwards it reacts to what changes
    _settled, cursor = run_automation_until_quiet(defs, instance)
    for f in files:
        shutil.copy(f, paths.inbox)
    t0 = time.perf_counter()
    tick = tick_inbox_sensor(instance)
    runs = execute_sensor_result(defs, instance, tick)
    t1 = time.perf_counter()
    requested, _cursor = run_automation_until_quiet(defs, instance, cursor)
    t2 = time.perf_counter()
    return {"partitions": [r.partition_key for r in tick.run_requests],
            "ingest_failed": [r.run_id for r in runs if not r.success],
            "ingest_seconds": t1 - t0, "automation_seconds": t2 - t1, "automation_requested": requested}


def _reingest(filing_id: str) -> dict:
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import execute_job, get_instance
    from finrag_pipeline_tests._dagster_driver import retry_failed_run

    paths = FinragPaths.from_env().ensure()
    instance = get_instance(paths)
    retries = load_deployment().settings.run_retries
    result = execute_job(defs, "ingest_filing", instance, trigger="cli", partition_key=filing_id)
    runs = [(result.run_id, result.success)]
    while not result.success and len(runs) <= retries:
        result = retry_failed_run(defs, instance, result.run_id)
        runs.append((result.run_id, result.success))
    return {"runs": runs, "success": result.success}


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    summary = _ingest(args) if command == "ingest" else _reingest(args[0])
    summary["mode"] = load_deployment().mode
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
