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

Then, on every demo item with one asked value, answers written in natural styles from the item's own
evidence rows (the reference value, a figure of another year from the same rows): with prior-year
context ("It was X in FY2022, compared with Y in 2021"), "rose to X in 2022 from Y in 2021", and the
lazy strategies (every year of the evidence rows listed, "It may be X", "Either X or Y", Y attributed
to the asked year, the question echoed). Self-written styles on self-generated items: an upper bound.
"""

from __future__ import annotations

import json
import time

import pandas as pd

from finrag_pipeline.core.evaluation.cited_evidence import CitedEvidence
from finrag_pipeline.core.evaluation.runner import answer_key
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.records import load_qa_items
from finrag_pipeline.core.scoring import answer_metrics as am
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
    natural_styles(wh)


def _working(item, result: str) -> str | None:
    """The item's computation written out with its inputs and result ("A - B = R", "(A - B) / B x 100 = R")."""
    from finrag_pipeline.core.numbers import format_amount

    src = [f for f in item.answer_figures if f.get("role", "source") == "source" and f.get("value") is not None]
    fmt = [format_amount(float(f["value"]), f.get("unit"), f.get("text")) for f in src]
    formula, template = item.computation or "", str(item.metadata.get("template") or "")
    if not formula or len(fmt) < 2:
        return None
    if "pct_change" in formula or template == "change_pct":
        return f"({fmt[0]} - {fmt[1]}) / {fmt[1]} x 100 = {result}"
    if template == "change_abs":
        return f"{fmt[0]} - {fmt[1]} = {result}"
    if "avg(" in formula:
        return (f"{fmt[0]} / (({fmt[1]} + {fmt[2]}) / 2) = {result}" if len(fmt) == 3
                else f"({fmt[0]} + {fmt[1]}) / 2 = {result}")
    return f"{fmt[0]} / {fmt[1]} = {result}" if len(fmt) == 2 else None


def natural_styles(wh: Warehouse) -> None:
    from finrag_pipeline.core.numbers import SCALE_NAME, scale_of_text, years_in

    chunks = wh.query_df("SELECT chunk_id, text FROM core.chunks")
    texts = dict(zip(chunks.chunk_id, chunks.text, strict=True))
    styles: dict[str, list[float]] = {}
    n_items = 0
    for item in load_qa_items(wh):
        key = answer_key(item)
        years = years_in(str(key.answer_values[0].get("period") or "")) if len(key.answer_values) == 1 else set()
        if len(years) != 1:
            continue
        n_items += 1
        v = key.answer_values[0]
        year = years.pop()
        evidence = [texts[p.chunk_id] for g in item.evidence for p in g if p.chunk_id in texts]
        other, listed = None, []
        for text in evidence:
            word = SCALE_NAME.get(scale_of_text(text) or 1.0, "")
            for e in am.evidence_figures(text):
                if e.year:
                    listed.append(f"FY{e.year}: {e.figure.text}")
                if other is None and e.year and e.year != year and not e.figure.percent:
                    other = (f"{e.figure.text} {word}".strip() if not e.figure.explicit_scale else e.figure.text, e.year)
        answers = {"plain": v["text"], "echo": item.question, "hedged": f"It may be {v['text']}."}
        if other:
            answers["prior-year context"] = f"It was {v['text']} in FY{year}, compared with {other[0]} in {other[1]}."
            if not v.get("signed"):     # a level; a change does not "rise to"
                answers["rose to X from Y (levels)"] = f"It rose to {v['text']} in fiscal {year} from {other[0]} in fiscal {other[1]}."
            answers["either X or Y (lazy)"] = f"Either {v['text']} or {other[0]}."
            answers["Y for the asked year (lazy)"] = f"It was {other[0]} in FY{year}."
        if (shown := _working(item, v["text"])) is not None:
            answers["shown working"] = shown
        if len(listed) >= 2:
            answers["every year listed (lazy)"] = "; ".join(listed) + "."
        for name, text in answers.items():
            verdict = am.correctness(text, question=key.question, answer_values=key.answer_values,
                                     inputs=key.inputs, required_terms=key.required_terms)
            styles.setdefault(name, []).append(verdict.correct or 0.0)
    print(f"demo items with one asked value and a period: {n_items}")
    for name, scores in styles.items():
        print(f"  {name:32s} n={len(scores):4d} correctness {sum(scores) / len(scores):.3f}")


if __name__ == "__main__":
    main()
