"""Offline answerers on an analysts' question file, end to end: retrieval, answer, the project's scoring.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/analyst_answers.py --home <a copy of the demo home> \
        [--questions finrag_pipeline_tests/data/external/analyst_questions_heldout.jsonl | heldout2 | heldout | dev | analysts] \
        [--answerers calculator narrative extractive] [--retriever decomposed_routed] [--k 5] [--json] \
        [--rows per_question.jsonl]

The questions (FinanceBench JSONL) are read by the project's importer against the home's filings (never written
into it). Each filing's questions go through ``runner.run_answer_eval`` exactly as an evaluation does
(``answers.retriever`` at ``k`` in the filing scope, every answerer on the same hits, ``score_answer`` with
grounding over the cited texts), and the rows are grouped by the question's category (metric, lookup,
judgement, narrative). Printed per answerer and category: questions, answered, correctness (the deterministic
scorer: mean over the decided answers, with how many it decided) and key-fact recall (narrative references).
The held-out file was written by this project and never read while building the answerers; still, one
author wrote the questions and the answerers: a figure here is an upper bound for other 10-Ks and analysts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from held_out import is_held_out  # noqa: E402

from finrag_pipeline.core.catalog import active_filings, load_filing  # noqa: E402
from finrag_pipeline.core.evaluation.cited_evidence import CitedEvidence  # noqa: E402
from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_answer_eval  # noqa: E402
from finrag_pipeline.core.paths import REPO_ROOT  # noqa: E402
from finrag_pipeline.core.qa.importers import FilingContext, import_financebench  # noqa: E402
from finrag_pipeline.core.records import load_chunks, load_pages  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402

EXTERNAL = REPO_ROOT / "finrag_pipeline_tests/data/external"
# Named sets (data/external/README.md): the held-out ones are scored by the lead only, never opened while building.
NAMED_SETS = {"analysts": EXTERNAL / "analyst_questions.jsonl", "dev": EXTERNAL / "analyst_questions_dev.jsonl",
              "heldout": EXTERNAL / "analyst_questions_heldout.jsonl",
              "heldout2": EXTERNAL / "analyst_questions_heldout2.jsonl"}
HELD_OUT = NAMED_SETS["heldout"]


def questions_path(value: str) -> Path:
    """A question file: a named set (NAMED_SETS) or a path to a FinanceBench JSONL file."""
    path = NAMED_SETS.get(value) or Path(value)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no question file {value!r} (a path, or one of {sorted(NAMED_SETS)})")
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--questions", type=questions_path, default=HELD_OUT,
                    help=f"a FinanceBench JSONL path or a named set: {', '.join(NAMED_SETS)}")
    ap.add_argument("--answerers", nargs="+", default=["calculator", "narrative", "extractive"])
    ap.add_argument("--retriever", default="decomposed_routed")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rows", type=Path, default=None,
                    help="write one JSON line per question and answerer (id, category, state, correctness, answer)")
    args = ap.parse_args()
    if args.rows and is_held_out(args.questions):   # the held-out sets of now: benchmarks/held_out.py
        ap.error("--rows would write the held-out set's items and per-question results (data/external/README.md)")

    session = FinragSession.open(args.home)
    wh = session.warehouse
    contexts = [FilingContext(load_filing(wh, fid), load_pages(wh, fid), load_chunks(wh, fid))
                for fid in active_filings(wh)]
    imported = import_financebench(args.questions, contexts)
    matrix = EvalMatrix.load().narrow(answers__models=args.answerers, answers__retriever=args.retriever,
                                      answers__k=args.k, answers__scope="filing")
    state = session.corpus_state()
    by_filing = defaultdict(list)
    for item in imported.items:
        by_filing[item.filing_id].append(item)
    rows: list[dict] = []
    t0 = time.perf_counter()
    with session.configured():
        for fid, items in sorted(by_filing.items()):
            _, got = run_answer_eval(items, session.retriever_factory, matrix, fid, state.corpus_state,
                                     answerer_factory=session.answerer_factory, evidence=CitedEvidence(wh))
            category = {i.qa_id: (i.metadata or {}).get("question_category") or i.question_type for i in items}
            for r in got:
                r["category"] = category[r["qa_id"]]
            rows += got
            print(f"  {fid}: {len(items)} questions ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    if args.rows:
        ids = {i.qa_id: (i.metadata or {}).get("financebench_id") or i.qa_id for i in imported.items}
        args.rows.write_text("".join(json.dumps({
            "id": ids.get(r["qa_id"], r["qa_id"]), "answerer": r["model"], "category": r["category"],
            "state": r["response_state"], "correctness": r.get("correctness"), "key_fact_recall": r.get("key_fact_recall"),
            "answer": (r.get("answer") or "")[:300]}) + "\n" for r in rows if r["model"] in args.answerers))
    table = []
    for (model, category), group in sorted(_group(rows, args.answerers).items()):
        decided = [r["correctness"] for r in group if r.get("correctness") is not None]
        recall = [r["key_fact_recall"] for r in group if r.get("key_fact_recall") is not None]
        table.append({"answerer": model, "category": category, "questions": len(group),
                      "answered": sum(r["response_state"] == "answered" for r in group),
                      "decided": len(decided), "correctness": float(np.mean(decided)) if decided else None,
                      "key_fact_recall": float(np.mean(recall)) if recall else None})
    print(f"{args.questions.name}: {len(imported.items)} questions imported ({imported.log}); "
          f"retriever {args.retriever}@{args.k}, filing scope; load {os.getloadavg()[0]:.1f}")
    if args.json:
        print(json.dumps(table, indent=2))
        return
    print("| answerer | category | questions | answered | decided | correctness | key-fact recall |")
    print("|---|---|---|---|---|---|---|")
    for t in table:
        print(f"| {t['answerer']} | {t['category']} | {t['questions']} | {t['answered']} | {t['decided']} | "
              f"{_fmt(t['correctness'])} | {_fmt(t['key_fact_recall'])} |")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _group(rows: list[dict], answerers: list[str]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r["model"] in answerers:
            out[(r["model"], r["category"])].append(r)
    return out


if __name__ == "__main__":
    main()
