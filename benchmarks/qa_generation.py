"""Seconds to generate and filter the model-free QA set per sample filing.

    .venv/bin/python benchmarks/qa_generation.py [--ingest] [--no-dedup]

Parsing and chunking are timed separately (they belong to other stages); the numbers reported
here are generation, filtering (MiniLM dedup included unless --no-dedup) and their total.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "finrag_pipeline_tests"))

from _qa_sample import ALL_SAMPLES, PDF_SAMPLES, load_sample  # noqa: E402

from finrag_pipeline.core.qa import QAConfig  # noqa: E402
from finrag_pipeline.core.qa.filters import apply_filters, minilm_embedder  # noqa: E402
from finrag_pipeline.core.qa.model_free import generate_model_free  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", action="store_true", help="parse with core.ingest (all samples, slower)")
    ap.add_argument("--no-dedup", action="store_true")
    args = ap.parse_args()
    config = QAConfig()
    config.filters.dedup.enabled = not args.no_dedup
    t = time.perf_counter()
    embedder = None if args.no_dedup else minilm_embedder()
    print(f"MiniLM load (once per process): {time.perf_counter() - t:.1f}s")
    names = ALL_SAMPLES if args.ingest else [f"{n}.pdf" for n in PDF_SAMPLES]
    print(f"{'filing':32} {'rows':>5} {'chunks':>6} {'gen_s':>6} {'filter_s':>8} {'total_s':>7} {'kept':>5}  types")
    for name in names:
        t0 = time.perf_counter()
        s = load_sample(name, use_ingest=args.ingest)
        prep = time.perf_counter() - t0
        t1 = time.perf_counter()
        items, _ = generate_model_free(s.meta, s.pages, s.table_rows, s.facts, s.chunks, config)
        t2 = time.perf_counter()
        kept, _ = apply_filters(items, s.pages, s.chunks, config.filters, embedder)
        t3 = time.perf_counter()
        types = dict(Counter(i.question_type for i in kept))
        print(f"{name:32} {len(s.table_rows):5} {len(s.chunks):6} {t2 - t1:6.2f} {t3 - t2:8.2f} {t3 - t1:7.2f} "
              f"{len(kept):5}  {types}  (parse+chunk {prep:.1f}s)")


if __name__ == "__main__":
    main()
