"""Coordination overhead of distributed mode per partition: the same three filings through the inbox sensor
and automation (ingest, corpus state, evaluations, marts), once in local mode and once in distributed mode
(Postgres instance, Redis broker, two Celery workers, all started here), printed side by side.

    python benchmarks/distributed.py [--workers 2]
    python benchmarks/distributed.py --worker-logs worker-w1.log worker-w2.log   # per-step overhead only

Both runs read the same embedding cache (the tests' cache, warm after the distributed test ran), so the
difference is coordination (step dispatch through the broker, step setup in the worker, events in Postgres),
not embedding. The evaluation matrix is the integration test's smaller one. Runs are sequential; measure on
an idle machine when you can (the figure moves with load).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.deployment import load_deployment, require_services  # noqa: E402
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, REPO_ROOT  # noqa: E402
from finrag_pipeline.core.services import running_services  # noqa: E402
from finrag_pipeline_tests.test_distributed import EVAL_MATRIX, FILINGS  # noqa: E402

EMBEDDING_CACHE = REPO_ROOT / ".finrag" / "test-cache" / "embeddings.sqlite"


def run_driver(env: dict[str, str], log: Path) -> tuple[dict, float]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "finrag_pipeline_tests._inbox_driver", "ingest", *map(str, FILINGS)],
                         env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
                         check=True, timeout=3600).stdout
    wall = time.perf_counter() - t0
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1]), wall


TASK_DONE = re.compile(r"Task execute_plan\[(?P<task>[^\]]+)\] succeeded in (?P<seconds>[0-9.]+)s")
STEP_DONE = re.compile(r'STEP_SUCCESS - Finished execution of step "(?P<step>[^"]+)" in (?P<value>[0-9.]+)(?P<unit>ms|s)')


def worker_step_overheads(log_texts: list[str]) -> list[tuple[str, float, float]]:
    """(step, Celery task seconds, the step's own seconds) per executed step, from worker logs: the task
    time minus the step time is what the worker adds (loading the plan, the instance, resources, events)."""
    rows = []
    for text in log_texts:
        step = None
        for line in text.splitlines():
            if (m := STEP_DONE.search(line)) is not None:
                step = (m["step"], float(m["value"]) / (1000 if m["unit"] == "ms" else 1))
            elif (m := TASK_DONE.search(line)) is not None and step is not None:
                rows.append((step[0], float(m["seconds"]), step[1]))
                step = None
    return rows


def print_worker_overheads(paths: list[Path]) -> None:
    rows = worker_step_overheads([p.read_text(errors="replace") for p in paths])
    if not rows:
        raise SystemExit("no executed steps found in the worker logs")
    extra = sorted(task - own for _step, task, own in rows)
    ingest = [r for r in rows if not r[0].endswith(("_eval", "statistics")) and "mart" not in r[0]]
    print(f"{len(rows)} steps; worker-side overhead per step (task s - step s): median {statistics.median(extra):.2f}, "
          f"p90 {extra[int(0.9 * (len(extra) - 1))]:.2f}, mean {statistics.fmean(extra):.2f}")
    print(f"ingest steps: {len(ingest)}; mean overhead {statistics.fmean(t - o for _s, t, o in ingest):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-logs", nargs="*", type=Path,
                        help="only analyse these Celery worker logs (per-step overhead), run nothing")
    args = parser.parse_args()
    if args.worker_logs:
        print_worker_overheads(args.worker_logs)
        return
    tmp = Path(tempfile.mkdtemp(prefix="finrag-bench-distributed-"))
    config_dir = tmp / "config"
    shutil.copytree(ASSETS_CONFIG_DIR, config_dir)
    (config_dir / "eval_matrix.yaml").write_text(EVAL_MATRIX)
    base = {**os.environ, "FINRAG_CONFIG_DIR": str(config_dir), "PYTHONPATH": str(REPO_ROOT),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TOKENIZERS_PARALLELISM": "false", "FINRAG_EMBEDDING_CACHE": str(EMBEDDING_CACHE)}
    results = {}
    try:
        print("local mode ...", flush=True)
        results["local"] = run_driver({**base, "FINRAG_HOME": str(tmp / "local"), "FINRAG_DEPLOYMENT": "local"},
                                      tmp / "local.log")
        with running_services(s3=False) as svc:
            env = {**base, **svc.env, "FINRAG_HOME": str(tmp / "distributed"), "FINRAG_DEPLOYMENT": "distributed"}
            cfg = load_deployment(config_dir, env=env)
            require_services(cfg, env=env)
            for i in range(args.workers):
                svc.start_worker(f"w{i + 1}", cfg, extra_env=env)
            svc.wait_for_workers()
            print(f"distributed mode ({args.workers} Celery workers) ...", flush=True)
            results["distributed"] = run_driver(env, tmp / "distributed.log")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    n = len(FILINGS)
    rows = [("ingest (inbox tick + 3 ingest runs)", "ingest_seconds"),
            ("automation (corpus state, 3 x evaluation, marts)", "automation_seconds")]
    print(f"\n{'stage':<52}{'local s':>10}{'distributed s':>15}{'overhead s':>12}{'per partition s':>17}")
    for label, key in rows:
        lo, di = results["local"][0][key], results["distributed"][0][key]
        print(f"{label:<52}{lo:>10.1f}{di:>15.1f}{di - lo:>12.1f}{(di - lo) / n:>17.1f}")
    lo_wall, di_wall = results["local"][1], results["distributed"][1]
    print(f"{'driver wall clock (imports, automation settle)':<52}{lo_wall:>10.1f}{di_wall:>15.1f}"
          f"{di_wall - lo_wall:>12.1f}{(di_wall - lo_wall) / n:>17.1f}")


if __name__ == "__main__":
    main()
