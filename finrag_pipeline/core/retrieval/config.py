"""``assets_config/retrievers.yaml``: named retriever configurations, validated by pydantic.

Layout::

    defaults: {k: 10}               # merged under every retriever
    lexicon_paths: []               # extra lexicon files extending assets_config/lexicon.yaml
    retrievers:
      <name>:
        type: bm25 | dense | hybrid_rrf | hybrid_weighted | auto_merging | multi_query
              | "package.module:ClassName"
        ...fields of RetrieverConfig (unknown fields are kept for custom retriever types)

``load_retrievers(path, overrides)`` applies overrides given as nested mappings
(``{"hybrid_rrf": {"rrf_k": 30}}``), dotted keys (``{"hybrid_rrf.rrf_k": 30}``, ``"retrievers."``
prefix optional) or ``"*"`` for every retriever (``{"*": {"k": 20}}``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from finrag_pipeline.core.config import config_path, deep_merge, unknown_names_error
from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR
from finrag_pipeline.core.retrieval.page_scores import PageRankingConfig

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
    """One named retriever. Fields a type does not use are ignored by it."""

    model_config = ConfigDict(extra="allow")
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
    # fusion
    bases: list[str | dict[str, Any]] = Field(default_factory=list, description="component retrievers: names or inline configs")
    weights: list[float] | None = None
    rrf_k: float = Field(60.0, gt=0)
    normalization: Literal["minmax", "zscore"] = "minmax"
    # wrappers
    base: str | dict[str, Any] | None = None
    merge_threshold: int = Field(2, ge=1, description="auto_merging: children of one parent needed to merge")
    merge_ratio: float | None = Field(None, gt=0, le=1, description="auto_merging: OR this fraction of the parent's children")
    merge_levels: int = Field(1, ge=1, le=3)
    # multi_query
    max_queries: int = Field(6, ge=1)
    top_pages: int = Field(3, ge=1)
    neighbour_window: int = Field(1, ge=0)
    # dense
    metric: Literal["cosine", "dot", "l2"] = "cosine"
    reranker: RerankerConfig | None = None

    @field_validator("reranker", mode="before")
    @classmethod
    def _reranker_shorthand(cls, v: Any) -> Any:
        return {"type": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check_weights(self) -> RetrieverConfig:
        if self.weights is not None and self.bases and len(self.weights) != len(self.bases):
            raise ValueError(f"retriever {self.name!r}: {len(self.weights)} weights for {len(self.bases)} bases")
        return self


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
            defaults = data.get("defaults") or {}
            data["retrievers"] = {name: {**deep_merge(defaults, spec or {}), "name": name}
                                  for name, spec in (data.get("retrievers") or {}).items()}
        return data

    @model_validator(mode="after")
    def _check_references(self) -> RetrieversFile:
        for name, cfg in self.retrievers.items():
            for ref in [*cfg.bases, *([cfg.base] if cfg.base is not None else [])]:
                if isinstance(ref, str) and ref not in self.retrievers:
                    raise ValueError(f"retriever {name!r} refers to unknown retriever {ref!r}")
        return self


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
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    names = list((data.get("retrievers") or {}).keys())
    over = normalize_overrides(overrides, names)
    top_level = {k: over.pop(k) for k in ("defaults", "lexicon_paths") if k in over}
    unknown = [n for n in over if n not in names]
    if unknown:
        raise unknown_names_error("retriever", unknown, names)
    for name, fields in over.items():
        # --set bm25.kk=3 must not be silently ignored (the model allows extras for plug-in types)
        known_fields = set(RetrieverConfig.model_fields) | set((data["retrievers"].get(name) or {}).keys())
        bad = [f for f in (fields or {}) if f not in known_fields] if isinstance(fields, Mapping) else []
        if bad:
            raise unknown_names_error(f"field of retriever {name!r}", bad, known_fields)
    data = deep_merge(data, top_level)
    data["retrievers"] = deep_merge(data.get("retrievers") or {}, over)
    return RetrieversFile.model_validate(data)


def load_retrievers(path: str | os.PathLike | None = None,
                    overrides: Mapping[str, Any] | None = None) -> dict[str, RetrieverConfig]:
    """Named, validated configurations from retrievers.yaml with overrides applied."""
    return dict(load_retrievers_file(path, overrides).retrievers)
