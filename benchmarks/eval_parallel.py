"""`finrag eval` serially and with parallel workers on a copy of the demo home: wall seconds, rows compared.

    nice -n 10 python benchmarks/eval_parallel.py [--home .finrag] [--modes 1 2:processes 2:threads]
        [--retrievers bm25 dense ...] [--no-answers]

Each mode runs in a fresh process (cold: imports, model and indexes loaded by whoever evaluates) on the same
copy of the home, through ``evaluate_filings`` as `finrag eval` does (one evaluate_filing Dagster run per
filing; with workers, the rows computed first by the workers, then written by those runs). Default: every
active filing, the whole default matrix of eval_matrix.yaml and the answers. After each mode the
eval.runs / eval.retrieval_results / eval.answer_results rows of the evaluated filings, latencies and
timestamps aside, are compared with the first mode's: the script fails if they differ. The load average
(1 min) is printed before and after each mode: on a shared machine the seconds are under that load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# re-measured or recorded per run, not results: timings, the Dagster run, the checkout (git describe --dirty)
TIMING_COLUMNS = {"latency_ms", "evaluated_at", "started_at", "finished_at", "dagster_run_id", "code_version"}
TABLES = ("eval.runs", "eval.retrieval_results", "eval.answer_results")


def run_mode(workers: int, executor: str, narrowed: dict, answers: bool) -> dict:
    """In this process (FINRAG_HOME set by the parent): evaluate every active filing once."""
    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import evaluate_filings, get_instance

    paths = FinragPaths.from_env().ensure()
    fids = active_filings(Warehouse(paths.warehouse))
    t0 = time.perf_counter()
    results = evaluate_filings(defs, get_instance(paths), fids, trigger="cli", narrowed=narrowed, answers=answers,
                               workers=workers, executor=executor)
    return {"seconds": round(time.perf_counter() - t0, 1), "filings": fids,
            "failed": [f for f, r in results.items() if not r.success]}


def snapshot(home: Path, fids: list[str]) -> dict:
    from finrag_pipeline.core.warehouse import Warehouse

    wh = Warehouse(home / "warehouse.duckdb")
    marks = ",".join("?" * len(fids))
    out = {}
    for table in TABLES:
        df = wh.query_df(f"SELECT * FROM {table} WHERE filing_id IN ({marks})", fids)
        df = df.drop(columns=[c for c in df.columns if c in TIMING_COLUMNS])
        keys = [c for c in ("run_id", "qa_id", "config_name") if c in df.columns]
        out[table] = df.sort_values(keys).reset_index(drop=True)
    return out


def main() -> None:
    from finrag_pipeline.core.paths import REPO_ROOT

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=REPO_ROOT / ".finrag", help="a built demo home (copied, not written)")
    ap.add_argument("--modes", nargs="+", default=["1", "2:processes", "2:threads"],
                    help="WORKERS[:processes|threads]")
    ap.add_argument("--retrievers", nargs="*", help="narrow the matrix (default: eval_matrix.yaml's)")
    ap.add_argument("--no-answers", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    narrowed = {"retrievers": args.retrievers} if args.retrievers else {}
    if args.one:
        workers, _, executor = args.one.partition(":")
        print(json.dumps(run_mode(int(workers), executor or "processes", narrowed, not args.no_answers)), flush=True)
        return

    import pandas as pd

    tmp = Path(tempfile.mkdtemp(prefix="finrag-bench-evalpar-"))
    home = tmp / "home"
    home.mkdir()
    for name in ("warehouse.duckdb", "indexes", "filings", "cache"):
        src = args.home / name
        if src.exists():
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, home / name)
    env = {**os.environ, "FINRAG_HOME": str(home), "DAGSTER_HOME": str(home / "dagster_home"),
           "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           # one string-hash order for every mode and its workers: the calculator's answer to a few questions
           # depends on it (set order; two serial runs with PYTHONHASHSEED 1 and 2 differ the same way)
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cores, home copy {home}")
    print("| mode | filings | wall s | load avg before -> after | rows equal to the first mode |")
    print("|---|---|---|---|---|")
    first = None
    try:
        for mode in args.modes:
            before = os.getloadavg()[0]
            cmd = [sys.executable, __file__, "--one", mode, *(["--no-answers"] if args.no_answers else []),
                   *(["--retrievers", *args.retrievers] if args.retrievers else [])]
            out = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"mode {mode} failed:\n{out.stderr[-4000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            after = os.getloadavg()[0]
            os.environ["FINRAG_HOME"] = str(home)
            rows = snapshot(home, result["filings"])
            if first is None:
                first, same = rows, "(reference)"
            else:
                diffs = []
                for table in TABLES:
                    try:
                        pd.testing.assert_frame_equal(rows[table], first[table], check_dtype=False, obj=table)
                    except AssertionError as exc:
                        diffs.append(str(exc).splitlines()[0])
                same = ("NO: " + "; ".join(diffs)) if diffs else (
                    "yes (" + ", ".join(f"{len(rows[t])} {t.split('.')[1]}" for t in TABLES) + ")")
            print(f"| {mode} | {len(result['filings'])} | {result['seconds']} | {before:.1f} -> {after:.1f} | {same} |",
                  flush=True)
            if result["failed"]:
                print(f"  failed: {result['failed']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ncommand: {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
