"""The narrative part of answer evaluation, timed: every qualitative question of the home (the demo's narrative items
and the analysts' imported ones), retrieved as eval_matrix.yaml's answers are (bm25@5, filing scope) and answered by
the answerers that route them to the narrative answerer, built as the runner builds them (with the warehouse).

    FINRAG_HOME=<copy of the demo home> nice -n 10 .venv/bin/python benchmarks/narrative_eval_time.py

Retrieval is done first and not timed; each answerer's seconds over all the questions are printed, with the load.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.evaluation.answerer_registry import build_answerer  # noqa: E402
from finrag_pipeline.core.evaluation.runner import scope_filters  # noqa: E402
from finrag_pipeline.core.question_kind import classify_question  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402

ANSWERERS = ("calculator", "extractive", "narrative")


def main() -> None:
    session = FinragSession.open(os.environ.get("FINRAG_HOME"))
    wh = session.warehouse
    items = [i for i in load_qa_items(wh) if classify_question(i.question).qualitative]
    retriever = session.retriever("bm25")
    hits = {i.qa_id: retriever.retrieve(i.question, 5, scope_filters("filing", i.filing_id)).hits for i in items}
    seconds = {}
    for name in ANSWERERS:
        answerer = build_answerer(name, warehouse=wh)
        t0 = time.perf_counter()
        for item in items:
            answerer.answer(item.question, hits[item.qa_id], item.periods)
        seconds[name] = time.perf_counter() - t0
    print(f"{len(items)} qualitative items; " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
          + f"; total {sum(seconds.values()):.1f} s; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
