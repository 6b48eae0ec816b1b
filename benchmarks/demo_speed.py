"""Where `make demo` spends its time, and old vs new for the levers changed to bring it under 5 minutes.

Sub-commands (each prints its own figures; old and new run in the same process, interleaved, so a
shared machine's load hits both alike):

    # step durations summed over the runs of a finished demo's Dagster instance
    python benchmarks/demo_speed.py steps --home /tmp/some-demo-home

    # evaluation: a new FinragSession per evaluation asset (before) vs the process-shared session
    # (FinragSession.shared, after), on a copy of a finished demo home; result rows must be identical
    python benchmarks/demo_speed.py eval --home /tmp/copy-of-demo-home [--filings 4]

The whole `make demo` is timed by the integrator on an idle machine (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# columns that legitimately differ between two runs of the same evaluation
_VOLATILE = {"latency_ms", "evaluated_at", "dagster_run_id", "started_at", "finished_at"}


def steps(home: Path) -> None:
    """Seconds per Dagster step (summed over runs) and per job, from the instance's run records."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(home / "dagster_home"))
    per_step: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()
    per_job: dict[str, float] = collections.defaultdict(float)
    runs = instance.get_runs()
    for run in runs:
        stats = instance.get_run_stats(run.run_id)
        if stats.start_time and stats.end_time:
            per_job[run.job_name] += stats.end_time - stats.start_time
        for s in instance.get_run_step_stats(run.run_id):
            if s.start_time and s.end_time:
                per_step[s.step_key] += s.end_time - s.start_time
                count[s.step_key] += 1
    print(f"{len(runs)} runs\n\n| step | runs | seconds |\n|---|---|---|")
    for key, secs in sorted(per_step.items(), key=lambda kv: -kv[1]):
        print(f"| {key} | {count[key]} | {secs:.1f} |")
    print("\n| job | seconds |\n|---|---|")
    for job, secs in sorted(per_job.items(), key=lambda kv: -kv[1]):
        print(f"| {job} | {secs:.1f} |")


def _stable(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k not in _VOLATILE)) for r in rows)


def evaluation(home: Path, n_filings: int | None) -> None:
    """Both evaluation assets of each filing, the old way and the new way, interleaved per filing."""
    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.session import FinragSession

    os.environ["FINRAG_HOME"] = str(home)
    paths = FinragPaths.from_env(str(home)).ensure()
    fids = active_filings(FinragSession(paths).warehouse)[: n_filings or None]
    # warm the process as the demo's ingest does (imports, MiniLM, ONNX query model) for both sides alike
    FinragSession(paths).retriever("dense").search("warm-up", 1, None)
    # CPU seconds of this process (all its threads) next to wall seconds: on a machine shared with other
    # jobs the wall clock mostly measures their load, the CPU time the work done.
    totals = dict.fromkeys(("old_wall", "old_cpu", "new_wall", "new_cpu"), 0.0)
    print("| filing | old: new session per asset, wall s / CPU s | new: shared session, wall s / CPU s "
          "| rows identical |\n|---|---|---|---|")
    for fid in fids:
        w0, c0 = time.perf_counter(), time.process_time()
        old_r = FinragSession(paths).evaluate_retrieval(fid)[1]
        old_a = FinragSession(paths).evaluate_answers(fid)[1]
        w1, c1 = time.perf_counter(), time.process_time()
        new_r = FinragSession.shared(paths).evaluate_retrieval(fid)[1]
        new_a = FinragSession.shared(paths).evaluate_answers(fid)[1]
        w2, c2 = time.perf_counter(), time.process_time()
        same = _stable(old_r) == _stable(new_r) and _stable(old_a) == _stable(new_a)
        for key, value in (("old_wall", w1 - w0), ("old_cpu", c1 - c0), ("new_wall", w2 - w1), ("new_cpu", c2 - c1)):
            totals[key] += value
        print(f"| {fid} | {w1 - w0:.1f} / {c1 - c0:.1f} | {w2 - w1:.1f} / {c2 - c1:.1f} "
              f"| {'yes' if same else 'NO'} ({len(new_r)} + {len(new_a)} rows) |", flush=True)
    print(f"| **total** | **{totals['old_wall']:.1f} / {totals['old_cpu']:.1f}** "
          f"| **{totals['new_wall']:.1f} / {totals['new_cpu']:.1f}** | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("steps")
    p.add_argument("--home", type=Path, required=True)
    p = sub.add_parser("eval")
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--filings", type=int, default=None)
    args = parser.parse_args()
    if args.command == "steps":
        steps(args.home)
    elif args.command == "eval":
        evaluation(args.home, args.filings)


if __name__ == "__main__":
    main()
