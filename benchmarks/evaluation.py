"""Benchmark: retrieval evaluation of 1,000 questions x 10 configurations, plus metric throughput.

    .venv/bin/python benchmarks/evaluation.py [--questions 1000] [--n-boot 2000]

Retrievers are rank-bm25 (Okapi and BM25+) over a synthetic 10-K-like corpus (5 filings x 400
table-row chunks), so the benchmark measures the evaluation engine (search once at max k, metrics
per k, rows, bootstrap aggregates) with a real lexical scorer and no model. 2 retrievers x
k in {1, 3, 5, 10, 20} = 10 configurations, scope 'filing' (target: < 60 s on 2 cores).
"""

from __future__ import annotations

import argparse
import random
import time

import pandas as pd
from rank_bm25 import BM25Okapi, BM25Plus

from finrag_pipeline.core.evaluation.runner import EvalMatrix, aggregate, run_retrieval_eval
from finrag_pipeline.core.models import EvidencePlace, Hit, QAItem, SearchFilters
from finrag_pipeline.core.scoring import metrics as m

ITEMS = ["total net sales", "cost of sales", "gross margin", "research and development", "net income",
         "operating income", "income taxes", "cash and cash equivalents", "total assets", "long-term debt",
         "accounts receivable", "inventories", "deferred revenue", "share repurchases", "dividends paid",
         "depreciation and amortization", "goodwill", "operating lease liabilities", "capital expenditures",
         "selling general and administrative"]
SEGMENTS = ["Americas", "Europe", "Greater China", "Japan", "Rest of Asia Pacific", "Services", "Products",
            "Cloud", "Devices", "Advertising"]


def synthetic_corpus(n_filings: int = 5, per_filing: int = 400, seed: int = 0):
    rng = random.Random(seed)
    chunks = []  # (chunk_id, filing, page, text)
    for f in range(n_filings):
        filing = f"CO{f}-2022-10K"
        for i in range(per_filing):
            item, seg = rng.choice(ITEMS), rng.choice(SEGMENTS)
            vals = " | ".join(f"{y}: {rng.randint(1000, 400000):,}" for y in (2022, 2021, 2020))
            chunks.append((f"{filing}:{i}", filing, 20 + i // 6,
                           f"Company {f} 10-K FY2022 | {seg} | {item} | {vals} | USD millions"))
    return chunks


class BM25Retriever:
    """rank-bm25 over each filing's chunks; the corpus scope merges every filing's scores."""

    def __init__(self, chunks, variant):
        self.by_filing = {}
        for filing in sorted({c[1] for c in chunks}):
            docs = [c for c in chunks if c[1] == filing]
            self.by_filing[filing] = (docs, variant([d[3].lower().split() for d in docs]))

    def search(self, query: str, k: int, filters: SearchFilters | None = None) -> list[Hit]:
        tokens = query.lower().split()
        filings = filters.filing_ids if filters and filters.filing_ids else tuple(self.by_filing)
        hits = []
        for filing in filings:
            docs, bm25 = self.by_filing[filing]
            for (cid, fid, page, text), score in zip(docs, bm25.get_scores(tokens), strict=True):
                hits.append(Hit(cid, float(score), 0, fid, page, page, "table_row", text, "bm25"))
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:k]


def synthetic_questions(chunks, n: int, seed: int = 1):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cid, filing, page, text = rng.choice(chunks)
        seg, item = text.split(" | ")[1:3]
        groups = [[EvidencePlace(cid, page, filing)]]
        if i % 5 == 0:  # every fifth question needs a second figure (two required groups)
            other = rng.choice([c for c in chunks[:400] if c[1] == filing] or [chunks[0]])
            groups.append([EvidencePlace(other[0], other[2], other[1])])
        if i % 20 == 0:  # a few unanswerable questions
            groups = []
        out.append(QAItem(qa_id=f"q{i}", filing_id=filing, question=f"What was {seg} {item} in fiscal 2022?",
                          reference_answer="", question_type="numerical", periods=["FY2022"], evidence=groups))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--n-boot", type=int, default=2000)
    args = ap.parse_args()

    chunks = synthetic_corpus()
    t0 = time.perf_counter()
    retrievers = {"bm25_okapi": BM25Retriever(chunks, BM25Okapi), "bm25_plus": BM25Retriever(chunks, BM25Plus)}
    t_index = time.perf_counter() - t0
    questions = synthetic_questions(chunks, args.questions)
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": list(retrievers), "top_k": [1, 3, 5, 10, 20],
                                                      "scopes": ["filing"]}})
    by_filing: dict[str, list[QAItem]] = {}
    for q in questions:
        by_filing.setdefault(q.filing_id, []).append(q)

    t0 = time.perf_counter()
    rows = []
    for filing, items in by_filing.items():  # one partition per filing, as the Dagster assets run
        _, r = run_retrieval_eval(items, lambda name, ch: retrievers[name], matrix, "filing", filing, "bench",
                                  version="bench")
        rows += r
    t_eval = time.perf_counter() - t0
    df = pd.DataFrame(rows)
    search_s = df.drop_duplicates(["retriever", "qa_id"])["latency_ms"].sum() / 1000

    t0 = time.perf_counter()
    agg = aggregate(df, by=["config_name"], metrics=["hit_chunk", "mrr_chunk", "ndcg_page", "all_evidence_hit"],
                    n_boot=args.n_boot)
    t_agg = time.perf_counter() - t0

    # raw metric throughput: evaluate_ranking on 20-item rankings with two groups
    rng = random.Random(2)
    cases = [([f"d{rng.randint(0, 60)}" for _ in range(20)], [{f"d{rng.randint(0, 60)}"},
              {f"d{rng.randint(0, 60)}", f"d{rng.randint(0, 60)}"}]) for _ in range(20000)]
    t0 = time.perf_counter()
    for ranked, groups in cases:
        m.evaluate_ranking(ranked, groups, 10)
    t_metrics = time.perf_counter() - t0

    n_cfg = len(matrix.retrieval_configs())
    print(f"\nRetrieval evaluation: {len(questions)} questions x {n_cfg} configurations "
          f"({len(df)} result rows)\n")
    table = [
        ("index build (rank-bm25, 2 x 2,000 chunks)", f"{t_index:.2f} s"),
        ("run_retrieval_eval total", f"{t_eval:.2f} s"),
        ("  of which search (once per retriever at max k)", f"{search_s:.2f} s"),
        ("  of which metrics + rows", f"{t_eval - search_s:.2f} s"),
        (f"aggregate: {n_cfg} configs x 4 metrics, n_boot={args.n_boot}", f"{t_agg:.2f} s"),
        ("metric throughput (evaluate_ranking, k=10, 2 groups)", f"{len(cases) / t_metrics:,.0f} rankings/s"),
        ("total (eval + aggregate)", f"{t_eval + t_agg:.2f} s (target < 60 s)"),
    ]
    width = max(len(a) for a, _ in table)
    for a, b in table:
        print(f"  {a:<{width}}  {b}")
    print()
    pivot = agg.pivot_table(index="config_name", columns="metric", values="mean").round(3)
    print(pivot.to_string())


if __name__ == "__main__":
    main()
