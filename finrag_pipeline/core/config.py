"""YAML configuration under ``assets_config/``: load, deep-merge overrides, validate with a typed model.

Each stage owns its pydantic model (chunking, retrieval, QA, evaluation, automation); this module only
knows how to find a file, apply overrides from the CLI or the Dagster launchpad, and validate.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from .paths import ASSETS_CONFIG_DIR

M = TypeVar("M", bound=BaseModel)


class ConfigError(KeyError, ValueError):
    """A configuration names something that does not exist; the message lists what does.
    A KeyError (a name lookup failed) and a ValueError (bad configuration) at once."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


def unknown_names_error(kind: str, unknown: Iterable[str], valid: Iterable[str]) -> ConfigError:
    """``ConfigError("unknown retriever 'bm25x'; valid: bm25, dense, hybrid_rrf")``."""
    unknown = list(unknown)
    names = ", ".join(repr(n) for n in unknown)
    plural = "s" if len(unknown) > 1 else ""
    return ConfigError(f"unknown {kind}{plural} {names}; valid: {', '.join(sorted(map(str, valid))) or '(none)'}")


# A configuration directory given explicitly (a session's, from the Dagster FinragResource.config_dir),
# in force while `using_config_dir` is entered. A context variable, not os.environ: two sessions of one
# process (or two threads) keep their own directories.
_EXPLICIT_CONFIG_DIR: ContextVar[Path | None] = ContextVar("finrag_config_dir", default=None)


@contextlib.contextmanager
def using_config_dir(directory: str | os.PathLike | None) -> Iterator[None]:
    """Resolve configuration files in ``directory`` first while the block runs (None: no change).
    It acts as FINRAG_CONFIG_DIR for this context: files it lacks keep their defaults."""
    if not directory:
        yield
        return
    path = Path(directory)
    if not path.is_dir():
        raise ConfigError(f"configuration directory {path} does not exist")
    token = _EXPLICIT_CONFIG_DIR.set(path)
    try:
        yield
    finally:
        _EXPLICIT_CONFIG_DIR.reset(token)


def config_dir() -> Path:
    """The explicit directory in force (`using_config_dir`), else ``FINRAG_CONFIG_DIR`` (a deployment
    keeps its YAML elsewhere), else the repo's assets_config/."""
    return _EXPLICIT_CONFIG_DIR.get() or Path(os.environ.get("FINRAG_CONFIG_DIR") or ASSETS_CONFIG_DIR)


def config_path(name: str) -> Path:
    """The one resolver for every YAML under assets_config/ ("retrievers.yaml", "models.yaml", ...).

    Order: the per-file variable ``FINRAG_<STEM>_YAML`` (``FINRAG_RETRIEVERS_YAML``), then the explicit
    directory of `using_config_dir`, then ``FINRAG_CONFIG_DIR/<name>``, then the repo's
    assets_config/<name>. A directory that holds only some files overrides those; the others keep the
    defaults.
    """
    per_file = os.environ.get(f"FINRAG_{Path(name).stem.upper()}_YAML")
    if per_file:
        return Path(per_file)
    explicit = _EXPLICIT_CONFIG_DIR.get()
    if explicit is not None and (explicit / name).exists():
        return explicit / name
    custom = os.environ.get("FINRAG_CONFIG_DIR")
    if custom and (Path(custom) / name).exists():
        return Path(custom) / name
    return ASSETS_CONFIG_DIR / name


def load_yaml(name: str, directory: str | os.PathLike | None = None) -> dict[str, Any]:
    return read_yaml(Path(directory) / name if directory else config_path(name))


def read_yaml(path: str | os.PathLike, *, missing_ok: bool = False) -> dict[str, Any]:
    """The one reader of a configuration file: its top-level mapping ({} for an empty file; with
    ``missing_ok``, for a missing one). Stages that take an explicit file path read it here, and the
    path of a named file comes from :func:`config_path`."""
    path = Path(path)
    if not path.exists():
        if missing_ok:
            return {}
        raise FileNotFoundError(f"configuration file {path} does not exist")
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Overrides win; nested mappings merge key by key; lists and scalars are replaced whole."""
    merged = copy.deepcopy(dict(base))
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def parse_override(text: str) -> dict[str, Any]:
    """``"retrievers.bm25.k=20"`` -> ``{"retrievers": {"bm25": {"k": 20}}}`` (value parsed as YAML)."""
    if "=" not in text:
        raise ValueError(f"override {text!r} must look like dotted.key=value")
    dotted, raw = text.split("=", 1)
    value: Any = yaml.safe_load(raw)
    for part in reversed(dotted.strip().split(".")):
        value = {part: value}
    return value


def parse_overrides(texts: Iterable[str]) -> dict[str, Any]:
    """Several ``dotted.key=value`` overrides merged into one mapping (CLI ``--set``, launchpad lists)."""
    merged: dict[str, Any] = {}
    for text in texts:
        merged = deep_merge(merged, parse_override(text))
    return merged


def load_model(model: type[M], name: str, overrides: Mapping[str, Any] | None = None,
               directory: str | os.PathLike | None = None) -> M:
    return model.model_validate(deep_merge(load_yaml(name, directory), overrides))


def config_fingerprint(*names: str, directory: str | os.PathLike | None = None) -> str:
    """Short hash of the named YAML files' bytes: a Dagster code version that changes with the config."""
    import hashlib

    h = hashlib.sha256()
    for name in names:
        path = Path(directory) / name if directory else config_path(name)
        h.update(name.encode())
        h.update(path.read_bytes() if path.exists() else b"<missing>")
    return h.hexdigest()[:12]
