"""Where `make demo` spends its time, and old vs new for the levers changed to bring it under 5 minutes.

Sub-commands (each prints its own figures; old and new run in the same process, interleaved, so a
shared machine's load hits both alike):

    # step durations summed over the runs of a finished demo's Dagster instance
    python benchmarks/demo_speed.py steps --home /tmp/some-demo-home

    # evaluation: a new FinragSession per evaluation asset (before) vs the process-shared session
    # (FinragSession.shared, after), on a copy of a finished demo home; result rows must be identical
    python benchmarks/demo_speed.py eval --home /tmp/copy-of-demo-home [--filings 4]

    # sanity_random (pool per question vs pool per scope) and the feature reranker (question parsed per
    # hit vs once), over every filing's questions in both scopes, on a finished demo home
    python benchmarks/demo_speed.py retrievers --home /tmp/some-demo-home

    # eval_statistics (leaderboard, paired comparisons, external agreement): the sign-flip test by
    # unpacked bits and a matrix product (before) vs byte tables (after); tables must be identical
    python benchmarks/demo_speed.py stats --home /tmp/some-demo-home


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


def retrievers(home: Path) -> None:
    """CPU seconds of the two retriever levers, old and new code on the same questions and hits."""
    import hashlib
    import random

    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.evaluation.runner import scope_filters
    from finrag_pipeline.core.models import filters_match
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.records import load_qa_items
    from finrag_pipeline.core.retrieval import rerank
    from finrag_pipeline.core.session import FinragSession

    os.environ["FINRAG_HOME"] = str(home)
    session = FinragSession(FinragPaths.from_env(str(home)).ensure())
    store = session.resources.get("chunk_store")
    searches = [(item.question, scope_filters(scope, fid))
                for fid in active_filings(session.warehouse)
                for item in load_qa_items(session.warehouse, fid) for scope in ("filing", "corpus")]

    def old_random(query, scope, k=10):  # the code before: every leaf filtered on every question
        pool = sorted((c for c in store.leaves() if filters_match(scope, filing_id=c.filing_id, ticker=c.ticker,
                                                               fiscal_year=c.fiscal_year, chunk_type=c.chunk_type)),
                      key=lambda c: c.chunk_id)
        key = hashlib.sha256(f"0\x1f{query}\x1f{scope}".encode()).hexdigest()
        return [c.chunk_id for c in random.Random(key).sample(pool, min(k, len(pool)))]

    new = session.retriever("sanity_random")
    c0 = time.process_time()
    old_ids = [old_random(q, f) for q, f in searches]
    c1 = time.process_time()
    new_ids = [[h.chunk_id for h in new.search(q, 10, f)] for q, f in searches]
    c2 = time.process_time()
    print(f"| sanity_random, {len(searches)} searches | {c1 - c0:.2f} | {c2 - c1:.2f} | "
          f"{'yes' if old_ids == new_ids else 'NO'} |")

    # feature reranker: the hits of hybrid_rrf (its base) for each search, scored old and new
    reranker = rerank.FeatureReranker(session.resources.get("lexicon"))
    base = session.retriever("hybrid_rrf")
    hit_lists = [(q, base.search(q, 50, f)) for q, f in searches[::2]]

    def clear():
        rerank._figures.cache_clear()
        rerank._asked_years.cache_clear()

    c0 = time.process_time()
    old_scores = []
    for q, hits in hit_lists:
        line_items = reranker.lexicon.line_items_for(q)
        quantitative = bool(line_items or rerank.figures_in(q) or rerank.QUANT_WORDS.search(q))
        row = []
        for h in hits:
            clear()  # no memo: each hit re-reads the question's years and figures and its own text, as before
            row.append(reranker.features(q, h, line_items, quantitative))
        old_scores.append(row)
    c1 = time.process_time()
    clear()
    new_scores = []
    for q, hits in hit_lists:
        line_items = reranker.lexicon.line_items_for(q)
        quantitative = bool(line_items or rerank.figures_in(q) or rerank.QUANT_WORDS.search(q))
        new_scores.append([reranker.features(q, h, line_items, quantitative) for h in hits])
    c2 = time.process_time()
    n = sum(len(h) for _q, h in hit_lists)
    print(f"| feature reranker features, {n} (question, hit) pairs | {c1 - c0:.2f} | {c2 - c1:.2f} | "
          f"{'yes' if old_scores == new_scores else 'NO'} |")


def marts_row_counts(home: Path) -> None:
    """The dbt step's row counts: one connection per model (before) vs one query (after)."""
    from finrag_pipeline.core.warehouse import Warehouse

    wh = Warehouse(home / "warehouse.duckdb")
    relations = [tuple(r) for r in wh.query_df(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema IN ('staging', 'marts') ORDER BY 1, 2").itertuples(index=False)]
    w0, c0 = time.perf_counter(), time.process_time()
    old = {r: int(wh.query_df(f'SELECT count(*) AS n FROM "{r[0]}"."{r[1]}"').iloc[0, 0]) for r in relations}
    w1, c1 = time.perf_counter(), time.process_time()
    sql = " UNION ALL ".join(f'SELECT {i} AS i, count(*) AS n FROM "{s}"."{t}"' for i, (s, t) in enumerate(relations))
    new = {relations[int(i)]: int(n) for i, n in wh.query_df(sql).itertuples(index=False)}
    w2, c2 = time.perf_counter(), time.process_time()
    print(f"| dbt step row counts, {len(relations)} relations (wall s) | {w1 - w0:.2f} ({c1 - c0:.2f} CPU) "
          f"| {w2 - w1:.2f} ({c2 - c1:.2f} CPU) | {'yes' if old == new else 'NO'} |")


def _sign_flip_unpacked(d, observed, n_perm, rng):
    """stats._sign_flip_extremes before the byte tables: every bit unpacked to a float, one matrix product."""
    import numpy as np

    n, total, extreme = len(d), float(d.sum()), 0
    block = max(1, 2_000_000 // n)
    for start in range(0, n_perm, block):
        rows = min(block, n_perm - start)
        bits = np.unpackbits(rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        means = np.abs((2.0 * (bits.astype(np.float64) @ d) - total) / n)
        extreme += int(np.sum(means >= observed - 1e-12))
    return extreme


def statistics(home: Path) -> None:
    """build_eval_statistics + build_external_agreement on a finished demo's warehouse, old then new."""
    from datetime import datetime

    from finrag_pipeline.core.evaluation import stats as stats_module
    from finrag_pipeline.core.evaluation.agreement import build_external_agreement
    from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics
    from finrag_pipeline.core.evaluation.runner import EvalMatrix
    from finrag_pipeline.core.warehouse import Warehouse

    matrix, wh = EvalMatrix.load(), Warehouse(home / "warehouse.duckdb")
    built_at = datetime(2026, 1, 1)  # the tables' build timestamp, the same for both sides
    new_flip = stats_module._sign_flip_extremes
    out = {}
    for label, flip in (("old", _sign_flip_unpacked), ("new", new_flip)):
        stats_module._sign_flip_extremes = flip
        w0, c0 = time.perf_counter(), time.process_time()
        result = build_eval_statistics(wh, matrix.stats, built_at=built_at)
        agreement, _ = build_external_agreement(wh, matrix.agreement, matrix.stats, built_at=built_at)
        out[label] = (time.perf_counter() - w0, time.process_time() - c0, result, agreement)
    stats_module._sign_flip_extremes = new_flip
    same = all(out["old"][2].__dict__[k].equals(out["new"][2].__dict__[k]) for k in out["old"][2].__dict__
               if hasattr(out["old"][2].__dict__[k], "equals")) and out["old"][3].equals(out["new"][3])
    print(f"| eval_statistics + external agreement ({len(out['new'][2].comparisons)} comparisons), wall s "
          f"| {out['old'][0]:.1f} ({out['old'][1]:.1f} CPU) | {out['new'][0]:.1f} ({out['new'][1]:.1f} CPU) "
          f"| {'yes' if same else 'NO'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("steps")
    p.add_argument("--home", type=Path, required=True)
    p = sub.add_parser("eval")
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--filings", type=int, default=None)
    p = sub.add_parser("retrievers")
    p.add_argument("--home", type=Path, required=True)
    p = sub.add_parser("stats")
    p.add_argument("--home", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "retrievers":
        print("| lever | old CPU s | new CPU s | same results |\n|---|---|---|---|")
        retrievers(args.home)
        marts_row_counts(args.home)
    elif args.command == "steps":
        steps(args.home)
    elif args.command == "stats":
        print("| lever | old | new | same results |\n|---|---|---|---|")
        statistics(args.home)
    elif args.command == "eval":
        evaluation(args.home, args.filings)


if __name__ == "__main__":
    main()
