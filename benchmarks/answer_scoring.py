"""Benchmark: the extractive answerer re-measured under commit-to-an-answer scoring (issue 12).

    PYTHONPATH=$PWD:finrag_pipeline_tests .venv/bin/python benchmarks/answer_scoring.py [SAMPLE ...]

Model-free QA sets of the PDF sample filings (the tests' fast pypdfium2 parse), a real Tantivy BM25
index of their chunks, k=5, filing scope; every answer config of the default matrix (extractive + the
four sanity answerers). Each answer is also scored with the OLD figure_match (answer_metrics.py at
commit dca8331, read from git) so the two can be compared on the same answers.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from _qa_sample import PDF_SAMPLES, load_sample

from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_answer_eval
from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.qa import QAConfig
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.retrieval.lexical import BM25Retriever

OLD_SCORING = "dca8331:finrag_pipeline/core/scoring/answer_metrics.py"


def old_answer_metrics():
    source = subprocess.run(["git", "show", OLD_SCORING], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_answer_metrics.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_answer_metrics", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_answer_metrics"] = module
    spec.loader.exec_module(module)
    return module


def main(samples: list[str]) -> None:
    old = old_answer_metrics()
    index = TantivyIndex(tempfile.mkdtemp())
    corpus = []
    for name in samples:
        s = load_sample(name)
        items, _ = generate_model_free(s.meta, s.pages, s.table_rows, s.facts, s.chunks, QAConfig())
        index.upsert_filing(s.meta.filing_id, s.chunks)
        corpus.append((s, items))
    retriever = BM25Retriever(index)
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["bm25"], "top_k": [5]},
                                        "answers": {"models": ["extractive"], "retriever": "bm25", "k": 5}})
    rows = []
    for s, items in corpus:
        by_id = {i.qa_id: i for i in items}
        _, result = run_answer_eval(items, lambda n, c: retriever, matrix, s.meta.filing_id, "benchmark",
                                    version="benchmark")
        for row in result:
            item = by_id[row["qa_id"]]
            refs = old.reference_figures(item.answer_figures, item.reference_answer)
            if not row["answerable"]:
                row["old_figure_match"] = None
            elif row["response_state"] != "answered":
                row["old_figure_match"] = 0.0          # the old policy: a non-answer scores 0
            else:
                row["old_figure_match"] = old.figure_match(row["answer"] or "", refs)[0]
            rows.append(row)
    df = pd.DataFrame(rows)
    answerable = df[df.answerable]
    print("filings:", [s.meta.filing_id for s, _ in corpus], "questions:", df.qa_id.nunique(),
          "answerable:", answerable.qa_id.nunique())
    cols = ["old_figure_match", "correctness", "non_committal", "grounded", "period_ok", "citation_precision",
            "block_citation_precision", "block_citation_recall"]
    print(answerable.groupby("model")[cols].mean().round(3).to_string())
    print(df[~df.answerable].groupby("model")[["abstention_correct"]].mean().round(3).to_string())
    ex = answerable[answerable.model == "extractive"]
    print(ex.groupby("question_type")[["old_figure_match", "correctness", "non_committal"]].mean().round(3)
          .assign(n=ex.groupby("question_type").size()).to_string())


if __name__ == "__main__":
    main(sys.argv[1:] or PDF_SAMPLES)
