"""Evaluate an outside RAG system (core/evaluation/systems.py) on one filing's QA set.

The system is asked every question once per scope (``retrieval.scopes`` of the matrix, plus
``answers.scope``), with ``k`` = the system's own ``k`` or the matrix's largest top-k. Its contexts are
placed in the corpus (core/evaluation/context_mapping.py) and then scored by the SAME functions as the
built-in configurations: the runner's retrieval row (``retrieval_metrics_for``: every k of ``top_k`` is a
prefix of the one ranking) and its answer row (``score_answer`` through ``_answer_row``). The rows go to
eval.retrieval_results / eval.answer_results / eval.runs like any configuration's (config name
``<system>@<k>``, retriever and model = the system name, ``system_kind`` set), so the views, the
leaderboard, the marts, the gate and the report read them unchanged.

A call that failed is a row, never a gap: a retrieval row with status ``error`` (scored 0, the reason in
``error``) and an answer row in the failure state (timeout, http_error, ...), both with ``system_state``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from finrag_pipeline.core.answering import AnswerResult
from finrag_pipeline.core.evaluation.context_mapping import ContextMapper, mapping_summary
from finrag_pipeline.core.evaluation.runner import (
    ANSWER_COLUMNS,
    RETRIEVAL_COLUMNS,
    EvalMatrix,
    RetrievalConfig,
    _answer_row,
    _ChanceCache,
    _now,
    _retrieval_row,
    code_version,
    ordered_hits,
    page_groups,
    scope_filters,
)
from finrag_pipeline.core.evaluation.systems import SystemCall, SystemRequest, SystemSpec, system_config_hash
from finrag_pipeline.core.models import QAItem, stable_id
from finrag_pipeline.core.scoring.response_states import ANSWERED, FAILURE_STATES

# A call in one of these states returned nothing usable: no contexts to score.
NO_RESPONSE_STATES = frozenset({"timeout", "http_error", "connection_error", "malformed_response",
                                "missing_answer", "backend_error"})
CONTEXTS_NOT_IN_CORPUS = "contexts_not_in_corpus"


def built_in_names() -> set[str]:
    """Names a system may not take: its rows would merge with a built-in configuration's in the views and
    marts (retriever = the system name; answer model = the system name). retrievers.yaml, the registered
    answerers and models.yaml."""
    from finrag_pipeline.core.evaluation.answerer_registry import answerer_names
    from finrag_pipeline.core.evaluation.runner import _retrievers_yaml_specs
    from finrag_pipeline.core.llm.registry import load_model_registry

    names = set(_retrievers_yaml_specs()) | set(answerer_names())
    with contextlib.suppress(OSError, ValueError):   # no models.yaml: no model names to collide with
        names |= set(load_model_registry().models)
    return names


def check_system_name(name: str) -> None:
    from finrag_pipeline.core.config import ConfigError

    if name in built_in_names():
        raise ConfigError(f"system {name!r} has the name of a built-in retriever, answerer or model; rename it in "
                          "systems.yaml (its rows would merge with that configuration's)")


def system_call_k(spec: SystemSpec, matrix: EvalMatrix) -> int:
    return spec.k or max(matrix.retrieval.top_k)


def run_system_eval(qa_items: Sequence[QAItem], name: str, spec: SystemSpec, mapper: ContextMapper,
                    matrix: EvalMatrix, filing_id: str, corpus_state: str, *,
                    n_filings_in_corpus: int | None = None, judge: Any = None, chance_pool: Any = None,
                    dagster_run_id: str | None = None, version: str | None = None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """-> (eval.runs rows, eval.retrieval_results rows, eval.answer_results rows) of system ``name``."""
    version = version or code_version()
    items = list(qa_items)
    call_k = system_call_k(spec, matrix)
    ks = list(matrix.retrieval.top_k)
    answer_scope = matrix.answers.scope
    scopes = list(dict.fromkeys([*matrix.retrieval.scopes, answer_scope]))
    chances = _ChanceCache(chance_pool, ks)
    run_rows: list[dict[str, Any]] = []
    retrieval_rows: list[dict[str, Any]] = []
    answer_rows: list[dict[str, Any]] = []
    for scope in scopes:
        filters = scope_filters(scope, filing_id)
        started = _now()
        calls = spec.call_many([SystemRequest(question=i.question, filing_id=filing_id, scope=scope, qa_id=i.qa_id,
                                              k=call_k) for i in items])
        finished = _now()
        mapped = [_map(call, mapper, filters, call_k) for call in calls]
        if scope in matrix.retrieval.scopes:
            for k in ks:
                cfg = RetrievalConfig(retriever=name, k=k)
                chash = system_config_hash(name, spec, k, call_k)
                run_id = stable_id("system-retrieval", name, chash, filing_id, scope, corpus_state)
                counts: dict[str, int] = {}
                for item, call, (hits, summary) in zip(items, calls, mapped, strict=True):
                    error = f"{call.state}: {call.reason}" if call.state in NO_RESPONSE_STATES else None
                    row = _retrieval_row(item, hits, call.latency_ms, error, cfg, True, None)
                    row.update(chances.columns(item, None, scope, filters, k, True))
                    state = _row_state(call, summary)
                    counts[state] = counts.get(state, 0) + 1
                    if error is None:
                        row["notes"] = "; ".join(x for x in (row.get("notes"), summary["mapping_note"]) if x)
                    row.update(run_id=run_id, filing_id=filing_id, scope=scope, config_name=f"{name}@{k}",
                               retriever=name, k=k, chunking=None, config_hash=chash, qa_id=item.qa_id,
                               question_type=item.question_type, corpus_state=corpus_state,
                               n_filings_in_corpus=n_filings_in_corpus, evaluated_at=finished,
                               system_kind=spec.kind, system_state=state,
                               **{c: summary[c] for c in ("n_contexts", "n_contexts_unmapped", "mapping_confidence")})
                    retrieval_rows.append({c: row.get(c) for c in RETRIEVAL_COLUMNS})
                run_rows.append(_run_row(run_id, "retrieval", f"{name}@{k}", chash, name, spec, scope, filing_id,
                                         corpus_state, n_filings_in_corpus, len(items), counts, dagster_run_id,
                                         version, started, finished, k=k, call_k=call_k))
        if scope == answer_scope:
            chash = system_config_hash(name, spec, call_k, call_k)
            run_id = stable_id("system-answers", name, chash, filing_id, scope, corpus_state,
                               judge.name if judge else "")
            counts = {}
            for item, call, (hits, _summary) in zip(items, calls, mapped, strict=True):
                result = answer_result(call)
                counts[result.response_state] = counts.get(result.response_state, 0) + 1
                row = _answer_row(item, result, hits, judge)
                row.update(run_id=run_id, filing_id=filing_id, config_name=f"{name}@{call_k}", config_hash=chash,
                           model=name, prompt_type="system", temperature=0.0, top_p=1.0, retriever=name, k=call_k,
                           qa_id=item.qa_id, question_type=item.question_type, answerable=bool(page_groups(item)),
                           is_sanity=False, evaluated_at=_now(), system_kind=spec.kind)
                answer_rows.append({c: row.get(c) for c in ANSWER_COLUMNS})
            run_rows.append(_run_row(run_id, "answers", f"{name}@{call_k}", chash, name, spec, scope, filing_id,
                                     corpus_state, n_filings_in_corpus, len(items), counts, dagster_run_id, version,
                                     started, _now(), k=call_k, call_k=call_k))
    return run_rows, retrieval_rows, answer_rows


def _map(call: SystemCall, mapper: ContextMapper, filters: Any, k: int) -> tuple[list, dict[str, Any]]:
    """The call's first ``k`` contexts as ranked hits (asked for k: more would only pad the page ranking)."""
    if call.state in NO_RESPONSE_STATES:
        return [], mapping_summary([])
    hits, placements = mapper.hits(call.contexts[:k], filters)
    return ordered_hits(hits), mapping_summary(placements)


