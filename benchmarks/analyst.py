"""Benchmark: the `calculator` answerer against `extractive` on hand-checked analyst questions, and its latency.

    .venv/bin/python benchmarks/analyst.py [--k 5] [--repeat 20]

Builds a throwaway FINRAG_HOME with the eight sample filings (parse, warehouse, default chunks,
Tantivy index), retrieves each question of benchmarks/analyst_questions.yaml once with the `bm25`
retriever (corpus scope, top k), and gives the SAME hits to both answerers. Scored per question:

* correct: lookup/metric questions - the answer's FIRST figure equals the reference within the
  rounding the reference shows (one figure, as an analyst answers; listing candidates earns nothing);
  unanswerable questions - the answerer abstains.
* cited: the answer cites at least one (filing, page, chunk) and every cited filing is the question's.

Reported with 95% bootstrap intervals and the paired difference (calculator - extractive) with its
interval and sign-flip p-value (core/evaluation/stats.py). Latency is the answer step only (after
retrieval): the first answer (catalog and fact loading included), then p50/p95 over --repeat rounds.

With --generated it also runs the demo's answer evaluation path (core/evaluation/runner.run_answer_eval,
the scoring rules of answer_metrics as they are on this branch) on the model-free QA items of every
sample filing (no filters), bm25 top-k, filing scope, and compares the two answerers per question type.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer
from finrag_pipeline.core.evaluation.stats import bootstrap_ci, paired_comparison
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR
from finrag_pipeline.core.scoring.answer_contract import COMPUTED_TOLERANCE, LOOKUP_TOLERANCE, answer_value
from finrag_pipeline.core.scoring.answer_metrics import correctness

sys.path.insert(0, str(REPO_ROOT / "finrag_pipeline_tests"))  # the tests' corpus helpers

QUESTIONS = Path(__file__).with_name("analyst_questions.yaml")


def build_home(home: Path) -> None:
    from _analyst_corpus import store_parsed

    from finrag_pipeline.core.ingest.parse import parse_filing

    store_parsed(home, [parse_filing(path) for path in sorted(SAMPLE_FILINGS_DIR.iterdir())])


def correct(q: dict, result) -> float:
    """Scored by the evaluation's own rule (answer_metrics.correctness): one committed value, unit- and
    scale-aware; a computed reference is right within COMPUTED_TOLERANCE, a lookup exactly."""
    if q["kind"] == "unanswerable":
        return 1.0 if result.response_state in ("abstained", "insufficient_context", "no_evidence") else 0.0
    if result.response_state != "answered":
        return 0.0
    tolerance = LOOKUP_TOLERANCE if q["kind"] == "lookup" else COMPUTED_TOLERANCE
    value = answer_value(q["value"], q["unit"], tolerance=tolerance)
    return correctness(result.text, question=q["q"], answer_values=[value]).correct or 0.0


def generated_eval(session, k: int) -> str:
    """Model-free QA items of every filing answered by both answerers through run_answer_eval."""
    import pandas as pd

    from finrag_pipeline.core.catalog import active_filings, load_filing
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_answer_eval
    from finrag_pipeline.core.qa.config import load_qa_config
    from finrag_pipeline.core.qa.model_free import generate_model_free
    from finrag_pipeline.core.records import load_facts, load_pages, load_table_rows

    matrix = EvalMatrix.load().narrow(models=["calculator", "extractive"])
    matrix = EvalMatrix.model_validate({**matrix.model_dump(), "answers": {
        **matrix.answers.model_dump(), "retriever": "bm25", "k": k, "scope": "filing", "max_questions": None}})
    config, rows, items_seen = load_qa_config(), [], []
    for fid in active_filings(session.warehouse):
        meta, wh = load_filing(session.warehouse, fid), session.warehouse
        pages, table_rows, facts = load_pages(wh, fid), load_table_rows(wh, fid), load_facts(wh, fid)
        items, _ = generate_model_free(meta, pages, table_rows, facts, chunk_filing(meta, pages, table_rows), config)
        items_seen.append(items)
        rows += run_answer_eval(items, session.retriever_factory, matrix, fid, "bench",
                                answerer_factory=session.answerer_factory, version="bench")[1]
    df = pd.DataFrame(rows)
    df["answerer"] = df["model"]
    df["score"] = df.apply(lambda r: r["state_correct"] if r["question_type"] == "unanswerable"
                           else r["figure_match"], axis=1)
    out = [f"\ngenerated QA (model-free, {df['qa_id'].nunique()} questions over {df['filing_id'].nunique()} filings),"
           " bm25 top-k, filing scope; score = figure_match (state_correct for unanswerable)\n",
           "| question type | n | calculator | extractive | paired diff [95% CI] | p |", "|---|---|---|---|---|---|"]
    for qtype, g in sorted(df.groupby("question_type"), key=lambda kv: kv[0]):
        wide = g.pivot_table(index="qa_id", columns="answerer", values="score", aggfunc="first")
        if not {"calculator", "extractive"} <= set(wide.columns):
            continue
        a, b = wide["extractive"].tolist(), wide["calculator"].tolist()
        pc = paired_comparison(a, b)
        fmt = lambda v: "-" if v is None else f"{v:+.2f}"  # noqa: E731
        out.append(f"| {qtype} | {len(wide)} | {pd.Series(b).mean():.2f} | {pd.Series(a).mean():.2f} | "
                   f"{fmt(pc.mean_diff)} [{fmt(pc.ci_low)}, {fmt(pc.ci_high)}] | "
                   f"{'-' if pc.p_value is None else f'{pc.p_value:.4f}'} |")
    wide = df.pivot_table(index="qa_id", columns="answerer", values="score", aggfunc="first")
    pc = paired_comparison(wide["extractive"].tolist(), wide["calculator"].tolist())
    lost = df[(df["answerer"] == "calculator") & (df["score"] < 1)]
    by_id = {r.qa_id: r.question for batch in items_seen for r in batch}
    examples = ["", "calculator misses (up to 3 per question type):"]
    for qtype, g in lost.groupby("question_type"):
        for _, r in g.head(3).iterrows():
            examples.append(f"  {qtype} | {by_id.get(r['qa_id'], r['qa_id'])} | {r['response_state']} | "
                            f"{str(r.get('answer') or '')[:80]}")
    out.append(f"| all | {len(wide)} | {wide['calculator'].mean():.2f} | {wide['extractive'].mean():.2f} | "
               f"{pc.mean_diff:+.2f} [{pc.ci_low:+.2f}, {pc.ci_high:+.2f}] | {pc.p_value:.4f} |")
    return "\n".join(out + examples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--generated", action="store_true", help="also evaluate on generated QA items")
    args = ap.parse_args()
    questions = yaml.safe_load(QUESTIONS.read_text())["questions"]

    from finrag_pipeline.core.session import FinragSession

    with tempfile.TemporaryDirectory(prefix="finrag-bench-analyst-") as tmp:
        t0 = time.perf_counter()
        build_home(Path(tmp))
        print(f"corpus: 8 sample filings parsed, chunked and indexed in {time.perf_counter() - t0:.1f} s")
        session = FinragSession.open(tmp)
        retriever = session.retriever("bm25")
        hits = {}
        for q in questions:
            hits[q["q"]] = retriever.retrieve(q["q"], args.k, None).hits
        answerers = {"calculator": calculator_answerer(warehouse=session.warehouse), "extractive": ExtractiveAnswerer()}
        scores: dict[str, list[float]] = {name: [] for name in answerers}
        first_ms: dict[str, float] = {}
        rows = []
        for name, answerer in answerers.items():
            for i, q in enumerate(questions):
                t = time.perf_counter()
                result = answerer.answer(q["q"], hits[q["q"]])
                if i == 0:
                    first_ms[name] = (time.perf_counter() - t) * 1000
                scores[name].append(correct(q, result))
                rows.append((name, q["kind"], q["q"], result.response_state, result.text[:90].replace("|", "/")))
        generated = generated_eval(session, args.k) if args.generated else None
        latencies: dict[str, list[float]] = {name: [] for name in answerers}
        for _ in range(args.repeat):
            for name, answerer in answerers.items():
                for q in questions:
                    t = time.perf_counter()
                    answerer.answer(q["q"], hits[q["q"]])
                    latencies[name].append((time.perf_counter() - t) * 1000)

    kinds = ["lookup", "metric", "unanswerable"]
    print(f"\n{len(questions)} questions, bm25 top-{args.k} hits shared by both answerers\n")
    print("| answerer | " + " | ".join(f"{k} correct (n)" for k in kinds) + " | all correct [95% CI] |")
    print("|---|" + "---|" * (len(kinds) + 1))
    for name in answerers:
        cells = []
        for k in kinds:
            vals = [s for s, q in zip(scores[name], questions, strict=True) if q["kind"] == k]
            cells.append(f"{sum(vals) / len(vals):.2f} ({len(vals)})")
        ci = bootstrap_ci(scores[name])
        print(f"| {name} | " + " | ".join(cells) + f" | {ci.mean:.2f} [{ci.ci_low:.2f}, {ci.ci_high:.2f}] |")
    pc = paired_comparison(scores["extractive"], scores["calculator"])
    print(f"\npaired difference calculator - extractive: {pc.mean_diff:+.2f} [{pc.ci_low:+.2f}, {pc.ci_high:+.2f}],"
          f" p = {pc.p_value:.4f}, n = {pc.n_pairs}")
    for k in ("lookup", "metric"):
        idx = [i for i, q in enumerate(questions) if q["kind"] == k]
        pk = paired_comparison([scores["extractive"][i] for i in idx], [scores["calculator"][i] for i in idx])
        print(f"  {k}: {pk.mean_diff:+.2f} [{pk.ci_low:+.2f}, {pk.ci_high:+.2f}], p = {pk.p_value:.4f}, n = {pk.n_pairs}")
    print("\n| answerer | first answer ms (cold: catalog + facts) | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|---|")
    for name, lat in latencies.items():
        lat = sorted(lat)
        print(f"| {name} | {first_ms[name]:.1f} | {statistics.median(lat):.2f} | {lat[int(0.95 * (len(lat) - 1))]:.2f} "
              f"| {lat[-1]:.2f} |")
    if generated is not None:
        print(generated)
    print("\nper question:")
    for r in rows:
        print("  " + " | ".join(r))


if __name__ == "__main__":
    main()
