"""The narrative answerer on narrative questions, judged: key-fact recall and the rubric judge's verdicts.

    FINRAG_HOME=<copy of the demo home> FINRAG_LLM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/narrative_judged.py \
        --financebench finrag_pipeline_tests/data/external/analyst_questions{,_dev,_heldout,_heldout2}.jsonl \
        [--demo 20] [--retriever qualitative_routed] [--k 5] [--window 1] [--judge local-1.5b] [--lazy] \
        [--out /tmp/narrative_judged.jsonl]

Questions: the narrative ones (``question_category: narrative``) of FinanceBench JSONL files imported
against the home's filings (read only), and ``--demo N`` of the home's own narrative QA items (a seeded
sample). Each is searched with ``--retriever`` (top ``--k``, filing scope, as the runner does) and answered
by the ``narrative`` answerer (with the home's warehouse: each prose hit read with ``--window`` neighbouring
passages; ``--window 0``: the hits alone). Scored by

- key-fact recall: ``answer_metrics.key_fact_recall`` over the item's key facts (the importer's contract,
  else ``answer_contract.key_facts_of(reference, question)``), 0 for an abstention;
- the rubric judge (core/evaluation/judge.py) on ``--judge`` (any models.yaml name): Correct / Incorrect /
  Refusal, cached on disk; an abstention is not sent (it is a Refusal: the reference gives an answer);
  a judge that gives no verdict is counted apart (coverage), never as 0 or 1.

``--lazy [echo random_sentence table_dump]`` also scores lazy answers per question the same way (the question echoed; a
random sentence of the retrieved passages, seeded; that sentence followed by every table row printed on the hits' pages and
on the pages the narrative answer's figures come from): all must stay near 0. Per-question rows go to ``--out``.
Whoever wrote a set also wrote its references: on a self-written set every figure is an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from qualitative_retrieval import financebench_items  # noqa: E402

from finrag_pipeline.core.chunking.sentences import sentences as split_sentences  # noqa: E402
from finrag_pipeline.core.evaluation.narrative import NarrativeAnswerer  # noqa: E402
from finrag_pipeline.core.evaluation.runner import page_groups, scope_filters  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.scoring.answer_contract import key_facts_of  # noqa: E402
from finrag_pipeline.core.scoring.answer_metrics import key_fact_recall  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402


def key_facts(item) -> list[str]:
    return list((item.metadata or {}).get("key_facts") or key_facts_of(item.reference_answer, item.question))


def random_sentence(hits, rng: random.Random) -> str:
    pool = [s.strip() for h in hits if h.chunk_type == "prose" for s in split_sentences(h.text.split("|")[-1])
            if len(s.strip()) > 40]
    return rng.choice(pool) if pool else "No sentence."


def table_dump(hits, answer, wh, rng: random.Random) -> str:
    """A lazy answer that pastes every table row (label and figures) printed on the pages of the hits and on the
    pages the narrative answer's figures come from, after a random sentence: figures must not score without the
    answer that says which one changed and why."""
    pages = {(h.filing_id, p) for h in hits for p in range(h.page_start, h.page_end + 1)}
    pages |= {(f, p) for f, p, _ in answer.citations}
    if not pages:
        return random_sentence(hits, rng)
    where = " OR ".join("(filing_id = ? AND page_start <= ? AND page_end >= ?)" for _ in pages)
    rows = wh.query_df(f"SELECT text FROM core.chunks WHERE chunk_type = 'table_row' AND is_leaf AND ({where}) "
                       "ORDER BY filing_id, page_start, position", [v for f, p in sorted(pages) for v in (f, p, p)])
    # "Gross margin > Products | 2022: 114,728 | 2021: 105,126 | USD millions" (the context header left out)
    return random_sentence(hits, rng) + " " + " ".join(t.split(" | ", 2)[-1] for t in rows["text"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--financebench", nargs="*", type=Path, default=[])
    ap.add_argument("--demo", type=int, default=0, help="also this many of the home's narrative items (seeded sample)")
    ap.add_argument("--retriever", default="qualitative_routed")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--window", type=int, default=1)
    ap.add_argument("--judge", default=None, help="models.yaml name of the rubric judge (none: key-fact recall only)")
    ap.add_argument("--lazy", nargs="*", choices=["echo", "random_sentence", "table_dump"], default=None,
                    help="also score these lazy answers (no value: both)")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    session = FinragSession.open(os.environ.get("FINRAG_HOME"))
    wh = session.warehouse
    items = [(i, "analysts") for i in financebench_items(args.financebench, wh, ["narrative"])] if args.financebench else []
    if args.demo:
        demo = [i for i in load_qa_items(wh) if i.question_type == "narrative" and page_groups(i)
                and i.source != "financebench"]
        items += [(i, "demo") for i in random.Random(args.seed).sample(demo, min(args.demo, len(demo)))]
    judge = None
    if args.judge:
        from finrag_pipeline.core.evaluation.judge import RubricJudge

        judge = RubricJudge.from_model(args.judge)
    answerer = NarrativeAnswerer(warehouse=wh, window=args.window)
    retriever = session.retriever(args.retriever)
    rng = random.Random(args.seed)
    dump_rng = random.Random(args.seed + 1)   # its own draws: the random sentence stays the same with or without it
    rows = []
    t0 = time.perf_counter()
    for n, (item, set_name) in enumerate(items, start=1):
        hits = retriever.retrieve(item.question, args.k, scope_filters("filing", item.filing_id)).hits
        facts = key_facts(item)
        answers = {"narrative": answerer.answer(item.question, hits, item.periods)}
        texts = {"narrative": answers["narrative"].text if answers["narrative"].response_state == "answered" else None}
        lazy = ["echo", "random_sentence", "table_dump"] if args.lazy == [] else args.lazy or []
        if "echo" in lazy:
            texts["lazy_echo"] = item.question
        if "random_sentence" in lazy:
            texts["lazy_random_sentence"] = random_sentence(hits, rng)
        if "table_dump" in lazy:
            texts["lazy_table_dump"] = table_dump(hits, answers["narrative"], wh, dump_rng)
        for who, text in texts.items():
            recall, why = key_fact_recall(text or "", facts, item.question) if facts else (None, "no key facts")
            row = {"set": set_name, "qa_id": item.qa_id, "answerer": who, "question": item.question,
                   "reference": item.reference_answer, "answer": text, "key_facts": facts,
                   "state": answers["narrative"].response_state if who == "narrative" else "answered",
                   "key_fact_recall": 0.0 if text is None and facts else recall, "recall_note": why,
                   "judge_label": None, "judge_correct": None, "judge_reason": None}
            if text is None:
                row.update(judge_label="Refusal", judge_correct=0.0, judge_reason="abstained (not sent to the judge)")
            elif judge is not None:
                v = judge.judge(question=item.question, reference=item.reference_answer, answer=text)
                row.update(judge_label=v.label, judge_correct=v.correctness, judge_reason=v.reason)
            rows.append(row)
        print(f"  {n}/{len(items)} {item.qa_id} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(items)} questions; {args.retriever}@{args.k} filing scope; narrative window {args.window}; "
          f"judge {judge.name if judge else 'none'}; load {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s")
    print("| set | answerer | n | answered | key-fact recall | recall >= 0.5 | judged Correct (decided / n) |")
    print("|---|---|---|---|---|---|---|")
    for set_name in dict.fromkeys(s for _, s in items):
        for who in dict.fromkeys(r["answerer"] for r in rows):
            group = [r for r in rows if r["set"] == set_name and r["answerer"] == who]
            recalls = [r["key_fact_recall"] for r in group if r["key_fact_recall"] is not None]
            decided = [r["judge_correct"] for r in group if r["judge_correct"] is not None]
            judged = f"{sum(decided) / len(decided):.3f} ({len(decided)} / {len(group)})" if decided and judge else "n/a"
            print(f"| {set_name} | {who} | {len(group)} | {sum(r['answer'] is not None for r in group)} | "
                  f"{sum(recalls) / max(len(recalls), 1):.3f} | {sum(x >= 0.5 for x in recalls) / max(len(recalls), 1):.3f} "
                  f"| {judged} |")
    if judge is not None:
        print(f"judge meter: {judge.meter()}")


if __name__ == "__main__":
    main()
