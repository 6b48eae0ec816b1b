"""Outside systems through the HTTP adapter, against a real server on 127.0.0.1 (issue 27).

The reference system (_reference_system.py) serves hybrid_rrf + the calculator over the Apple FY2022
excerpt home (_excerpt_corpus.py: pages and figures checked in the PDF). Evaluated through the adapter,
its retrieval and answer metrics must equal the same configuration run directly, question by question;
each injected fault must come back as its own recorded state with a row, never a missing one.
"""

from __future__ import annotations

import json
import math

import pytest
from _excerpt_corpus import build_excerpt_home, excerpt_qa_items
from _reference_system import ReferenceSystem, free_port, running_server

from finrag_pipeline.core.evaluation.runner import EvalMatrix
from finrag_pipeline.core.evaluation.systems import SystemsConfig
from finrag_pipeline.core.scoring.metric_registry import ANSWER_METRICS, RETRIEVAL_METRICS

RANK_COLUMNS = ("first_relevant_rank_chunk", "first_relevant_rank_page", "n_retrieved")


@pytest.fixture(scope="module")
def embedder():
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    return load_embedder_config().build()


@pytest.fixture(scope="module")
def home(tmp_path_factory, embedder):
    from finrag_pipeline.core.session import FinragSession
    from finrag_pipeline.core.warehouse import rows_of

    path = tmp_path_factory.mktemp("systems-home")
    corpus = build_excerpt_home(path, embedder=embedder, with_lance=True)
    fid = corpus.filing_id
    items = excerpt_qa_items(corpus)
    corpus.warehouse.replace_rows("qa.items", rows_of(items), where={"filing_id": fid})
    corpus.warehouse.replace_rows("core.corpus_versions", [
        {"corpus_state": "systems-test", "filing_ids": json.dumps([fid]), "n_filings": 1,
         "n_chunks": len(corpus.leaves()), "embedder": "test"}], where={})
    session = FinragSession.open(str(path))
    session.resources.embedder = embedder
    return {"session": session, "fid": fid, "items": items}


@pytest.fixture(scope="module")
def matrix():
    return EvalMatrix.load().narrow(retrievers=["hybrid_rrf"], top_k=[3, 5], scopes=["filing", "corpus"],
                                    models=["calculator"], answers__retriever="hybrid_rrf", answers__k=5,
                                    answers__scope="filing")


@pytest.fixture(scope="module")
def server(home):
    with running_server(ReferenceSystem(home["session"]), slow_seconds=3.0) as srv:
        yield srv


def _http(url: str, **extra) -> dict:
    return {"kind": "http", "url": url, "timeout_s": 1.5, "retries": 2, "backoff_s": 0.05, "concurrency": 2, **extra}


def _rows(session, table: str, where: str, params: list) -> list[dict]:
    return session.warehouse.query_df(f"SELECT * FROM {table} WHERE {where}", params).to_dict("records")


def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == b


