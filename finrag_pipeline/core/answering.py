"""What an answerer is, what it returns, and where answerer types register. A leaf module: answerer
modules (core/evaluation/answerers.py, narrative.py, sanity_answerers.py, core/analyst/calculator.py, ...)
import it and it imports none of them, so registering never forms an import cycle with the registry that
builds them (``core/evaluation/answerer_registry.py``), and the analyst's answerers return the same
:class:`AnswerResult` as evaluation's without importing evaluation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
