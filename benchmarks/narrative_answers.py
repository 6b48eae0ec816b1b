"""Narrative answers on the qualitative questions of a built home: what each offline answerer says.

    FINRAG_HOME=/path/to/copy-of-demo-home HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/narrative_answers.py \
        [--retriever qualitative_routed] [--k 5] [--answerers narrative calculator extractive] [--types narrative]

For every item labelled with one of ``--types`` (and evidence), the retriever's top k in the filing scope
are answered by each answerer. Per answerer: the response states, how often the answer leads with a bare
figure (what the calculator did before the routing), and the share of the reference's key words the
answer states (key-word recall: the reference answer's content words, stemmed, as the answerer module
stems them; a stand-in for the key-fact recall of the scoring branch). Lazy answers are scored the same
way beside them ("due to various factors"; the question restated), and must stay near 0. The generated
narrative references are MD&A cause clauses cut by the pattern the answerer's cues resemble
(core/qa/narrative_questions.py): figures on them are an upper bound.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from finrag_pipeline.core.evaluation.answerer_registry import build_answerer  # noqa: E402
from finrag_pipeline.core.evaluation.narrative import word_stems  # noqa: E402
from finrag_pipeline.core.evaluation.runner import page_groups, scope_filters  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402

_FILLER = frozenset(word_stems("the a an and of in to for by from with our its their was were is are primarily "
                           "partially offset due driven higher lower increase decrease increased decreased"))
_FIGURE_FIRST = re.compile(r"^\s*[-$(]*\d")


def key_word_recall(answer: str, reference: str) -> float | None:
    ref = word_stems(reference) - _FILLER
    return len(ref & word_stems(answer)) / len(ref) if ref else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--retriever", default="qualitative_routed")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--answerers", nargs="+", default=["narrative", "calculator", "extractive"])
    ap.add_argument("--types", nargs="+", default=["narrative"])
    ap.add_argument("--show", type=int, default=0, help="print this many answers of the first answerer")
    ap.add_argument("--questions", default=None, help="a JSONL of qualitative questions (benchmarks/"
                    "qualitative_questions.jsonl, read as benchmarks/qualitative_retrieval.py reads it)")
    args = ap.parse_args()
    session = FinragSession.open(os.environ.get("FINRAG_HOME"))
    if args.questions:
        from qualitative_retrieval import questions_file

        items = questions_file(Path(args.questions), session.warehouse)
    else:
        items = [i for i in load_qa_items(session.warehouse) if i.question_type in args.types and page_groups(i)]
    retriever = session.retriever(args.retriever)
    hits = {i.qa_id: retriever.retrieve(i.question, args.k, scope_filters("filing", i.filing_id)).hits for i in items}
    lazy = {"various factors": lambda i: "The change was due to various factors.", "question restated": lambda i: i.question}
    print(f"{len(items)} questions ({args.types}), {args.retriever} top {args.k}, filing scope")
    print("| answerer | answered | insufficient / abstained | figure first | key-word recall (mean) | recall >= 0.8 |")
    print("|---|---|---|---|---|---|")
    for name in [*args.answerers, *lazy]:
        states, figure_first, recalls = Counter(), 0, []
        answerer = None if name in lazy else build_answerer(name, warehouse=session.warehouse)
        for n, item in enumerate(items):
            if answerer is None:
                text, state = lazy[name](item), "answered"
            else:
                result = answerer.answer(item.question, hits[item.qa_id], item.periods)
                text, state = result.text, result.response_state
                if n < args.show and name == args.answerers[0]:
                    print(f"  Q {item.question}\n    ref {item.reference_answer}\n    A [{state}] {text[:300]}")
            states[state] += 1
            figure_first += bool(state == "answered" and _FIGURE_FIRST.match(text))
            r = key_word_recall(text, item.reference_answer) if state == "answered" else 0.0
            recalls.append(r or 0.0)
        n = len(items) or 1
        print(f"| {name} | {states['answered'] / n:.2f} | {(n - states['answered']) / n:.2f} | {figure_first / n:.2f} | "
              f"{sum(recalls) / n:.2f} | {sum(r >= 0.8 for r in recalls) / n:.2f} |")


if __name__ == "__main__":
    main()
