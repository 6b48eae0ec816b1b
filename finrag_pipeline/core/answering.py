"""What an answerer is, what it returns, and where answerer types register. A leaf module: answerer
modules (core/evaluation/answerers.py, narrative.py, sanity_answerers.py, core/analyst/calculator.py, ...)
import it and it imports none of them, so registering never forms an import cycle with the registry that
builds them (``core/evaluation/answerer_registry.py``), and the analyst's answerers return the same
:class:`AnswerResult` as evaluation's without importing evaluation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from finrag_pipeline.core.models import Hit

Citation = tuple[str, int, str | None]  # (filing_id, page, chunk_id)


@dataclass
class AnswerResult:
    text: str
    citations: list[Citation]
    response_state: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Answerer(Protocol):
    """Anything with a ``name`` and ``answer(question, hits, periods=None) -> AnswerResult``.

    ``periods`` are the asked periods when the caller knows them (QA items do: ["FY2022"]); else
    the answerer reads years from the question.
    """

    name: str

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        ...


ANSWERERS: dict[str, Callable[..., Any]] = {}


def register_answerer(name: str) -> Callable[[Any], Any]:
    """Decorator on an answerer class or factory: ``build_answerer(name, **kwargs)`` builds it."""
    def deco(obj: Any) -> Any:
        ANSWERERS[name] = obj
        return obj
    return deco


def read_answer_json(data: Any, raw: str, cited_key: str, base: Mapping[str, Any],
                     details: dict[str, Any] | None = None) -> AnswerResult | tuple[str, list[Any]]:
    """The one check of a model's answer JSON ``{"answer", <cited_key>: [...], "abstain"}`` (the LLM
    answerer cites pages, the analyst cites fact refs): (answer, what it cites), or the AnswerResult that
    ends the answer: ``abstained`` when it abstains, else ``invalid_output`` for no JSON object / no
    "answer", an empty answer, or nothing cited. The caller resolves what is cited."""
    extra = {**base, **({"details": details} if details is not None else {})}
    if not isinstance(data, dict) or "answer" not in data:
        return AnswerResult(raw, [], "invalid_output", error="JSON without 'answer'", **extra)
    answer = str(data.get("answer") or "").strip()
    abstain = data.get("abstain")
    if abstain is True or str(abstain).lower() == "true":
        return AnswerResult(answer, [], "abstained", **extra)
    if not answer:
        return AnswerResult(raw, [], "invalid_output", error="empty answer without abstain", **extra)
    cited = data.get(cited_key)
    if not isinstance(cited, list) or not cited:
        return AnswerResult(answer, [], "invalid_output", error=f"answer without {cited_key}", **extra)
    return answer, cited
