"""The analyst LLM answerers with a local model, on a demo home's questions: `analyst_tools` (function
calling) or `analyst_structured` (the calculator's lookups as a fact sheet in one prompt).

    nice -n 10 python benchmarks/local_llm_analyst.py --home COPY_OF_DEMO_HOME --set financebench \
        --model local/qwen2.5-1.5b [--answerer tools|structured] [--limit N] [--out results.jsonl]
    nice -n 10 python benchmarks/local_llm_analyst.py --home COPY_OF_DEMO_HOME --set generated --limit 15

For each question of the set (qa.items.source; `generated` is sampled with --seed), bm25 top --k
hits in the question's filing, then the same hits to the `calculator` (the baseline: it is what the
tools call) and to llm_answerers.ToolCallingAnswerer over the local model (function calling in
Qwen2.5's format, core/llm/qwen_tools.py). Scored by the evaluation's own rule
(answer_metrics.score_answer with runner.answer_key). Prints one JSON line per question (also to
--out) and a summary: mean correctness of each answerer on answerable questions, response states,
seconds per question, tokens. Record the load average beside it: the machine is shared.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import time

from finrag_pipeline.core.analyst import StructuredPromptAnswerer, ToolCallingAnswerer
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.evaluation.runner import answer_key, cited_texts
from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.records import qa_item_from_row
from finrag_pipeline.core.scoring.answer_metrics import score_answer
from finrag_pipeline.core.session import FinragSession


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--set", dest="qset", default="financebench")
    ap.add_argument("--model", default="local/qwen2.5-1.5b")
    ap.add_argument("--answerer", choices=("tools", "structured"), default="tools")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    session = FinragSession.open(args.home)
    wh = session.warehouse
    rows = wh.query_df("SELECT * FROM qa.items WHERE source = ? ORDER BY qa_id", [args.qset]).to_dict("records")
    items = [qa_item_from_row(r) for r in rows]
    if args.limit and len(items) > args.limit:
        items = sorted(random.Random(args.seed).sample(items, args.limit), key=lambda i: i.qa_id)
    calculator = calculator_answerer(warehouse=wh)
    if args.answerer == "tools":
        llm = ToolCallingAnswerer(args.model, calculator, temperature=0.0, max_tokens=args.max_tokens,
                                  timeout=args.timeout)
    else:
        from finrag_pipeline.core.llm.client import LLMClient

        llm = StructuredPromptAnswerer(LLMClient(args.model, timeout_s=args.timeout, max_retries=0, use_cache=False,
                                                 temperature=0.0), calculator, max_tokens=args.max_tokens)
    retriever = session.retriever("bm25")
    out = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed at the end
    scores: dict[str, list[float]] = collections.defaultdict(list)
    not_scored: collections.Counter = collections.Counter()
    states: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    seconds, tokens = [], []
    for item in items:
        hits = retriever.retrieve(item.question, args.k, SearchFilters(filing_ids=(item.filing_id,))).hits
        key = answer_key(item)
        record = {"qa_id": item.qa_id, "type": item.question_type, "question": item.question,
                  "reference": item.reference_answer}
        for name, answerer in (("calculator", calculator), ("llm_tools", llm)):
            t0 = time.perf_counter()
            result = answerer.answer(item.question, hits, item.periods or None)
            dt = time.perf_counter() - t0
            metrics, _ = score_answer(answer=result.text, response_state=result.response_state,
                                      citations=result.citations, cited_texts=cited_texts(result, hits), key=key)
            states[name][result.response_state] += 1
            if key.answerable and metrics["correctness"] is not None:
                scores[name].append(float(metrics["correctness"]))
            elif key.answerable:
                not_scored[name] += 1  # NULL: not computable (reason in the notes); left out of the mean
            record[name] = {"answer": result.text[:300], "state": result.response_state,
                            "correctness": metrics["correctness"], "seconds": round(dt, 1),
                            "error": (result.error or "")[:200],
                            "tool_calls": len((result.details or {}).get("tool_calls") or [])}
            if name == "llm_tools":
                seconds.append(dt)
                tokens.append((result.prompt_tokens, result.completion_tokens))
        line = json.dumps(record, default=str)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    summary = {
        "set": args.qset, "model": args.model, "answerer": args.answerer, "n": len(items), "answerable": len(scores["llm_tools"]) + not_scored["llm_tools"],
        "correctness": {n: round(sum(v) / len(v), 3) if v else None for n, v in scores.items()},
        "correctness_n": {n: len(v) for n, v in scores.items()}, "correctness_null": dict(not_scored),
        "states": {n: dict(c) for n, c in states.items()},
        "llm_seconds_per_question": round(sum(seconds) / len(seconds), 1) if seconds else None,
        "llm_tokens_per_question": [round(sum(t[i] for t in tokens) / len(tokens)) for i in (0, 1)] if tokens else None,
        "loadavg": os.getloadavg()[0],
    }
    print(json.dumps({"summary": summary}))
    if out:
        out.write(json.dumps({"summary": summary}) + "\n")
        out.close()


if __name__ == "__main__":
    main()
