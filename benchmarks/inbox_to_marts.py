"""Seconds from a 10-K dropped in the inbox to updated marts (no LLM), stage by stage.

    python benchmarks/inbox_to_marts.py [--base excerpt|sample] [--arrival PATH]

Two homes get the same base corpus first (not timed). Then, measured:
- automation: the file lands in the inbox; the inbox sensor ticks; its ingest run executes; the
  automation conditions are evaluated and what they request is executed until nothing more is requested
  (corpus state, every filing's evaluation, statistics, dbt marts, snapshot, report). This is the path
  `dagster dev` takes, minus the daemon's polling intervals (30 s for each sensor).
- baseline: the same arrival through `finrag ingest` (a direct, scripted chain of the same jobs).
Embedding caches are per home, so the arrival is embedded cold in both.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "finrag_pipeline_tests"))  # the daemon, driven by hand
for key, value in (("HF_HUB_OFFLINE", "1"), ("LITELLM_LOCAL_MODEL_COST_MAP", "True"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(key, value)
os.environ.pop("FINRAG_EMBEDDING_CACHE", None)

import dagster as dg  # noqa: E402

from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR, FinragPaths  # noqa: E402

ARRIVAL = REPO_ROOT / "finrag_pipeline_tests" / "data" / "aapl-10-k-2025-10-31.html"
EXCERPT = REPO_ROOT / "finrag_pipeline_tests" / "data" / "apple_2022_excerpt.pdf"


def prepare_home(base: str) -> tuple[FinragPaths, dg.DagsterInstance, object]:
    home = Path(tempfile.mkdtemp(prefix="finrag-bench-home-"))
    os.environ["FINRAG_HOME"] = str(home)
    from _dagster_driver import run_automation_until_quiet

    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    paths = FinragPaths.from_env(str(home)).ensure()
    instance = dg.DagsterInstance.ephemeral()
    corpus = [SAMPLE_FILINGS_DIR] if base == "sample" else [EXCERPT, SAMPLE_FILINGS_DIR / "aapl-10-k-2024-11-01.html"]
    run_pipeline(corpus, paths, instance, defs, progress=lambda _m: None)
    _, cursor = run_automation_until_quiet(defs, instance)  # settle, as the daemon's first ticks would
    return paths, instance, cursor


def via_automation(arrival: Path, base: str) -> dict[str, float]:
    from _dagster_driver import execute_sensor_result, run_automation_until_quiet, tick_inbox_sensor

    from finrag_pipeline.definitions import defs

    paths, instance, cursor = prepare_home(base)
    t0 = time.perf_counter()
    shutil.copy(arrival, paths.inbox)
    result = tick_inbox_sensor(instance)
    t1 = time.perf_counter()
    runs = execute_sensor_result(defs, instance, result)
    assert runs and all(r.success for r in runs), "ingest run failed"
    t2 = time.perf_counter()
    requested, _ = run_automation_until_quiet(defs, instance, cursor)
    t3 = time.perf_counter()
    assert ("marts/mart_retriever_leaderboard", None) in requested
    return {"sensor_tick": t1 - t0, "ingest_run": t2 - t1, "automation": t3 - t2, "total": t3 - t0}


def via_cli_ingest(arrival: Path, base: str) -> dict[str, float]:
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    paths, instance, _ = prepare_home(base)
    t0 = time.perf_counter()
    report = run_pipeline([arrival], paths, instance, defs, progress=lambda _m: None)
    assert not report.failed, report.failed
    return {**report.seconds, "total": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", choices=["excerpt", "sample"], default="excerpt",
                    help="base corpus: Apple FY2022 excerpt + Apple FY2024 HTML (default), or the whole sample")
    ap.add_argument("--arrival", type=Path, default=ARRIVAL)
    args = ap.parse_args()
    from finrag_pipeline.defs.marts.project import prepare_manifest

    prepare_manifest()  # the code location never parses dbt on import
    rows = [("inbox -> sensor -> automation -> marts", via_automation(args.arrival, args.base)),
            ("baseline: finrag ingest (scripted chain)", via_cli_ingest(args.arrival, args.base))]
    print(f"arrival: {args.arrival.name}; base corpus: {args.base}")
    for name, secs in rows:
        print(f"{name:45s} total {secs['total']:7.1f} s   " + "  ".join(
            f"{k} {v:.1f}" for k, v in secs.items() if k != "total"))


if __name__ == "__main__":
    main()