def _row_state(call: SystemCall, summary: dict[str, Any]) -> str:
    """The call's state; a call that delivered contexts of which some are not in the corpus says so."""
    if call.state == "ok" and summary["n_contexts_unmapped"]:
        return CONTEXTS_NOT_IN_CORPUS
    return call.state


def answer_result(call: SystemCall) -> AnswerResult:
    """A system call as the AnswerResult the answer scoring reads (response state, citations, cost, latency)."""
    response = call.response
    state = {"ok": ANSWERED}.get(call.state, call.state)
    text = (response.answer or "") if response is not None else ""
    citations = [(c.filing_id, int(c.page), c.chunk_id) for c in response.citations] if response is not None else []
    error = f"{call.state}: {call.reason}" if state in FAILURE_STATES else None
    return AnswerResult(text, citations if state == ANSWERED else [], state,
                        latency_ms=call.latency_ms or 0.0, cost_usd=call.cost_usd or 0.0, error=error,
                        details={"attempts": call.attempts})


def _run_row(run_id: str, kind: str, config_name: str, chash: str, name: str, spec: SystemSpec, scope: str,
             filing_id: str, corpus_state: str, n_filings: int | None, n: int, counts: dict[str, int],
             dagster_run_id: str | None, version: str, started: Any, finished: Any, *, k: int, call_k: int
             ) -> dict[str, Any]:
    # a retrieval run failed where no contexts came back; an answer run where the answer failed
    failing = NO_RESPONSE_STATES if kind == "retrieval" else FAILURE_STATES
    failed = sum(v for s, v in counts.items() if s in failing)
    return {
        "run_id": run_id, "kind": kind, "config_name": config_name, "config_hash": chash,
        "config": json.dumps({"system": name, "system_kind": spec.kind, "k": k, "call_k": call_k, "scope": scope,
                              **spec.fingerprint()}, sort_keys=True, default=str),
        "filing_id": filing_id, "scope": scope, "code_version": version, "corpus_state": corpus_state,
        "n_filings_in_corpus": n_filings, "n_questions": n,
        "status": "ok" if not failed else ("error" if failed == n else "partial"),
        "message": json.dumps(counts, sort_keys=True), "dagster_run_id": dagster_run_id,
        "started_at": started, "finished_at": finished}
