"""``assets_config/retrievers.yaml``: named retriever configurations, validated by pydantic.

Layout::

    defaults: {k: 10}               # merged under every retriever
    lexicon_paths: []               # extra lexicon files extending assets_config/lexicon.yaml
    retrievers:
      <name>:
        type: bm25 | dense | hybrid_rrf | hybrid_weighted | auto_merging | multi_query | decomposed
              | sanity_random | "package.module:ClassName"
        ...the common fields of RetrieverConfig plus the fields of the type's own model (registered with
        the type: @register_retriever("hybrid_rrf", config=HybridRRFConfig)); any other key is an error
        naming the retriever and the key

``load_retrievers(path, overrides)`` applies overrides given as nested mappings
(``{"hybrid_rrf": {"rrf_k": 30}}``), dotted keys (``{"hybrid_rrf.rrf_k": 30}``, ``"retrievers."``
prefix optional) or ``"*"`` for every retriever (``{"*": {"k": 20}}``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from finrag_pipeline.core.config import ConfigError, config_path, deep_merge, read_yaml, unknown_names_error
from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR
from finrag_pipeline.core.retrieval.page_scores import PageRankingConfig
from finrag_pipeline.core.retrieval.plugins import (
    RETRIEVER_CONFIGS,
    RETRIEVERS,
    ensure_builtins,
    import_type,
    is_import_path,
)

DEFAULT_RETRIEVERS_PATH = ASSETS_CONFIG_DIR / "retrievers.yaml"


class FiltersConfig(BaseModel):
    """Static prefilters of a configuration (intersected with the caller's scope)."""

    model_config = ConfigDict(extra="forbid")
    filing_ids: list[str] | None = None
    tickers: list[str] | None = None
    fiscal_years: list[int] | None = None
    chunk_types: list[str] | None = None

    def to_filters(self) -> SearchFilters | None:
        values = {k: tuple(v) for k, v in self.model_dump().items() if v is not None}
        return SearchFilters(**values) if values else None


class RerankerConfig(BaseModel):
    """A reranking stage. ``type``: features | cross_encoder | llm | "package.module:ClassName"."""

    model_config = ConfigDict(extra="allow")
    type: str
    depth: int = Field(50, ge=1, description="how many candidates of the base retriever are rescored")
    model_path: str | None = None          # cross_encoder: a local model directory
    backend: Literal["sentence_transformers", "flag"] = "sentence_transformers"
    batch_size: int = Field(16, ge=1)
    max_length: int = Field(512, ge=16)
    weights: dict[str, float] | None = None   # features: feature -> weight
    base_weight: float = 0.5                  # features: weight of the base retriever's normalised score
    max_passage_chars: int = Field(2000, ge=100)  # llm: passage is cut to this many characters


class RetrieverConfig(BaseModel):
    """The fields every retriever type has: the builder (registry.py) applies filters, period and
    statement routing and the reranker around whatever the type builds. Each type extends this model
    with its own fields and registers it with the type (``@register_retriever("hybrid_rrf",
    config=HybridRRFConfig)``): together they are a union discriminated on ``type``
    (:func:`parse_retriever_config`), and a key the type does not know is an error."""

    model_config = ConfigDict(extra="forbid")
    name: str = ""
    type: str
    k: int = Field(10, ge=1)
    fetch_k: int | None = Field(None, ge=1, description="candidates fetched per component (default: max(k, 50) for fusion)")
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    period_mode: Literal["prefilter", "boost", "none"] = "none"
    period_boost: float = Field(0.5, ge=0.0, description="boost mode: bonus as a fraction of the candidates' score range")
    covering_years: int = Field(0, ge=0, le=5)
    # statement routing (core/retrieval/statement_routing.py)
    statement_mode: Literal["boost", "none"] = "none"
    statement_boost: float = Field(0.5, ge=0.0, description="boost mode: bonus for rows of the asked statement, "
                                   "as a fraction of the candidates' score range")
    # company-first corpus search (core/retrieval/company_first.py): search the filings of the company
    # (and year) the question names first; a question naming none searches the whole scope
    company_mode: Literal["prefilter", "none"] = "none"
    company_fill: bool = Field(True, description="prefilter: fill slots the company's filings cannot fill "
                               "from the whole scope, ranked after them")
    # page-level ranking (core/retrieval/pages.py): top_pages from this many candidates, weighted
    page_ranking: PageRankingConfig | None = None
    reranker: RerankerConfig | None = None

    @field_validator("reranker", mode="before")
    @classmethod
    def _reranker_shorthand(cls, v: Any) -> Any:
        return {"type": v} if isinstance(v, str) else v

    def references(self) -> list[str | dict[str, Any]]:
        """The retrievers this one is built on (names or inline configs)."""
        return []


class WrapperConfig(RetrieverConfig):
    """A retriever built around one base retriever (auto_merging, multi_query, decomposed)."""

    base: str | dict[str, Any] | None = None

    def references(self) -> list[str | dict[str, Any]]:
        return [self.base] if self.base is not None else []


class PluginRetrieverConfig(RetrieverConfig):
    """An import-path type ("package.module:ClassName") whose class declares no ``config_model``: the
    keys beyond the common fields are passed to it as they are (``model_extra``)."""

    model_config = ConfigDict(extra="allow")


def config_model(type_ref: str, retriever: str = "") -> type[RetrieverConfig]:
    """The config model of a retriever type: the one registered with it, an import-path class's
    ``config_model`` (else :class:`PluginRetrieverConfig`)."""
    ensure_builtins()
    if type_ref in RETRIEVER_CONFIGS:
        return RETRIEVER_CONFIGS[type_ref]
    if type_ref in RETRIEVERS:
        return RetrieverConfig
    if is_import_path(type_ref):
        return getattr(import_type(type_ref, "retriever"), "config_model", PluginRetrieverConfig)
    where = f" (retriever {retriever!r})" if retriever else ""
    raise ConfigError(f"unknown retriever type {type_ref!r}{where}; registered: {sorted(RETRIEVERS)} "
                      "(or give an import path 'package.module:ClassName')")


def parse_retriever_config(data: Mapping[str, Any] | RetrieverConfig) -> RetrieverConfig:
    """One retriever entry validated by its type's model; a key that model does not have is a
    :class:`ConfigError` naming the retriever and the key."""
    if isinstance(data, RetrieverConfig):
        return data
    data = dict(data)
    name = str(data.get("name") or data.get("type") or "")
    type_ref = data.get("type")
    if not isinstance(type_ref, str) or not type_ref:
        raise ConfigError(f"retriever {name!r} has no `type` (a registered type or 'package.module:ClassName')")
    model = config_model(type_ref, name)
    if model.model_config.get("extra") == "forbid":
        unknown = [key for key in data if key not in model.model_fields]
        if unknown:
            raise unknown_names_error(f"field of retriever {name!r} (type {type_ref})", unknown, model.model_fields)
    return model.model_validate(data)


class RetrieversFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: dict[str, Any] = Field(default_factory=dict)
    lexicon_paths: list[str] = Field(default_factory=list)
    retrievers: dict[str, RetrieverConfig]

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = dict(data)
            data["retrievers"] = _typed_retrievers(data.get("defaults") or {}, data.get("retrievers") or {})
        return data

    @model_validator(mode="after")
    def _check_references(self) -> RetrieversFile:
        for name, cfg in self.retrievers.items():
            for ref in cfg.references():
                if isinstance(ref, str) and ref not in self.retrievers:
                    raise ValueError(f"retriever {name!r} refers to unknown retriever {ref!r}")
        return self


def _typed_retrievers(defaults: Mapping[str, Any], specs: Mapping[str, Any]) -> dict[str, RetrieverConfig]:
    """Each entry over the defaults, validated by its type's model (entries already typed stay as they are)."""
    return {name: spec if isinstance(spec, RetrieverConfig)
            else parse_retriever_config({**_defaults_for(defaults, spec), "name": name})
            for name, spec in specs.items()}


def _defaults_for(defaults: Mapping[str, Any], spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """``spec`` over the ``defaults`` its type has a field for (a default such as ``rrf_k`` applies to
    the types that have one); a default no type knows is an error."""
    spec = dict(spec or {})
    model = config_model(spec["type"], str(spec.get("name", ""))) if isinstance(spec.get("type"), str) else None
    if model is None or model.model_config.get("extra") != "forbid":
        return deep_merge(defaults, spec)
    known_anywhere = set(RetrieverConfig.model_fields).union(*(m.model_fields for m in RETRIEVER_CONFIGS.values()))
    unknown = [key for key in defaults if key not in known_anywhere]
    if unknown:
        raise unknown_names_error("retriever default", unknown, known_anywhere)
    return deep_merge({k: v for k, v in defaults.items() if k in model.model_fields}, spec)


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    for part in reversed(dotted.split(".")):
        value = {part: value}
    return value


def normalize_overrides(overrides: Mapping[str, Any] | None, names: list[str]) -> dict[str, Any]:
    """Overrides as {retriever_name: {field: value}}; "*" fans out to every retriever."""
    nested: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        key = key.removeprefix("retrievers.")
        part = _nest(key, value) if "." in key else {key: value}
        if "retrievers" in part and isinstance(part["retrievers"], Mapping):
            part = dict(part["retrievers"])
        nested = deep_merge(nested, part)
    star = nested.pop("*", None)
    if star:
        nested = {n: deep_merge(star, nested.get(n, {})) for n in names} | {
            n: v for n, v in nested.items() if n not in names}
    return nested


def load_retrievers_file(path: str | os.PathLike | None = None,
                         overrides: Mapping[str, Any] | None = None) -> RetrieversFile:
    path = Path(path or config_path("retrievers.yaml"))
    data = read_yaml(path)
    names = list((data.get("retrievers") or {}).keys())
    over = normalize_overrides(overrides, names)
    top_level = {k: over.pop(k) for k in ("defaults", "lexicon_paths") if k in over}
    unknown = [n for n in over if n not in names]
    if unknown:
        raise unknown_names_error("retriever", unknown, names)
    for name, fields in over.items():
        # --set bm25.kk=3 must not be silently ignored: the fields of the retriever's type (a plug-in type
        # without a config model takes any key)
        spec = data["retrievers"].get(name) or {}
        type_ref = (fields.get("type") if isinstance(fields, Mapping) else None) or spec.get("type")
        model = config_model(str(type_ref), name)
        if model.model_config.get("extra") != "forbid":
            continue
        known_fields = set(model.model_fields)
        bad = [f for f in (fields or {}) if f not in known_fields] if isinstance(fields, Mapping) else []
        if bad:
            raise unknown_names_error(f"field of retriever {name!r}", bad, known_fields)
    data = deep_merge(data, top_level)
    data["retrievers"] = deep_merge(data.get("retrievers") or {}, over)
    # typed here, so a bad key is a ConfigError naming the retriever (not wrapped in a ValidationError)
    data["retrievers"] = _typed_retrievers(data.get("defaults") or {}, data["retrievers"])
    return RetrieversFile.model_validate(data)


def load_retrievers(path: str | os.PathLike | None = None,
                    overrides: Mapping[str, Any] | None = None) -> dict[str, RetrieverConfig]:
    """Named, validated configurations from retrievers.yaml with overrides applied."""
    return dict(load_retrievers_file(path, overrides).retrievers)
