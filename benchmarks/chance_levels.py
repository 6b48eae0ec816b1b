"""Benchmark: sanity_random against its chance levels on a built FINRAG_HOME (nothing is written).

    FINRAG_HOME=/path/to/home .venv/bin/python benchmarks/chance_levels.py [--seeds 1]

Evaluates only ``sanity_random`` on every filing's QA set, in both scopes and at every k of
eval_matrix.yaml, with the chance levels the pipeline records (core/retrieval/sanity.py ChanceLevels),
and prints per scope x k x metric: questions, the measured mean, the mean chance level, the 3-SE band,
and the measured mean over ``--seeds`` independent draws per question (a Monte-Carlo of sanity_random
itself: with two-page leaves the page formulas are an upper bound, docs/METRICS.md "Chance levels").
"""

from __future__ import annotations

import argparse
import math
import time

import pandas as pd

from finrag_pipeline.core.evaluation.runner import run_retrieval_eval
from finrag_pipeline.core.records import load_qa_items
from finrag_pipeline.core.retrieval.sanity import RandomRetriever
from finrag_pipeline.core.scoring.metric_registry import CHANCE_METRICS, SANITY_LIMITS, chance_column
from finrag_pipeline.core.session import FinragSession


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="independent draws per question (seed 0 = the pipeline's)")
    args = parser.parse_args()
    session = FinragSession.open()
    state = session.corpus_state()
    matrix = session.eval_matrix(retrievers=["sanity_random"], chunking=[None])
    store = session.resources.get("chunk_store")
    t0 = time.perf_counter()
    frames = []
    for seed in range(args.seeds):
        retriever = RandomRetriever(store, seed=seed)
        for filing_id in state.filing_ids:
            _, rows = run_retrieval_eval(load_qa_items(session.warehouse, filing_id), lambda n, c, rt=retriever: rt, matrix,
                                         None, filing_id, state.corpus_state, version="bench",
                                         chance_pool=session.chance_pool)
            frames.append(pd.DataFrame(rows).assign(seed=seed))
    seconds = time.perf_counter() - t0
    df = pd.concat(frames)
    df = df[df.status == "ok"]
    leaves = len(store.leaves())
    two_page = sum(c.page_end > c.page_start for c in store.leaves())
    print(f"{len(state.filing_ids)} filings, {leaves} leaves ({two_page / leaves:.1%} span two pages), "
          f"{args.seeds} draw(s) per question, {seconds:.1f} s")
    print("| scope | k | metric | questions | sanity_random (seed 0) | chance level | 3-SE band (1 draw) | "
          f"mean over {args.seeds} draw(s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (scope, k), group in df.groupby(["scope", "k"], sort=True):
        for metric in CHANCE_METRICS:
            g = group[group[metric].notna()]
            first = g[g.seed == 0]
            p = first[chance_column(metric)].astype(float)
            band = SANITY_LIMITS.chance_band_se * math.sqrt((p * (1 - p)).sum()) / len(first)
            print(f"| {scope} | {k} | {metric} | {len(first)} | {first[metric].mean():.3f} | {p.mean():.3f} | "
                  f"{band:.3f} | {g[metric].mean():.3f} |")


if __name__ == "__main__":
    main()
