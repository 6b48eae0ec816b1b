"""Where answerer types register their names. A leaf module: answerer modules import it and it imports
none of them, so registering never forms an import cycle with the registry that builds them
(``answerer_registry.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ANSWERERS: dict[str, Callable[..., Any]] = {}


def register_answerer(name: str) -> Callable[[Any], Any]:
    """Decorator on an answerer class or factory: ``build_answerer(name, **kwargs)`` builds it."""
    def deco(obj: Any) -> Any:
        ANSWERERS[name] = obj
        return obj
    return deco
