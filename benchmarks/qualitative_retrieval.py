"""All-evidence page hit@k of retrievers on the qualitative questions of a built home, by question kind.

    FINRAG_HOME=/path/to/copy-of-demo-home HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/qualitative_retrieval.py \
        [--retrievers hybrid_rrf qualitative_routed ...] [--baseline hybrid_rrf] [--k 5] [--scopes filing corpus] \
        [--types narrative] [--by label|rule]

Reads the home's accepted QA items (never writes to it) and searches them with the named retrievers of
retrievers.yaml exactly as the evaluation runner does (its scope filters and its page metrics:
core/evaluation/runner.py ``scope_filters`` and ``retrieval_metrics_for``). ``--by label`` selects the
items whose question_type is in ``--types``; ``--by rule`` selects what the question-kind rule
(core/question_kind.py) calls qualitative, whatever the label. Prints, per scope, each
retriever's mean all_evidence_hit over the questions with evidence, and its paired difference to the
baseline (95% bootstrap interval, sign-flip p; core/evaluation/stats.paired_comparison), plus how
often the rule agrees with the labels. On the demo, the generated narrative questions come from MD&A
cause sentences (core/qa/narrative_questions.py): a figure on them is an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.catalog import active_filings, load_filing  # noqa: E402
from finrag_pipeline.core.evaluation.runner import page_groups, retrieval_metrics_for, scope_filters  # noqa: E402
from finrag_pipeline.core.evaluation.stats import paired_comparison  # noqa: E402
from finrag_pipeline.core.models import EvidencePlace, QAItem  # noqa: E402
from finrag_pipeline.core.qa.importers import FilingContext, import_financebench  # noqa: E402
from finrag_pipeline.core.question_kind import classify_question  # noqa: E402
from finrag_pipeline.core.records import load_chunks, load_pages, load_qa_items  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402


def questions_file(path: Path, warehouse) -> list[QAItem]:
    """QA items from a JSONL of {id, filing_id, topic, question, answer, evidence: [{pages, text}]}: each
    evidence entry is one required group whose alternatives are its pages (page level). Fails when an
    evidence text is on none of its pages (as the project's parser reads them)."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        groups = []
        for ev in rec["evidence"]:
            found = []
            for page in ev["pages"]:
                rows = warehouse.query_df("SELECT text FROM core.pages WHERE filing_id = ? AND page_number = ?",
                                          [rec["filing_id"], page])
                if len(rows) and " ".join(ev["text"].split()) in " ".join(str(rows.iloc[0]["text"]).split()):
                    found.append(page)
            if not found:
                raise SystemExit(f"{rec['id']}: evidence text {ev['text']!r} is on none of pages {ev['pages']} "
                                 f"of {rec['filing_id']}")
            groups.append([EvidencePlace(chunk_id=None, page=p, filing_id=rec["filing_id"]) for p in ev["pages"]])
        items.append(QAItem(qa_id=rec["id"], filing_id=rec["filing_id"], question=rec["question"],
                            reference_answer=rec["answer"], question_type="narrative", evidence=groups,
                            source="qualitative_questions", metadata={"topic": rec.get("topic")}))
    return items


def financebench_items(paths: list[Path], warehouse, categories: list[str] | None) -> list[QAItem]:
    """The items of FinanceBench JSONL files (the analysts' sets) imported against the home's filings, read
    only (nothing is written into the home); ``categories``: only these ``question_category`` values."""
    contexts = [FilingContext(load_filing(warehouse, fid), load_pages(warehouse, fid), load_chunks(warehouse, fid))
                for fid in active_filings(warehouse)]
    items = []
    for path in paths:
        for item in import_financebench(path, contexts).items:
            category = (item.metadata or {}).get("question_category") or item.question_type
            if page_groups(item) and (not categories or category in categories):
                items.append(item)
    return items


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--retrievers", nargs="+", default=["hybrid_rrf", "decomposed_routed", "hybrid_rrf_qualitative",
                                                        "qualitative_routed"])
    ap.add_argument("--baseline", default="hybrid_rrf")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--scopes", nargs="+", default=["filing", "corpus"])
    ap.add_argument("--types", nargs="+", default=["narrative"])
    ap.add_argument("--by", choices=["label", "rule"], default="label")
    ap.add_argument("--metric", default="all_evidence_hit")
    ap.add_argument("--sources", nargs="*", default=None, help="only items of these sources (generated, financebench, ...)")
    ap.add_argument("--misses", action="store_true", help="print the questions the last retriever misses")
    ap.add_argument("--detail", action="store_true", help="print every question's value under each retriever")
    ap.add_argument("--chunking", default=None, help="a chunking variant of ingest.yaml, built (`finrag variants build`); "
                    "page-level metrics only, as the runner does for variants")
    ap.add_argument("--questions", default=None,
                    help="a JSONL of qualitative questions with evidence pages (benchmarks/qualitative_questions.jsonl) "
                         "instead of the home's QA items; each evidence text is checked on its pages first")
    ap.add_argument("--financebench", nargs="+", type=Path, default=None,
                    help="FinanceBench JSONL files (the analysts' sets of finrag_pipeline_tests/data/external/) imported "
                         "against the home's filings instead of its QA items (nothing is written)")
    ap.add_argument("--categories", nargs="*", default=None,
                    help="with --financebench: only these question_category values (narrative, judgement, ...)")
    args = ap.parse_args()
    session = FinragSession.open(os.environ.get("FINRAG_HOME"))
    if args.financebench:
        items = financebench_items(args.financebench, session.warehouse, args.categories)
    elif args.questions:
        items = questions_file(Path(args.questions), session.warehouse)
    else:
        items = [i for i in load_qa_items(session.warehouse) if page_groups(i)
                 and (args.sources is None or i.source in args.sources)]
    labelled = [i for i in items if i.question_type in args.types]
    ruled = [i for i in items if classify_question(i.question).qualitative]
    agree = Counter((i.question_type in args.types, classify_question(i.question).qualitative) for i in items)
    print(f"{len(items)} questions with evidence; labelled {args.types}: {len(labelled)}; qualitative by the rule: "
          f"{len(ruled)}; (label, rule) counts: {dict(agree)}")
    chosen = labelled if args.by == "label" else ruled
    names = list(dict.fromkeys([args.baseline, *args.retrievers]))
    for scope in args.scopes:
        values: dict[str, list[float | None]] = {}
        latency: dict[str, float] = {}
        for name in names:
            retriever = session.retriever_factory(name, args.chunking)
            t0 = time.perf_counter()
            vals = []
            for item in chosen:
                result = retriever.retrieve(item.question, args.k, scope_filters(scope, item.filing_id))
                row, status, _ = retrieval_metrics_for(result.hits, item, args.k, top_pages=result.top_pages,
                                                       chunk_level=args.chunking is None)
                vals.append(row.get(args.metric) if status == "ok" else None)
            values[name] = vals
            latency[name] = (time.perf_counter() - t0) * 1000 / max(len(chosen), 1)
        print(f"\nscope {scope}, {args.metric}@{args.k}, n={len(chosen)} ({args.by}), chunking {args.chunking or 'default'}:")
        print("| retriever | mean | diff vs " + args.baseline + " [95% CI] | p | ms/question |")
        print("|---|---|---|---|---|")
        base = values[args.baseline]
        for name in names:
            v = [x for x in values[name] if x is not None]
            mean = sum(v) / len(v) if v else float("nan")
            if name == args.baseline:
                diff = "-"
                p = "-"
            else:
                c = paired_comparison(base, values[name], n_boot=2000, n_perm=10000)
                diff = f"{c.mean_diff:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}]" if c.mean_diff is not None else "n/a"
                p = f"{c.p_value:.4f}" if c.p_value is not None else "n/a"
            print(f"| {name} | {mean:.3f} | {diff} | {p} | {latency[name]:.0f} |")
        if args.detail:
            print("per question (" + ", ".join(names) + "):")
            for n, item in enumerate(chosen):
                marks = " ".join("-" if values[name][n] is None else f"{values[name][n]:.0f}" for name in names)
                print(f"  {marks}  {item.qa_id} {item.filing_id} {item.question[:110]}")
        if args.misses:
            for item, v in zip(chosen, values[names[-1]], strict=True):
                if v == 0:
                    print(f"  miss: {item.filing_id} {item.question} (evidence pages "
                          f"{sorted(p for g in page_groups(item) for _, p in g)})")


if __name__ == "__main__":
    main()
