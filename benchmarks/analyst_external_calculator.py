"""Benchmark: calculator correctness on the hand-written analysts' questions (finrag_pipeline_tests/data/
external/analyst_questions.jsonl: 49 questions over the 8 sample filings), offline, no retrieval.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/analyst_external_calculator.py [--cache DIR] [--json]

Each question goes to the `calculator` answerer over a FactStore built from the parsed sample filings (no
hits: the company and years come from the question, as in `finrag ask`). Scored by the project's rule
(answer_metrics.correctness) against the reference answer read as one figure (answer_contract.single_figure_answer:
a lookup exact up to its rounding, a computed figure within its tolerance); unanswerable questions are right
when the calculator abstains; narrative questions are listed, not scored (no figure). The set was written
by the project (one author, questions chosen where the filing has the inputs): a figure here is an upper
bound for other 10-Ks and other analysts.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from finrag_pipeline.core.analyst import FactStore
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.paths import SAMPLE_EXTERNAL_QA, SAMPLE_FILINGS_DIR
from finrag_pipeline.core.scoring.answer_contract import (
    COMPUTED_TOLERANCE,
    single_figure_answer,
    value_from_figure,
)
from finrag_pipeline.core.scoring.answer_metrics import correctness


def parsed_filings(cache: Path | None):
    """The sample filings parsed, through THE per-filing parse cache (core/ingest/parse_cache.py: keyed by the
    file's sha256 and the parser's code fingerprint; ``--cache`` names its directory)."""
    from finrag_pipeline.core.ingest.parse_cache import cache_dir_for, cached_parse

    where = cache_dir_for(cache)
    return [cached_parse(p, where) for p in sorted(SAMPLE_FILINGS_DIR.iterdir())]


_REF_RE = re.compile(r"^\s*-?\$?\s*(?P<v>-?[\d,]+(?:\.\d+)?)\s*(?:x|%|days|million)?\s*$", re.I)


def first_figure_match(result, reference: str) -> float | None:
    """Lenient second column: the calculator's own figure (details["rounded"], in the unit it reports)
    equals a one-figure reference ("9.67x", "0.87", "81.5 days", "$111,443 million") within 1% or the
    reference's last digit. Ratios printed as "9.67x" have no unit the project scorer reads (yet)."""
    m = _REF_RE.match(reference.replace("$-", "-$"))
    if not m:
        return None
    if result.response_state != "answered" or "rounded" not in result.details:
        return 0.0
    ref = float(m.group("v").replace(",", ""))
    ref = -abs(ref) if reference.strip().startswith("-") else ref
    got = float(result.details["rounded"])
    digits = len(m.group("v").split(".")[1]) if "." in m.group("v") else 0
    return 1.0 if abs(got - ref) <= max(abs(ref) * 0.01, 0.5 * 10 ** -digits) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=Path, default=None, help="per-filing parse cache directory (default: FINRAG_PARSE_CACHE or /tmp/finrag_parse_cache)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--warehouse", action="store_true",
                    help="read the facts from the warehouse of FINRAG_HOME (a built demo home) instead of parsing")
    args = ap.parse_args()
    if args.warehouse:
        calc = calculator_answerer()  # FactStore over FINRAG_HOME's warehouse, as `finrag ask` reads it
    else:
        calc = calculator_answerer(FactStore.from_parsed(parsed_filings(args.cache)))
    rows = []
    for line in SAMPLE_EXTERNAL_QA.read_text().splitlines():
        q = json.loads(line)
        kind = q["question_category"]
        result = calc.answer(q["question"], [])
        score = None
        if kind == "unanswerable":
            score = 1.0 if result.response_state != "answered" else 0.0
        elif kind in ("metric", "lookup"):
            single = single_figure_answer(q["answer"])
            if single is not None:
                fig, tolerance = single
                value = value_from_figure(fig, tolerance=COMPUTED_TOLERANCE if kind == "metric" else tolerance)
                verdict = correctness(result.text, question=q["question"], answer_values=[value])
                score = (verdict.correct or 0.0) if result.response_state == "answered" else 0.0
        first = first_figure_match(result, q["answer"]) if kind in ("metric", "lookup") else None
        rows.append({"id": q["financebench_id"], "kind": kind, "score": score, "first_figure": first, "state": result.response_state,
                     "answer": result.text[:160], "reference": q["answer"][:60]})
    by_kind: dict[str, list[float]] = {}
    for r in rows:
        if r["score"] is not None:
            by_kind.setdefault(r["kind"], []).append(r["score"])
    summary = {k: {"n": len(v), "correct": sum(v), "rate": round(sum(v) / len(v), 3)} for k, v in by_kind.items()}
    scored = [r["score"] for r in rows if r["score"] is not None and r["kind"] in ("metric", "lookup")]
    summary["metric+lookup"] = {"n": len(scored), "correct": sum(scored), "rate": round(sum(scored) / len(scored), 3)}
    firsts = [r["first_figure"] for r in rows if r["first_figure"] is not None]
    summary["first_figure_match"] = {"n": len(firsts), "correct": sum(firsts), "rate": round(sum(firsts) / len(firsts), 3)}
    summary["states"] = dict(Counter(r["state"] for r in rows))
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return
    for r in rows:
        print(f"{r['id']} {r['kind']:<12} {r['score'] if r['score'] is not None else '-'!s:<5} {r['first_figure'] if r['first_figure'] is not None else '-'!s:<5} {r['state']:<10} "
              f"ref {r['reference']!r:<40} | {r['answer']}")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
