"""Where retriever and reranker types register their names (and a retriever type its config model). A leaf
module: retriever modules import it, and it imports none of them, so registering never forms an import
cycle with the registry that builds them (``registry.py``) or the config loader that validates them
(``config.py``, which finds a type's model here).

    @register_retriever("hybrid_rrf", config=HybridRRFConfig)
    class HybridRRFRetriever(Retriever): ...
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

RETRIEVERS: dict[str, type] = {}
RERANKERS: dict[str, type] = {}
# Retriever type -> its pydantic config model (a subclass of config.RetrieverConfig).
RETRIEVER_CONFIGS: dict[str, type] = {}
_discovery = {"done": False}


def _register_in(table: dict[str, type], name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        table[name] = cls
        cls.type_name = name  # type: ignore[attr-defined]
        return cls
    return deco


def register_retriever(name: str, config: type | None = None) -> Callable[[type], type]:
    """Register a retriever class under ``name``, and ``config`` (its pydantic model, a subclass of
    ``RetrieverConfig``) as the schema of ``type: name`` entries in retrievers.yaml. Without ``config``
    the type takes the common fields only."""
    register = _register_in(RETRIEVERS, name)

    def deco(cls: type) -> type:
        if config is not None:
            RETRIEVER_CONFIGS[name] = config
            cls.config_model = config  # type: ignore[attr-defined]
        return register(cls)
    return deco


def register_reranker(name: str) -> Callable[[type], type]:
    return _register_in(RERANKERS, name)


def ensure_builtins() -> None:
    """Import every module of this package once: their ``@register_*`` decorators fill the tables above,
    so a new retriever module registers itself (there is no list of modules to edit)."""
    if _discovery["done"]:
        return
    _discovery["done"] = True     # set first: the imports below may ask again
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{info.name}")


def import_type(type_ref: str, kind: str) -> type:
    """The class named by "package.module:ClassName" (also "package.module.ClassName")."""
    module_name, _, attr = type_ref.partition(":") if ":" in type_ref else type_ref.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"cannot import {kind} type {type_ref!r}: {exc}") from exc


def is_import_path(type_ref: str) -> bool:
    return ":" in type_ref or "." in type_ref
