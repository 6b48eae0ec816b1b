"""All-evidence page hit@5 and latency of hybrid_rrf vs statement routing vs ``decomposed`` on the metric
questions of the hand-written external set (finrag_pipeline_tests/data/external/analyst_questions.jsonl),
over the 8 sample filings, in the filing scope and the corpus scope.

    FINRAG_EMBEDDING_CACHE=/tmp/emb.sqlite HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/decomposed.py \
        [--index-dir /tmp/idx] [--categories metric] [--k 5]

A question counts as a hit when every evidence page (FinanceBench 0-indexed page + 1) is among the
pages of the top-k hits of the right filing. Latency: p50 and p95 of ``timings_ms["total"]`` per question (after
one warm-up pass of hybrid_rrf over the questions; reused query embeddings are counted at their cost).
Paired comparison with hybrid_rrf: exact McNemar test on the questions one finds and the other misses.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.models import SearchFilters  # noqa: E402
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR  # noqa: E402
from finrag_pipeline.core.retrieval import build_named_retrievers  # noqa: E402
from finrag_pipeline.core.retrieval.resources import build_resources_from_filings  # noqa: E402

EXTERNAL = Path(__file__).resolve().parents[1] / "finrag_pipeline_tests/data/external/analyst_questions.jsonl"
NAMES = ["hybrid_rrf", "hybrid_rrf_routed", "decomposed", "decomposed_routed"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index-dir", default="/tmp/finrag-wt-retrieval/bench-idx")
    ap.add_argument("--categories", nargs="*", default=["metric"])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--synthetic", nargs="*", default=None,
                    help="sample filings (stems) whose model-free synthetic questions to score instead")
    args = ap.parse_args()
    files = sorted(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.suffix in (".pdf", ".html"))
    t0 = time.perf_counter()
    resources = build_resources_from_filings(files, args.index_dir,
                                             embedding_cache=os.environ.get("FINRAG_EMBEDDING_CACHE"))
    print(f"indexed {len(files)} filings in {time.perf_counter() - t0:.0f}s", flush=True)
    doc_to_filing = {p.stem: f.filing_id for p, f in zip(files, resources.catalog.filings, strict=True)}
    if args.synthetic is not None:
        synthetic(resources, args.synthetic or ["APPLE_2022_10K", "MICROSOFT_2022_10K"], args.k)
        return
    questions = [json.loads(line) for line in EXTERNAL.read_text().splitlines() if line.strip()]
    questions = [q for q in questions if q.get("question_category") in args.categories and q["evidence"]]
    retrievers = build_named_retrievers(resources, NAMES)
    for q in questions:  # warm-up: models, catalog, chunk store
        retrievers["hybrid_rrf"].retrieve(q["question"], args.k)
    rows, outcomes = {}, {}
    for name in NAMES:
        for scope in ("filing", "corpus"):
            hits_ok, latencies, missed = [], [], []
            for q in questions:
                filing = doc_to_filing[q["doc_name"]]
                pages = {int(e["evidence_page_num"]) + 1 for e in q["evidence"]}
                filters = SearchFilters(filing_ids=(filing,)) if scope == "filing" else None
                result = retrievers[name].retrieve(q["question"], args.k, filters)
                latencies.append(result.timings_ms["total"])
                got = {p for h in result.hits if h.filing_id == filing for p in h.pages}
                ok = pages <= got
                hits_ok.append(ok)
                if not ok:
                    missed.append(f"{q['financebench_id']}:{sorted(pages - got)}")
            rows[(name, scope)] = (sum(hits_ok) / len(hits_ok), statistics.median(latencies),
                                   sorted(latencies)[int(0.95 * (len(latencies) - 1))], missed)
            outcomes[(name, scope)] = hits_ok
    print(f"{len(questions)} questions ({', '.join(args.categories)}), all-evidence page hit@{args.k}")
    print(f"| retriever | scope | all-evidence hit@{args.k} | p50 ms | p95 ms | missed |")
    print("|---|---|---|---|---|---|")
    for (name, scope), (hit, mean, p95, missed) in rows.items():
        print(f"| {name} | {scope} | {hit:.2f} | {mean:.0f} | {p95:.0f} | {' '.join(missed)} |")
    for name in NAMES[1:]:
        for scope in ("filing", "corpus"):
            a, b = outcomes[("hybrid_rrf", scope)], outcomes[(name, scope)]
            wins, losses = sum(y and not x for x, y in zip(a, b, strict=True)), sum(x and not y for x, y in zip(a, b, strict=True))
            print(f"{name} vs hybrid_rrf ({scope}): {wins} wins, {losses} losses, exact McNemar p = "
                  f"{mcnemar_exact(wins, losses):.4f}")
    two = [q for q in questions if len({e["evidence_page_num"] for e in q["evidence"]}) >= 2]
    print(f"multi-page questions: {[q['financebench_id'] for q in two]}")


def synthetic(resources, stems: list[str], k: int) -> None:
    """All-evidence page hit@k (every required group has a page in the top k) with a 95% bootstrap
    interval, on the model-free synthetic questions of some sample filings, filing scope."""
    import random

    from finrag_pipeline.core.ingest.parse import parse_filing
    from finrag_pipeline.core.qa import QAConfig
    from finrag_pipeline.core.qa.filters import apply_filters
    from finrag_pipeline.core.qa.model_free import generate_model_free

    config = QAConfig()
    config.filters.dedup.enabled = False
    items = []
    for stem in stems:
        path = next(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.stem == stem)
        parsed = parse_filing(path)
        from finrag_pipeline.core.chunking.chunker import chunk_filing
        chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows)
        generated, _ = generate_model_free(parsed.meta, parsed.pages, parsed.table_rows,
                                           list(getattr(parsed, "facts", None) or []), chunks, config)
        kept, _ = apply_filters(generated, parsed.pages, chunks, config.filters, None)
        items.extend(i for i in kept if i.evidence)
    retrievers = build_named_retrievers(resources, NAMES)
    print(f"{len(items)} synthetic questions ({', '.join(stems)}), all-evidence page hit@{k}, filing scope")
    print("| retriever | hit | 95% bootstrap interval | p50 ms |")
    print("|---|---|---|---|")
    for name in NAMES:
        ok, lat = [], []
        for item in items:
            result = retrievers[name].retrieve(item.question, k, SearchFilters(filing_ids=(item.filing_id,)))
            lat.append(result.timings_ms["total"])
            got = {(h.filing_id, p) for h in result.hits for p in h.pages}
            ok.append(all(any((e.filing_id, e.page) in got for e in group) for group in item.evidence))
        rng = random.Random(0)
        boots = sorted(sum(rng.choices(ok, k=len(ok))) / len(ok) for _ in range(1000))
        print(f"| {name} | {sum(ok) / len(ok):.3f} | [{boots[25]:.3f}, {boots[974]:.3f}] | "
              f"{statistics.median(lat):.0f} |")


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs (binomial, p = 0.5)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


if __name__ == "__main__":
    main()
