"""Answerers by name (contract 4; owned by the scoring branch, this is the interim version with the same API).

``@register_answerer("calculator")`` on a class or factory; ``build_answerer(name, **kwargs)`` builds
one (an unknown name is a ValueError listing the valid ones); ``answerer_names()`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, Callable[..., Any]] = {}


def register_answerer(name: str) -> Callable[[type | Callable], Any]:
    def deco(factory: type | Callable) -> Any:
        _REGISTRY[name] = factory
        return factory
    return deco


def _load_builtins() -> None:
    # importing the modules registers their answerers
    from finrag_pipeline.core.evaluation import answerers, calculator  # noqa: F401


def build_answerer(name: str, **kwargs: Any) -> Any:
    _load_builtins()
    if name not in _REGISTRY:
        raise ValueError(f"unknown answerer {name!r}; valid: {answerer_names()}")
    return _REGISTRY[name](**kwargs)


def answerer_names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)
