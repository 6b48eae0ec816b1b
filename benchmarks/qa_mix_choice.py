"""The QA mix before and after choice questions (qa.yaml max_questions_per_type), with phrasing leakage per
type, on the five parsed sample filings (Apple 2022, Microsoft 2022, Amazon 2022, Boeing 2021, Apple 2024).
Model-free generation + filters (MiniLM dedup) + leakage, as the qa_set asset does.
Run: python benchmarks/qa_mix_choice.py"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "finrag_pipeline_tests"))
from collections import Counter, defaultdict
from statistics import mean

from _analyst_corpus import SAMPLES, parsed_samples

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.qa import QAConfig, generate_qa_set
from finrag_pipeline.core.qa.leakage import annotate_leakage

OLD_MIX = {"metric": 18, "choice": 0, "factual": 8, "numerical": 2, "comparative": 2, "temporal": 1,
           "multi-page": 1, "narrative": 9, "unanswerable": 5}
CONFIGS = {"before (no choice)": QAConfig.model_validate({"max_questions_per_type": OLD_MIX}),
           "after (qa.yaml)": QAConfig()}
parsed = parsed_samples()
chunks = {n: chunk_filing(p.meta, p.pages, p.table_rows) for n, p in parsed.items()}
for label, cfg in CONFIGS.items():
    counts, bands, by_type, t0 = Counter(), Counter(), defaultdict(list), time.perf_counter()
    for name in SAMPLES:
        p = parsed[name]
        result = generate_qa_set(p.meta, p.pages, p.table_rows, p.facts, chunks[name], cfg)
        for i in annotate_leakage(result.items, chunks[name], p.pages):
            counts[i.question_type] += 1
            lk = i.metadata["leakage"]
            bands[lk.get("band") or "n/a"] += 1
            if lk.get("score") is not None:
                by_type[i.question_type].append(lk["score"])
    n = sum(counts.values())
    scores = [s for v in by_type.values() for s in v]
    print(f"{label}: {n} items in {time.perf_counter() - t0:.1f} s, mean leakage {mean(scores):.3f}; bands "
          + ", ".join(f"{b} {bands[b]} ({bands[b] / n:.0%})" for b in ("low", "medium", "high", "n/a")))
    print("   by type: " + ", ".join(f"{t} {counts[t]} ({counts[t] / n:.0%}) leak {mean(by_type[t]) if by_type[t] else float('nan'):.2f}"
                                    for t in sorted(counts)))
