"""Drop to report through the real Dagster daemon: one 10-K lands in the inbox of a copy of a demo home.

    python benchmarks/wave.py --demo-home /tmp/finrag-demo [--arrival PATH] [--before SRC] [--timeout 1800]

For each code tree measured (this one; with --before also an older tree, e.g. `git archive <commit> | tar -x
-C SRC`), the demo home is copied, `dagster-daemon run -w workspace.yaml` is started on the copy with that
tree's code location (sensors, automation sensors, run queue and run workers: what `make ui` runs minus the
webserver), the daemon's first ticks are let settle, and then the arrival is dropped into the inbox. Measured
from the drop:
- drop-to-report: seconds until the last eval_report materialization of the wave (when the daemon is quiet:
  no queued or running runs and every automation sensor has ticked since the last run ended);
- how many times each asset (partition) was materialized in the wave, how many runs ran, and the most that
  ran at once per pool.
The daemon is stopped (its process group, started here) at the end; the copies stay under --work.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ARRIVAL = REPO.parent / "shared" / "corpus" / "arrivals" / "aapl-10-k-2025-10-31.html"
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "TOKENIZERS_PARALLELISM": "false"}
DONE_STATUSES = ("SUCCESS", "FAILURE", "CANCELED")


def _env(source: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FINRAG_EMBEDDING_CACHE", "FINRAG_CONFIG_DIR")}
    return {**env, **ENV, "FINRAG_HOME": str(home), "DAGSTER_HOME": str(home / "dagster_home"),
            "PYTHONPATH": str(source)}


def _instance(home: Path):
    import dagster as dg

    return dg.DagsterInstance.from_config(str(home / "dagster_home"))


def _runs(instance, since: float):
    import dagster as dg

    return [r for r in instance.get_run_records(dg.RunsFilter(created_after=_dt(since)))]


def _dt(ts: float):
    from datetime import datetime

    return datetime.fromtimestamp(ts, tz=UTC)


def _materializations(instance, since: float) -> Counter:
    import dagster as dg

    counts: Counter = Counter()
    for key in instance.all_asset_keys():
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_timestamp=since), limit=1000).records
        for rec in records:
            counts[(key.to_user_string(), rec.partition_key)] += 1
    return counts


def _max_concurrent(runs) -> Counter:
    """The most runs of each pool that were running at the same moment."""
    events = []
    for rec in runs:
        if rec.start_time and rec.end_time:
            pool = rec.dagster_run.tags.get("finrag/pool", "-")
            events += [(rec.start_time, 1, pool), (rec.end_time, -1, pool)]
    running: Counter = Counter()
    peak: Counter = Counter()
    for _t, delta, pool in sorted(events, key=lambda e: (e[0], e[1])):
        running[pool] += delta
        peak[pool] = max(peak[pool], running[pool])
    return peak


def _timeline(instance, runs, t0: float) -> list[dict]:
    """Per run, seconds after the drop: created, process up (the run worker's "Started process" event),
    started (RUN_START: the code location is loaded), finished; and the run's steps with their durations."""
    import dagster as dg

    rows = []
    for rec in sorted(runs, key=lambda r: r.create_timestamp.timestamp()):
        run = rec.dagster_run
        events = instance.all_logs(run.run_id)
        process_up = next((e.timestamp for e in events if e.is_dagster_event
                           and e.dagster_event.event_type == dg.DagsterEventType.ENGINE_EVENT
                           and "Started process for run" in (e.message or "")), None)
        steps: dict[str, list[float]] = {}
        for e in events:
            if e.is_dagster_event and e.step_key and e.dagster_event.event_type in (
                    dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
                steps.setdefault(e.step_key, []).append(e.timestamp)
        rows.append({
            "job": run.job_name, "partition": run.tags.get("dagster/partition", ""),
            "pool": run.tags.get("finrag/pool", "-"), "status": run.status.value,
            "created": round(rec.create_timestamp.timestamp() - t0, 1),
            "process_up": round(process_up - t0, 1) if process_up else None,
            "started": round(rec.start_time - t0, 1) if rec.start_time else None,
            "finished": round(rec.end_time - t0, 1) if rec.end_time else None,
            "steps": {k: round(max(v) - min(v), 1) for k, v in steps.items()},
        })
    return rows


def _print_timeline(label: str, rows: list[dict]) -> None:
    print(f"\n[{label}] timeline, seconds after the drop (created / process up / started / finished):")
    for r in rows:
        steps = ", ".join(f"{k} {v}" for k, v in r["steps"].items())
        print(f"  {r['job']:<22} {r['partition']:<15} {r['pool']:<10} {r['created']!s:>7} {r['process_up']!s:>7} "
              f"{r['started']!s:>7} {r['finished']!s:>7}  {r['status']:<8} {steps}")


def measure(label: str, source: Path, demo_home: Path, arrival: Path, work: Path, timeout: float) -> dict:
    home = work / label / "home"
    if home.exists():
        shutil.rmtree(home)
    home.parent.mkdir(parents=True, exist_ok=True)
    print(f"[{label}] copying {demo_home} -> {home}", flush=True)
    shutil.copytree(demo_home, home, symlinks=True)
    shutil.rmtree(home / "dagster_home" / ".telemetry", ignore_errors=True)
    env = _env(source, home)
    # The tree under test writes its own dagster.yaml (run queue limits, or none in an older tree).
    subprocess.run([sys.executable, "-c", "from finrag_pipeline.core.paths import FinragPaths; p = FinragPaths.from_env().ensure(); from finrag_pipeline.core.deployment import prepare_instance; prepare_instance(p.dagster_home)"],
                   env=env, cwd=source, check=True)
    print(f"[{label}] dagster.yaml:\n" + (home / "dagster_home" / "dagster.yaml").read_text(), flush=True)

    log = (work / label / "daemon.log").open("w")
    daemon = subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                              cwd=source, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return _wave(label, daemon, home, arrival, timeout)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)  # the daemon we started, and its code server / run workers
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
        log.close()


def _wave(label: str, daemon, home: Path, arrival: Path, timeout: float) -> dict:
    os.environ["DAGSTER_HOME"] = str(home / "dagster_home")
    instance = _instance(home)
    started = time.time()
    # Settle: the daemon's sensors tick a few times (30 s intervals) and nothing runs: a built demo home needs
    # nothing (runs it starts anyway are reported, and left to finish before the drop).
    while True:
        assert daemon.poll() is None, "dagster-daemon exited; see daemon.log"
        busy = [r for r in _runs(instance, started) if r.dagster_run.status.value not in DONE_STATUSES]
        if time.time() - started > 75 and not busy:
            break
        time.sleep(3)
    settle_runs = _runs(instance, started)
    print(f"[{label}] settled after {time.time() - started:.0f} s ({len(settle_runs)} runs while settling)", flush=True)

    t0 = time.time()
    shutil.copy(arrival, home / "inbox" / arrival.name)
    print(f"[{label}] dropped {arrival.name} at {time.strftime('%H:%M:%S')}", flush=True)
    while time.time() - t0 < timeout:
        assert daemon.poll() is None, "dagster-daemon exited; see daemon.log"
        runs = _runs(instance, t0)
        busy = [r for r in runs if r.dagster_run.status.value not in DONE_STATUSES]
        last_end = max((r.end_time or 0 for r in runs), default=t0)
        # Quiet: something ran, nothing is queued or running, and no run started for 60 s (four ticks of the
        # automation sensors, two of the inbox sensor) since the last one ended.
        if runs and not busy and time.time() - last_end > 60:
            break
        time.sleep(3)
    else:
        print(f"[{label}] TIMEOUT after {timeout:.0f} s", flush=True)
    runs = _runs(instance, t0)
    counts = _materializations(instance, t0)
    import dagster as dg

    reports = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_report"), after_timestamp=t0), limit=100).records
    report_times = sorted(r.timestamp - t0 for r in reports)
    timeline = _timeline(instance, runs, t0)
    _print_timeline(label, timeline)
    return {
        "label": label,
        "timeline": timeline,
        "drop_to_last_report_s": round(report_times[-1], 1) if report_times else None,
        "drop_to_first_report_s": round(report_times[0], 1) if report_times else None,
        "reports": len(report_times),
        "runs": len(runs),
        "runs_by_status": dict(Counter(r.dagster_run.status.value for r in runs)),
        "runs_by_pool": dict(Counter(r.dagster_run.tags.get("finrag/pool", "-") for r in runs)),
        "max_concurrent_by_pool": dict(_max_concurrent(runs)),
        "materializations": {f"{a}[{p}]" if p else a: n for (a, p), n in sorted(counts.items(), key=lambda x: (x[0][0], x[0][1] or ""))},
    }


def _summary(counts: dict[str, int]) -> dict[str, str]:
    """Per asset: 'n' (one partition or unpartitioned) or 'n partitions, max m each'."""
    by_asset: dict[str, list[int]] = {}
    for name, n in counts.items():
        by_asset.setdefault(name.split("[")[0], []).append(n)
    return {a: (str(ns[0]) if len(ns) == 1 else f"{len(ns)} partitions x {min(ns)}-{max(ns)}")
            for a, ns in by_asset.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo-home", type=Path, required=True, help="a FINRAG_HOME built by `finrag demo` (copied, never changed)")
    ap.add_argument("--arrival", type=Path, default=DEFAULT_ARRIVAL)
    ap.add_argument("--before", type=Path, help="an older code tree to measure the same way, side by side")
    ap.add_argument("--work", type=Path, default=Path("/tmp/finrag-wave-bench"))
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json", type=Path, help="write the results here as well")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the daemon we started is stopped (finally)
    results = [measure("this-tree", REPO, args.demo_home, args.arrival, args.work, args.timeout)]
    if args.before:
        results.append(measure("before", args.before.resolve(), args.demo_home, args.arrival, args.work, args.timeout))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    names = [r["label"] for r in results]
    print(f"\narrival: {args.arrival.name}; demo home: {args.demo_home}")
    rows = [("drop to last report (s)", [r["drop_to_last_report_s"] for r in results]),
            ("drop to first report (s)", [r["drop_to_first_report_s"] for r in results]),
            ("reports built", [r["reports"] for r in results]),
            ("runs", [r["runs"] for r in results]),
            ("runs by pool", [r["runs_by_pool"] for r in results]),
            ("most runs at once, by pool", [r["max_concurrent_by_pool"] for r in results]),
            ("runs by status", [r["runs_by_status"] for r in results])]
    summaries = [_summary(r["materializations"]) for r in results]
    for asset in sorted(set().union(*summaries)):
        rows.append((f"materialized: {asset}", [s.get(asset, "0") for s in summaries]))
    width = max(len(n) for n, _ in rows)
    print(f"{'':{width}}  " + "  |  ".join(names))
    for name, values in rows:
        print(f"{name:{width}}  " + "  |  ".join(str(v) for v in values))
    if len(results) == 1:
        print("(before this change, measured live with `dagster dev`: 7.5 min drop to report, marts and snapshot "
              "built 5 times, the new filing evaluated twice, 9 evaluation runs at once; issue 17)")


if __name__ == "__main__":
    main()