def test_http_adapter_equals_the_direct_run_question_by_question(home, matrix, server):
    session, fid = home["session"], home["fid"]
    session.evaluate_retrieval(fid, matrix)
    session.evaluate_answers(fid, matrix)
    systems = SystemsConfig.model_validate({"systems": {"ref_http": _http(server.url, timeout_s=30)}})
    runs, retrieval_rows, answer_rows = session.evaluate_system(fid, "ref_http", matrix, systems=systems)

    direct = {(r["scope"], r["k"], r["qa_id"]): r
              for r in _rows(session, "eval.retrieval_results", "retriever = ?", ["hybrid_rrf"])}
    outside = {(r["scope"], r["k"], r["qa_id"]): r
               for r in _rows(session, "eval.retrieval_results", "retriever = ?", ["ref_http"])}
    assert set(direct) == set(outside) and len(outside) == 2 * 2 * 3   # scopes x k x questions
    for key, row in outside.items():
        # every question answered, the narrative one too (the calculator routes it to the narrative answerer)
        assert row["system_kind"] == "http" and row["status"] == "ok"
        assert row["system_state"] == "ok"
        assert row["n_contexts_unmapped"] == 0 and row["mapping_confidence"] > 0.99, row["notes"]
        for col in (*RETRIEVAL_METRICS, *RANK_COLUMNS):
            assert _same(row[col], direct[key][col]), (key, col, row[col], direct[key][col])
        assert direct[key]["system_kind"] is None
    # not a comparison of zeros: the income-statement questions are found on page 4 at k=3
    assert outside[("filing", 3, "q-net-sales")]["hit_page"] == 1.0
    assert outside[("filing", 3, "q-net-income")]["all_evidence_hit"] == 1.0

    direct_answers = {r["qa_id"]: r for r in _rows(session, "eval.answer_results", "config_name = ?",
                                                   ["calculator@hybrid_rrf@5"])}
    outside_answers = {r["qa_id"]: r for r in _rows(session, "eval.answer_results", "model = ?", ["ref_http"])}
    assert set(direct_answers) == set(outside_answers) == {i.qa_id for i in home["items"]}
    for qa_id, row in outside_answers.items():
        assert row["system_kind"] == "http" and row["config_name"] == "ref_http@5"
        assert row["answer"] == direct_answers[qa_id]["answer"]
        assert json.loads(row["citations"]) == json.loads(direct_answers[qa_id]["citations"])
        for col in ANSWER_METRICS:
            assert _same(row[col], direct_answers[qa_id][col]), (qa_id, col, row[col], direct_answers[qa_id][col])
        assert row["latency_ms"] > 0 and row["cost_usd"] == 0.001   # as the reply reported it
    # the calculator reads Total net sales 394,328 (page 4) through the adapter too
    assert outside_answers["q-net-sales"]["correctness"] == 1.0
    # runs are recorded like any configuration's, with the system named
    assert {r["kind"] for r in runs} == {"retrieval", "answers"}
    assert all(json.loads(r["config"])["system_kind"] == "http" for r in runs)
    # the same system in the leaderboard views, beside the built-in configuration
    current = session.warehouse.query_df(
        "SELECT config_name, scope, avg(hit_page) AS hit FROM eval.retrieval_current WHERE k = 3 GROUP BY ALL")
    by_name = {(r.config_name, r.scope): r.hit for r in current.itertuples()}
    assert by_name[("ref_http@3", "filing")] == by_name[("hybrid_rrf@3", "filing")]


