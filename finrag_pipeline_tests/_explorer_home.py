"""A small real FINRAG_HOME for the web explorer's tests: the 4-page Apple FY2022 excerpt ingested,
chunked and indexed (BM25 + vectors), hand-made questions, a real retrieval and answer evaluation,
the bootstrap leaderboard, the dbt marts, and a published analysts' snapshot.

Questions (evidence checked in the PDF, see _excerpt_corpus.py):
  * the three of :func:`excerpt_qa_items` (net sales and net income on page 4, risk factors on page 2);
  * ``q-script``: net sales again, its text holding ``<script>`` (must show as text);
  * ``q-cover``: asks for net income but its evidence is the cover page (page 1), so at k=1 every
    configuration misses it: the failure browser's "every configuration misses" list is not empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _excerpt_corpus import build_excerpt_home, excerpt_qa_items
from _synthetic_warehouse import run_dbt_build

from finrag_pipeline.core.models import QAItem

SCRIPT_QUESTION = "<script>window.__finrag_xss = 1</script> What were Apple's total net sales in fiscal 2022?"
RETRIEVERS = ["bm25", "hybrid_rrf"]
TOP_K = [1, 3]


def build_explorer_home(home: Path, embedder: Any) -> dict[str, Any]:
    from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics
    from finrag_pipeline.core.evaluation.runner import EvalMatrix, StatsConfig
    from finrag_pipeline.core.session import FinragSession
    from finrag_pipeline.core.warehouse import publish_snapshot, rows_of

    corpus = build_excerpt_home(home, embedder=embedder, with_lance=True)
    fid = corpus.filing_id
    items = excerpt_qa_items(corpus)
    items.append(QAItem(qa_id="q-script", filing_id=fid, question=SCRIPT_QUESTION,
                        reference_answer="$394,328 million <b>bold?</b>", question_type="numerical",
                        periods=["FY2022"], evidence=[corpus.evidence(4, "394,328")], generator="hand"))
    items.append(QAItem(qa_id="q-cover", filing_id=fid, question="What was Apple's net income in fiscal 2022?",
                        reference_answer="(evidence deliberately on the cover page)", question_type="factual",
                        periods=["FY2022"], evidence=[corpus.evidence(1, "Apple Inc.")], generator="hand"))
    wh = corpus.warehouse
    wh.replace_rows("qa.items", rows_of(items), where={"filing_id": fid})
    n_leaves = len(corpus.leaves())
    wh.replace_rows("core.corpus_versions", [{"corpus_state": "explorer-test-state", "filing_ids": json.dumps([fid]),
                                              "n_filings": 1, "n_chunks": n_leaves, "embedder": "test"}],
                    where={"corpus_state": "explorer-test-state"})
    wh.replace_rows("core.ingest_log", [
        {"file_sha256": corpus.parsed.meta.content_sha256, "original_name": "apple_2022_excerpt.pdf",
         "source_path": corpus.parsed.meta.source_path, "filing_id": fid, "status": "registered",
         "message": "new filing", "stage": "register"},
        {"file_sha256": "0" * 64, "original_name": "broken.pdf", "source_path": "quarantine/broken.pdf",
         "filing_id": None, "status": "corrupt", "message": "PDF could not be opened: Failed to load document",
         "stage": "register"},
    ], where={})

    session = FinragSession.open(str(home))
    session.resources.embedder = embedder
    matrix = EvalMatrix.load().narrow(retrievers=RETRIEVERS, top_k=TOP_K, scopes=["filing", "corpus"],
                                      n_boot=200, n_perm=200)
    session.evaluate_retrieval(fid, matrix)
    session.evaluate_answers(fid, matrix.narrow(answers__retriever="bm25", answers__k=3))
    build_eval_statistics(wh, StatsConfig(n_boot=200, n_perm=200))
    built = run_dbt_build(wh.path, home / "dbt-scratch")   # the marts every leaderboard reads
    assert built.returncode == 0, built.stdout[-3000:]
    publish_snapshot(wh, corpus.paths.warehouse_snapshot)
    return {"corpus": corpus, "items": items, "paths": corpus.paths}
