"""The answerer registry: a new answerer registers its name, no factory is edited.

    @register_answerer("extractive")
    class ExtractiveAnswerer: ...

    @register_answerer("llm")            # a factory works too
    def llm_answerer(model, prompt_type="standard", **kw) -> Answerer: ...

    build_answerer("extractive")                      # -> Answerer
    answerer_for_config(AnswerConfig(...))            # the evaluation matrix's answer configs

A registered class or factory is called with the keyword arguments given to :func:`build_answerer`
that it accepts (others, such as ``temperature`` for an answerer without decoding, are dropped).
Answerers keep the protocol of core/evaluation/answerers.py: ``.name`` and
``answer(question, hits, periods=None) -> AnswerResult``. Names not registered are LLM model names
from assets_config/models.yaml (the ``llm`` entry builds them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from finrag_pipeline.core.answering import ANSWERERS, register_answerer

# Registered by modules imported on first use, so registering never needs this file edited.
_BUILTIN_MODULES = ("finrag_pipeline.core.evaluation.answerers", "finrag_pipeline.core.evaluation.sanity_answerers",
                    "finrag_pipeline.core.evaluation.analyst_answerers", "finrag_pipeline.core.evaluation.narrative")
# An answer-matrix model that is not a registered answerer name is a models.yaml LLM, built by this entry.
LLM_ANSWERER = "llm"



def _ensure_builtins() -> None:
    import importlib

    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def answerer_names() -> list[str]:
    _ensure_builtins()
    return sorted(ANSWERERS)


def build_answerer(name: str, /, **kwargs: Any) -> Any:
    """The answerer registered under ``name``; unknown name -> ValueError listing the valid ones."""
    _ensure_builtins()
    if name not in ANSWERERS:
        raise ValueError(f"unknown answerer {name!r}; registered: {sorted(ANSWERERS)} "
                         f"(an LLM from models.yaml is built with build_answerer({LLM_ANSWERER!r}, model=...))")
    return build_with_accepted(ANSWERERS[name], kwargs)


def is_registered(name: str) -> bool:
    _ensure_builtins()
    return name in ANSWERERS


def answerer_for_config(cfg: Any, **context: Any) -> Any:
    """The answerer of one answer configuration (``runner.AnswerConfig``): a registered name is built
    by its entry; any other model name is an LLM over models.yaml with the config's prompt and decoding."""
    kwargs = dict(prompt_type=cfg.prompt_type, temperature=cfg.temperature, top_p=cfg.top_p, name=cfg.name)
    if is_registered(cfg.model) and cfg.model != LLM_ANSWERER:
        # context (e.g. warehouse=) reaches the registered answerers that accept it
        return build_answerer(cfg.model, **kwargs, **context)
    return build_answerer(LLM_ANSWERER, model=cfg.model, **kwargs)


@register_answerer(LLM_ANSWERER)
def llm_answerer(model: str, prompt_type: str = "standard", temperature: float = 0.0, top_p: float = 1.0,
                 name: str | None = None, **kwargs: Any) -> Any:
    """An LLMAnswerer over the models.yaml entry ``model``."""
    from finrag_pipeline.core.evaluation.answerers import LLMAnswerer
    from finrag_pipeline.core.llm.client import LLMClient

    return LLMAnswerer(LLMClient.from_registry(model), prompt_type=prompt_type, temperature=temperature,
                       top_p=top_p, name=name, **kwargs)



def build_with_accepted(factory: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``factory(**kwargs)`` with only the keyword arguments it accepts."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(**kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return factory(**kwargs)
    return factory(**{k: v for k, v in kwargs.items() if k in params})


def takes_decoding(name: str) -> bool:
    """Does the answerer registered as ``name`` use prompt types and decoding parameters? (If not, the
    evaluation matrix runs it once, not once per prompt type x temperature x top_p.)"""
    if not is_registered(name) or name == LLM_ANSWERER:
        return True
    factory = ANSWERERS[name]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return "prompt_type" in params or "temperature" in params