def test_every_injected_fault_is_a_recorded_state_and_no_row_is_missing(home, matrix, server):
    session, fid = home["session"], home["fid"]
    questions = [i.qa_id for i in home["items"]]   # q-net-sales, q-net-income, q-macro-risk
    expected = {}
    for name, faults in (("faulty_a", {"q-net-sales": "slow", "q-net-income": "500", "q-macro-risk": "invalid_json"}),
                         ("faulty_b", {"q-net-sales": "empty", "q-net-income": "not_in_corpus",
                                       "q-macro-risk": "flaky"})):
        server.faults = dict(faults)
        server.requests.clear()
        server.max_in_flight = 0
        systems = SystemsConfig.model_validate({"systems": {name: _http(server.url)}})
        session.evaluate_system(fid, name, matrix, systems=systems)
        expected[name] = faults
        if name == "faulty_a":   # retried twice per scope: 3 attempts each; a timeout is not retried
            assert server.requests["q-net-income"] == 2 * 3 and server.requests["q-net-sales"] == 2

        else:
            # a 500 on its very first request, retried and answered; the second scope answered at once
            assert server.requests["q-macro-risk"] == 2 + 1
    server.faults = {}
    refused = SystemsConfig.model_validate({"systems": {"refused": _http(f"http://127.0.0.1:{free_port()}/rag")}})
    session.evaluate_system(fid, "refused", matrix, systems=refused)

    good = {(r["scope"], r["k"], r["qa_id"]): r
            for r in _rows(session, "eval.retrieval_results", "retriever = ?", ["ref_http"])}
    good_answers = {r["qa_id"]: r for r in _rows(session, "eval.answer_results", "model = ?", ["ref_http"])}
    # flaky (q-macro-risk): retried, then the same reply as the fault-free run (the narrative answer)
    retrieval_state = {"slow": "timeout", "500": "http_error", "invalid_json": "malformed_response",
                       "empty": "empty_answer", "not_in_corpus": "contexts_not_in_corpus",
                       "flaky": good[("filing", 3, "q-macro-risk")]["system_state"]}
    answer_state = {"slow": "timeout", "500": "http_error", "invalid_json": "malformed_response",
                    "empty": "empty_answer", "not_in_corpus": "answered",
                    "flaky": good_answers["q-macro-risk"]["response_state"]}
    assert (retrieval_state["flaky"], answer_state["flaky"]) == ("ok", "answered")
    for name in ("faulty_a", "faulty_b", "refused"):
        rows = _rows(session, "eval.retrieval_results", "retriever = ?", [name])
        assert sorted((r["scope"], r["k"], r["qa_id"]) for r in rows) == sorted(
            (s, k, q) for s in ("filing", "corpus") for k in (3, 5) for q in questions)   # no row missing
        answers = {r["qa_id"]: r for r in _rows(session, "eval.answer_results", "model = ?", [name])}
        assert set(answers) == set(questions)
        for r in rows:
            fault = expected.get(name, {}).get(r["qa_id"])
            state = retrieval_state[fault] if fault else "connection_error"
            assert r["system_state"] == state, (name, r["qa_id"], r["system_state"], r["error"])
            if state in ("timeout", "http_error", "malformed_response", "connection_error"):
                assert r["status"] == "error" and r["error"].startswith(state)
                assert all(r[m] == 0.0 for m in RETRIEVAL_METRICS)   # a failure scores 0, it is not dropped
            elif state == "contexts_not_in_corpus":
                assert r["status"] == "ok" and r["n_contexts_unmapped"] == r["n_contexts"] == 5
                assert r["hit_page"] == 0.0 and "not in the corpus" in r["notes"]
            else:   # an empty answer or a retried reply still delivered the same contexts as the good run
                assert r["status"] == "ok"
                good_row = good[(r["scope"], r["k"], r["qa_id"])]
                assert all(_same(r[m], good_row[m]) for m in RETRIEVAL_METRICS)
        for qa_id, a in answers.items():
            fault = expected.get(name, {}).get(qa_id)
            state = answer_state[fault] if fault else "connection_error"
            assert a["response_state"] == state, (name, qa_id, a["response_state"], a["error"])
            if state not in ("answered", "abstained"):
                assert a["correctness"] == 0.0 and a["error"].startswith(state)
        if name == "faulty_a":
            assert "after 3 attempts" in answers["q-net-income"]["error"]
            assert "no reply within 1.5 s" in answers["q-net-sales"]["error"]
    # the failures are counted in the means: the scored view keeps every row, failed ones as 0
    scored = session.warehouse.query_df(
        "SELECT model, count(*) AS n, sum(is_error::int) AS failed, avg(correctness) AS correctness "
        "FROM eval.answer_current WHERE model IN ('faulty_a', 'refused') GROUP BY model ORDER BY model")
    assert scored.to_dict("records") == [{"model": "faulty_a", "n": 3, "failed": 3, "correctness": 0.0},
                                         {"model": "refused", "n": 3, "failed": 3, "correctness": 0.0}]
    run = session.warehouse.query_df("SELECT status, message FROM eval.runs WHERE kind = 'answers' AND "
                                     "config_name = 'faulty_a@5'").iloc[0]
    assert run["status"] == "error" and json.loads(run["message"]) == {
        "timeout": 1, "http_error": 1, "malformed_response": 1}


def test_missing_secret_is_a_configuration_error_before_any_request(home, matrix, server, monkeypatch):
    from finrag_pipeline.core.config import ConfigError

    monkeypatch.delenv("FINRAG_TEST_TOKEN", raising=False)
    systems = SystemsConfig.model_validate({"systems": {"secret": _http(server.url,
                                                                         bearer_token_env="FINRAG_TEST_TOKEN")}})
    server.requests.clear()
    with pytest.raises(ConfigError, match="FINRAG_TEST_TOKEN"):
        home["session"].evaluate_system(home["fid"], "secret", matrix, systems=systems)
    assert sum(server.requests.values()) == 0


def test_concurrency_limit_holds(home, matrix, server):
    """Six delayed requests (3 questions x 2 scopes): with concurrency 2 exactly two are served at once."""
    server.faults = {i.qa_id: "delay" for i in home["items"]}
    server.max_in_flight = 0
    try:
        systems = SystemsConfig.model_validate({"systems": {"limited": _http(server.url, concurrency=2)}})
        _runs, _retrieval, answers = home["session"].evaluate_system(home["fid"], "limited", matrix, systems=systems)
    finally:
        server.faults = {}
    assert server.max_in_flight == 2
    assert all(a["latency_ms"] >= 500 for a in answers)   # the latency measured per call
