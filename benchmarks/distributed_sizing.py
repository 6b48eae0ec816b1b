"""Ingest throughput of distributed mode with 1, 2, 4 ... Celery workers: pages/min and chunks/s, measured.

    nice -n 10 python benchmarks/distributed_sizing.py --workers 1 2 4 [--filings FILE ...] [--json out.json]

For each worker count: fresh services (PostgreSQL instance, Redis broker; no object store, FINRAG_HOME on
local disk as a shared filesystem would be), a fresh FINRAG_HOME and a cold embedding cache, N dagster-celery
workers of concurrency 1 (the deployment's recommendation: one step at a time per worker). The files go
through the inbox sensor; its ingest runs (parse, chunk, BM25 + vector index, QA set and their asset checks:
what a new filing costs before evaluation) are then executed concurrently, at most ``max(N, 2)`` runs at
once, as the daemon's queue would (deployment.yaml run_concurrency allows 4 inbox runs).

Before the clock starts every worker runs one small excerpt's ingest (not counted): a worker's first step
loads torch and the embedding model (12-15 s), a one-off per worker, not a per-filing cost.

Measured: wall clock from the first timed run's start to the last one's end; pages = ``core.pages`` rows,
chunks = leaf chunks (``core.chunks``), both counted in the warehouse afterwards. The load average is
sampled every 5 s while each configuration runs (min / mean / max printed): on a shared machine the figures
are under that load. The default files are six real 10-Ks of ``../shared/corpus/robustness2`` (84-121
pages, 635 in all): several filings, not one extrapolated.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, REPO_ROOT  # noqa: E402

CORPUS = REPO_ROOT.parent.parent / "shared" / "corpus" / "robustness2"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/corpus/robustness2")
DEFAULT_FILINGS = [CORPUS / name for name in (
    "APPLE_2015_10K.pdf", "FOOTLOCKER_2023_10K.pdf", "APPLE_2019_10K.pdf", "EBAY_2015_10K.pdf",
    "EBAY_2016_10K.pdf", "FOOTLOCKER_2022_10K.pdf")]
# one small excerpt per worker (four at most): other filings, so no two warm-up runs write one partition
WARMUP = [Path(REPO_ROOT) / "finrag_pipeline_tests" / "data" / name for name in (
    "apple_2022_excerpt.pdf", "pge_2020_excerpt.pdf", "walmart_2021_excerpt.pdf", "block_2017_excerpt.pdf")]


class LoadSampler:
    """os.getloadavg()[0] every ``every`` seconds while running."""

    def __init__(self, every: float = 5.0):
        self.every, self.samples = every, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        return {"min": round(min(self.samples), 2), "mean": round(sum(self.samples) / len(self.samples), 2),
                "max": round(max(self.samples), 2)}


# ---------------------------------------------------------------------------------------------
# The driver: one process per configuration (FINRAG_HOME and the services' URLs in its environment)


def drive(files: list[str], concurrent_runs: int, warmup_runs: int) -> dict:
    """Register ``files`` through the inbox sensor and execute its ingest runs, ``concurrent_runs`` at a time,
    each run in a process of its own (as the daemon's run launcher starts them; threads sharing one Dagster
    process hung here). Runs ``warmup_runs`` excerpt ingests first (not timed)."""
    from concurrent.futures import ThreadPoolExecutor

    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.defs.local_runs import get_instance
    from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME
    from finrag_pipeline_tests._dagster_driver import tick_inbox_sensor

    paths = FinragPaths.from_env().ensure()
    instance = get_instance(paths)

    def run(partition_key: str) -> tuple[str, bool, float, float]:
        t0 = time.time()
        out = subprocess.run([sys.executable, "-m", "finrag_pipeline_tests._inbox_driver", "reingest", partition_key],
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
        ok = out.returncode == 0 and bool(lines) and json.loads(lines[-1]).get("success", False)
        return partition_key, ok, t0, time.time()

    def register(batch: list[str]) -> list[str]:
        for f in batch:
            shutil.copy(f, paths.inbox)
        tick = tick_inbox_sensor(instance)
        for request in tick.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, list(request.partition_keys))
        return [r.partition_key for r in tick.run_requests]

    warm = []
    if warmup_runs:  # not timed, not counted: each worker's first step loads torch and the model
        warmups = register([str(f) for f in WARMUP[:warmup_runs]])
        with ThreadPoolExecutor(len(warmups)) as pool:
            warm = list(pool.map(run, warmups))
    warm_ids = {key for key, *_ in warm}
    t_register = time.time()
    requests = register(files)
    with ThreadPoolExecutor(concurrent_runs) as pool:
        runs = list(pool.map(run, requests))
    timed = [key for key, *_ in runs]
    wh = Warehouse(paths.warehouse)
    marks = ",".join("?" * len(timed))
    pages = int(wh.query_df(f"SELECT count(*) AS n FROM core.pages WHERE filing_id IN ({marks})", timed)["n"][0])
    chunks = int(wh.query_df(f"SELECT count(*) AS n FROM core.chunks WHERE is_leaf AND filing_id IN ({marks})",
                             timed)["n"][0])
    start, end = min(r[2] for r in runs), max(r[3] for r in runs)
    return {"filings": timed, "failed": [k for k, ok, *_ in runs if not ok], "warmup": sorted(warm_ids),
            "register_seconds": round(start - t_register, 2), "wall_seconds": round(end - start, 2),
            "run_seconds": {k: round(b - a, 1) for k, _ok, a, b in runs}, "pages": pages, "chunks": chunks}


# ---------------------------------------------------------------------------------------------


def measure(n_workers: int, files: list[Path], tmp: Path, base_env: dict[str, str]) -> dict:
    from finrag_pipeline.core.deployment import load_deployment, require_services
    from finrag_pipeline.core.services import running_services

    home = tmp / f"home-{n_workers}"
    with running_services(s3=False) as svc:
        env = {**base_env, **svc.env, "FINRAG_HOME": str(home), "DAGSTER_HOME": str(home / "dagster_home"),
               "FINRAG_DEPLOYMENT": "distributed"}
        cfg = load_deployment(Path(env["FINRAG_CONFIG_DIR"]), env=env)
        require_services(cfg, env=env)
        for i in range(n_workers):
            svc.start_worker(f"w{i + 1}", cfg, extra_env=env)
        svc.wait_for_workers(timeout=600)
        cmd = [sys.executable, __file__, "--drive", "--concurrent-runs", str(max(n_workers, 2)),
               "--warmup-runs", str(n_workers), *map(str, files)]
        t0 = time.time()
        with LoadSampler() as load:
            out = subprocess.run(cmd, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=(tmp / f"driver-{n_workers}.log").open("w"),
                                 text=True, timeout=4 * 3600)
        if out.returncode:
            raise SystemExit(f"driver for {n_workers} workers failed; log: {tmp / f'driver-{n_workers}.log'}")
        result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
        for name in list(svc.workers):
            log = svc.root / f"worker-{name}.log"
            if log.exists():
                shutil.copy(log, tmp / f"workers{n_workers}-{name}.log")
    minutes = result["wall_seconds"] / 60
    return {**result, "workers": n_workers, "load": load.summary(), "driver_seconds": round(time.time() - t0, 1),
            "pages_per_min": round(result["pages"] / minutes, 1),
            "chunks_per_s": round(result["chunks"] / result["wall_seconds"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("filings", nargs="*", type=Path, help="PDF/HTML 10-Ks (default: six of robustness2)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes and logs")
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--concurrent-runs", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--warmup-runs", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        print(json.dumps(drive([str(f) for f in args.filings], args.concurrent_runs, args.warmup_runs)), flush=True)
        return
    files = args.filings or DEFAULT_FILINGS
    missing = [str(f) for f in files if not Path(f).exists()]
    if missing:
        raise SystemExit(f"missing filings: {missing}")
    tmp = Path(tempfile.mkdtemp(prefix="finrag-bench-sizing-"))
    config_dir = tmp / "config"
    shutil.copytree(ASSETS_CONFIG_DIR, config_dir)
    base = {**os.environ, "FINRAG_CONFIG_DIR": str(config_dir), "PYTHONPATH": str(REPO_ROOT),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TOKENIZERS_PARALLELISM": "false"}
    base.pop("FINRAG_EMBEDDING_CACHE", None)  # cold: each configuration embeds every chunk
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"{len(files)} filings, logs in {tmp}", flush=True)
    results = []
    try:
        for n in args.workers:
            print(f"{n} worker(s) ...", flush=True)
            results.append(measure(n, files, tmp, base))
            r = results[-1]
            print(f"  {r['pages']} pages, {r['chunks']} chunks in {r['wall_seconds']:.0f} s: "
                  f"{r['pages_per_min']} pages/min, {r['chunks_per_s']} chunks/s; load {r['load']}; "
                  f"failed {r['failed']}", flush=True)
    finally:
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        if not args.keep:
            for child in tmp.glob("home-*"):
                shutil.rmtree(child, ignore_errors=True)
    print("\n| workers | filings | pages | chunks | wall s | pages/min | chunks/s | load avg min / mean / max |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        load = r["load"]
        print(f"| {r['workers']} | {len(r['filings'])} | {r['pages']} | {r['chunks']} | {r['wall_seconds']:.0f} | "
              f"{r['pages_per_min']} | {r['chunks_per_s']} | {load['min']} / {load['mean']} / {load['max']} |")
    print(f"\ncommand: {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
