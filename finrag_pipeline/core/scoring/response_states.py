"""Answer response states, defined once: answerers set them, scoring, the leaderboard, the report and the
dbt staging model (through the generated macro ``answer_failure_states()``) read them from here."""

from __future__ import annotations

ANSWERED = "answered"
# An outside system under test (core/evaluation/systems.py) failed to deliver an answer: no reply in time,
# an HTTP error status, no connection, a body that is not the contract's JSON, an empty answer, or (a file
# of answers) no line for the question. Each is its own state so a report can say which; all score 0.
SYSTEM_FAILURE_STATES = frozenset({"timeout", "http_error", "connection_error", "malformed_response",
                                   "empty_answer", "missing_answer"})
# The answerer failed: the answer scores 0 on every metric that applies (rates excepted).
FAILURE_STATES = frozenset({"backend_error", "invalid_output"}) | SYSTEM_FAILURE_STATES
NON_ANSWER_STATES = frozenset({"abstained", "insufficient_context", "no_evidence"})
RESPONSE_STATES = frozenset({ANSWERED}) | FAILURE_STATES | NON_ANSWER_STATES
# States a stored row may carry that count as a failure when results are read: the failures, plus the
# generic 'error' of rows written before the states above existed.
STORED_FAILURE_STATES = FAILURE_STATES | {"error"}

# An LLM client's state (core/llm/client.py ResponseState) -> the answer's response state, for every answerer
# that calls a model. "unavailable" (a local model not installed) is a backend failure; its error names the
# install command. A state the client does not define is a backend failure too.
CLIENT_STATES = {"ok": ANSWERED, "timeout": "backend_error", "backend_error": "backend_error",
                 "unavailable": "backend_error", "invalid_output": "invalid_output", "empty": "invalid_output"}


def from_client_state(state: str | None) -> str:
    """``"timeout"`` -> ``"backend_error"``, ``"empty"`` -> ``"invalid_output"``, ``"ok"`` -> ``"answered"``."""
    return CLIENT_STATES.get(state or "", "backend_error")
