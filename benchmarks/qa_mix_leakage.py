"""Phrasing leakage (core/qa/leakage.py) of the model-free set before (pre-mix caps, lexicon aliases)
and after (qa.yaml mix + phrasing.yaml words), on five sample filings. Run: python benchmarks/qa_mix_leakage.py"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "finrag_pipeline_tests"))
from collections import Counter, defaultdict
from statistics import mean

from _qa_sample import load_sample

from finrag_pipeline.core.qa import QAConfig
from finrag_pipeline.core.qa.leakage import annotate_leakage
from finrag_pipeline.core.qa.model_free import generate_model_free

BEFORE = QAConfig.model_validate({"model_free": {"use_lexicon": True, "use_phrasing": False}, "max_questions_per_type": {
    "metric": 0, "narrative": 0, "factual": 20, "numerical": 10, "comparative": 8, "temporal": 6, "multi-page": 6,
    "unanswerable": 6}})
AFTER = QAConfig()
for label, cfg in (("before", BEFORE), ("after", AFTER)):
    bands, scores, by_type = Counter(), [], defaultdict(list)
    for name in ["APPLE_2022_10K", "MICROSOFT_2022_10K", "AMAZON_2022_10K", "BOEING_2021_10K", "aapl-10-k-2024-11-01.html"]:
        s = load_sample(name)
        items, _ = generate_model_free(s.meta, s.pages, s.table_rows, s.facts, s.chunks, cfg)
        for i in annotate_leakage(items, s.chunks, s.pages):
            lk = i.metadata["leakage"]
            bands[lk.get("band") or "n/a"] += 1
            if lk.get("score") is not None:
                scores.append(lk["score"])
                by_type[i.question_type].append(lk["score"])
    n = sum(bands.values())
    print(f"{label}: {n} items, mean leakage {mean(scores):.3f}, bands " +
          ", ".join(f"{b} {bands[b]} ({bands[b]/n:.0%})" for b in ("low", "medium", "high", "n/a")))
    print("   by type: " + ", ".join(f"{t} {mean(v):.2f} (n={len(v)})" for t, v in sorted(by_type.items())))
