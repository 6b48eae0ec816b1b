"""Two evaluations that differ only in ``retriever_overrides`` are two configurations: each gets its own
config_hash and run_id, and neither overwrites the other's rows (the runner used to hash retrievers.yaml as
written while the session built the retrievers with the overrides, so an overridden launchpad run took the
default run's ids and replaced its rows)."""

from __future__ import annotations

import json

from _excerpt_corpus import build_excerpt_home, excerpt_qa_items

from finrag_pipeline.core.evaluation.runner import EvalMatrix
from finrag_pipeline.core.session import FinragSession
from finrag_pipeline.core.warehouse import rows_of

OVERRIDE = {"bm25": {"fields": ["text"]}}


def _home(tmp_path):
    corpus = build_excerpt_home(tmp_path / "home")
    fid = corpus.filing_id
    wh = corpus.warehouse
    wh.replace_rows("qa.items", rows_of(excerpt_qa_items(corpus)), where={"filing_id": fid})
    wh.replace_rows("core.corpus_versions", [{"corpus_state": "s1", "filing_ids": json.dumps([fid]), "n_filings": 1,
                                              "n_chunks": len(corpus.leaves()), "embedder": "test"}],
                    where={"corpus_state": "s1"})
    return corpus


def test_overridden_runs_get_their_own_ids_and_both_rows_survive(tmp_path):
    corpus = _home(tmp_path)
    fid = corpus.filing_id
    matrix = EvalMatrix.load().narrow(retrievers=["bm25"], top_k=[3], scopes=["filing"],
                                      answers__retriever="bm25", answers__k=3, answers__models=[])
    plain = FinragSession.open(str(corpus.paths.home))
    overridden = FinragSession.open(str(corpus.paths.home), retriever_overrides=OVERRIDE)
    assert overridden.retriever_specs()["bm25"].fields == ["text"]
    assert plain.retriever_specs()["bm25"].fields is None

    runs_a, rows_a = plain.evaluate_retrieval(fid, matrix)
    runs_b, rows_b = overridden.evaluate_retrieval(fid, matrix)
    assert rows_a and rows_b
    assert {r["config_hash"] for r in runs_a}.isdisjoint({r["config_hash"] for r in runs_b})
    assert {r["run_id"] for r in runs_a}.isdisjoint({r["run_id"] for r in runs_b})

    ans_a, _ = plain.evaluate_answers(fid, matrix)
    ans_b, _ = overridden.evaluate_answers(fid, matrix)
    assert ans_a and {r["run_id"] for r in ans_a}.isdisjoint({r["run_id"] for r in ans_b})

    con = corpus.warehouse
    n_retrieval = con.query_df("SELECT count(DISTINCT run_id) AS n FROM eval.retrieval_results")["n"][0]
    assert n_retrieval == len(runs_a) + len(runs_b)
    stored = con.query_df("SELECT run_id, count(*) AS n FROM eval.retrieval_results GROUP BY run_id")
    assert dict(zip(stored["run_id"], stored["n"], strict=True)) == {
        **{r: len(rows_a) // len(runs_a) for r in {x["run_id"] for x in runs_a}},
        **{r: len(rows_b) // len(runs_b) for r in {x["run_id"] for x in runs_b}}}

    # the same overrides again: the same ids, its rows replaced, not duplicated
    runs_b2, _ = FinragSession.open(str(corpus.paths.home), retriever_overrides=OVERRIDE).evaluate_retrieval(fid, matrix)
    assert {r["run_id"] for r in runs_b2} == {r["run_id"] for r in runs_b}
    assert con.query_df("SELECT count(*) AS n FROM eval.retrieval_results")["n"][0] == len(rows_a) + len(rows_b)
