"""The calculator on 10-Ks outside the demo: FinanceBench-style questions over robustness filings.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/calculator_outside_filings.py [--cache DIR] [--json]

The filings named in ``calculator_outside_questions.jsonl`` (under /work/shared/corpus/, at most three: CPU
is scarce) are parsed in memory (no home, no embedding) into a FactStore, and each question goes to the
``calculator`` answerer without hits (company and years from the question, as in ``finrag ask``). A metric
or judgement question is scored by the project's one decision (``answer_decision.decide``: the reference read as
a contract; a question it cannot decide is counted apart, never as right or wrong), a metric also by the lenient
first-figure match. The questions
were written by the engineer who built the rules, in the styles of public FinanceBench questions, and the
reference values were read by hand in the parsed filings: a figure here is an UPPER BOUND.

Batches (``--batch``): ``first`` (rows without a ``batch`` field: Costco, Intel, Nike FY2020) and ``third``
(Walmart FY2021, Oracle FY2019, Boston Properties FY2015: a retailer, a software company, a REIT), each written
before the fixes that looked at its failures. Parsed filings are cached one per filing, keyed by the filing's sha256
and the parser's code fingerprint (core/ingest/parse_cache.py, shared with fact_layer_outside.py and the question
builders): ``--cache DIR`` (default ``FINRAG_PARSE_CACHE`` or /tmp/finrag_parse_cache; a ``.pkl`` path of the old
per-batch cache is read as ``<path>.d/``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyst_external_calculator import first_figure_match  # noqa: E402
from held_out import is_held_out  # noqa: E402

from finrag_pipeline.core.analyst.store import FactStore  # noqa: E402
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer  # noqa: E402
from finrag_pipeline.core.evaluation.answer_decision import decide  # noqa: E402
from finrag_pipeline.core.ingest.parse_cache import cache_dir_for, cached_parse  # noqa: E402

QUESTIONS = Path(__file__).with_name("calculator_outside_questions.jsonl")
CORPUS = Path(os.environ.get("FINRAG_SHARED_CORPUS", "/work/shared/corpus"))


def parsed(files: list[str], cache: Path | None):
    """The batch's filings, each parsed once per filing bytes and parser code (a parser change parses again)."""
    where = cache_dir_for(cache)
    return [cached_parse(CORPUS / f, where) for f in files]


def score(result, q: dict) -> tuple[float | None, float | None]:
    """The project's one decision (core/evaluation/answer_decision.decide: the reference read as a contract,
    "Yes. ..." and figures alike; None when it cannot decide) and the lenient first-figure match."""
    first = first_figure_match(result, q["answer"]) if q["kind"] != "judgement" else None
    if result.response_state != "answered":
        return 0.0, first
    decision = decide(result.text, q["question"], q["answer"])
    return ((1.0 if decision.correct else 0.0) if decision.decided else None), first


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=Path, default=None,
                    help="per-filing parse cache directory (default: FINRAG_PARSE_CACHE or /tmp/finrag_parse_cache)")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--batch", default=None,
                    help="only the questions of this batch ('first' = the rows without a batch field, 'third', ...)")
    args = ap.parse_args()
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    if args.batch:
        questions = [q for q in questions if q.get("batch", "first") == args.batch]
    files = sorted({q["filing"] for q in questions})
    calc = calculator_answerer(FactStore.from_parsed(parsed(files, args.cache)))
    rows = []
    for q in questions:
        result = calc.answer(q["question"], [])
        right, first = score(result, q)
        rows.append({"id": q["id"], "kind": q["kind"], "score": right, "first_figure": first,
                     "state": result.response_state, "reference": q["answer"][:50], "answer": result.text[:220]})
    summary = {}
    for kind in sorted({r["kind"] for r in rows}):
        scored = [r["score"] for r in rows if r["kind"] == kind and r["score"] is not None]
        summary[kind] = {"n": len(scored), "correct": sum(scored)}
    firsts = [r["first_figure"] for r in rows if r["first_figure"] is not None]
    summary["first_figure_match"] = {"n": len(firsts), "correct": sum(firsts)}
    summary["states"] = dict(Counter(r["state"] for r in rows))
    summary["load"] = round(os.getloadavg()[0], 1)
    if is_held_out(args.questions):   # a held-out set prints its aggregates only (benchmarks/held_out.py)
        print(json.dumps(summary, indent=1))
        return
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return
    for r in rows:
        print(f"{r['id']:<8} {r['kind']:<9} {r['score']!s:<5} {r['first_figure']!s:<5} {r['state']:<10} "
              f"ref {r['reference']!r:<32} | {r['answer']}")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
