"""Where retriever and reranker types register their names. A leaf module: retriever modules import it,
and it imports none of them, so registering never forms an import cycle with the registry that builds
them (``registry.py``)."""

from __future__ import annotations

from collections.abc import Callable

RETRIEVERS: dict[str, type] = {}
RERANKERS: dict[str, type] = {}


def _register_in(table: dict[str, type], name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        table[name] = cls
        cls.type_name = name  # type: ignore[attr-defined]
        return cls
    return deco


def register_retriever(name: str) -> Callable[[type], type]:
    return _register_in(RETRIEVERS, name)


def register_reranker(name: str) -> Callable[[type], type]:
    return _register_in(RERANKERS, name)
