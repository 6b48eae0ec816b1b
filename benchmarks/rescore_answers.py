"""Benchmark (issue 25): the stored answers of a demo home, re-scored under this branch's rules.

    FINRAG_HOME=/path/to/copy/of/.finrag .venv/bin/python benchmarks/rescore_answers.py

Reads every current answer row (`eval.answer_current`: the newest run of each configuration x filing)
of a built home - run it on a COPY, it only reads - and re-scores each stored answer text with
`answer_metrics.score_answer` against its QA item (`runner.answer_key`), grounding over what the
answer cites (`cited_evidence.CitedEvidence`: retrieved chunks, any chunk, XBRL facts, pages; the
hits of the stored run are not kept, so every cited chunk is read from the warehouse). Prints, per
model: the stored correctness and grounding (the rules at the time of the run, grounding over the
retrieved chunks only) beside the re-scored ones, and for the calculator the share of correct answers
that are grounded. The answers are the demo's own (self-generated questions): an upper bound.
"""

from __future__ import annotations

import json
import time

import pandas as pd

from finrag_pipeline.core.evaluation import answer_metrics as am
from finrag_pipeline.core.evaluation.cited_evidence import CitedEvidence
from finrag_pipeline.core.evaluation.runner import answer_key
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.records import load_qa_items
from finrag_pipeline.core.warehouse import Warehouse


def main() -> None:
    wh = Warehouse(FinragPaths.from_env().warehouse)
    rows = wh.query_df("SELECT * FROM eval.answer_current")
    items = {i.qa_id: i for i in load_qa_items(wh, accepted_only=False)}
    evidence = CitedEvidence(wh)
    t0 = time.perf_counter()
    out = []
    for r in rows.to_dict("records"):
        item = items.get(r["qa_id"])
        if item is None:
            continue
        citations = [tuple(c) for c in json.loads(r["citations"] or "[]")]
        metrics, _ = am.score_answer(answer=r["answer"] or "", response_state=r["response_state"],
                                     citations=citations, cited_texts=evidence.texts(citations),
                                     key=answer_key(item))
        out.append({"model": r["model"], "answerable": r["answerable"], "old_correctness": r["correctness"],
                    "old_grounded": r["grounded"], "correctness": metrics["correctness"],
                    "grounded": metrics["grounded"], "key_fact_recall": metrics["key_fact_recall"]})
    df = pd.DataFrame(out)
    ans = df[df.answerable]
    print(f"rows: {len(df)} (answerable {len(ans)}), re-scored in {time.perf_counter() - t0:.1f} s")
    print(ans.groupby("model")[["old_correctness", "correctness", "old_grounded", "grounded", "key_fact_recall"]]
          .mean().round(3).to_string())
    calc = ans[(ans.model == "calculator") & (ans.correctness == 1.0)]
    old_calc = ans[(ans.model == "calculator") & (ans.old_correctness == 1.0)]
    print(f"calculator, correct answers: {len(calc)}; grounded (cited texts) {calc.grounded.mean():.3f}; "
          f"stored grounded of the answers correct at the time ({len(old_calc)}): {old_calc.old_grounded.mean():.3f}")


if __name__ == "__main__":
    main()
