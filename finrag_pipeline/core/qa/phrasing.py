"""The generators' phrasing vocabulary (assets_config/phrasing.yaml): analyst words for line items
and metrics, kept apart from the retrievers' lexicon so that questions are not worded the way the
retrievers were tuned (docs/METRICS.md "Metric questions")."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator


class MetricPhrasing(BaseModel):
    name: list[str]                       # how a question names the metric (seeded choice)
    unit: str = "percent"                 # percent | ratio | USD
    decimals: int = Field(1, ge=0, le=4)  # rounding the question states

    @field_validator("unit")
    @classmethod
    def _known_unit(cls, v: str) -> str:
        if v not in ("percent", "ratio", "USD"):
            raise ValueError(f"metric unit must be percent, ratio or USD, not {v!r}")
        return v

    @field_validator("name")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v or not all(s.strip() for s in v):
            raise ValueError("a metric needs at least one non-empty name")
        return v


class PhrasingVocabulary(BaseModel):
    line_items: dict[str, list[str]] = Field(default_factory=dict)   # lexicon concept key -> phrasings
    row_labels: dict[str, list[str]] = Field(default_factory=dict)   # printed label (lowercase) -> phrasings
    metrics: dict[str, MetricPhrasing] = Field(default_factory=dict)

    def item_words(self, concept_key: str) -> list[str]:
        """Phrasings of a line item; the key itself (underscores as spaces) when none is listed."""
        return self.line_items.get(concept_key) or [concept_key.replace("_", " ")]

    def row_words(self, label: str) -> list[str]:
        return self.row_labels.get(label.lower(), [])


@functools.lru_cache(maxsize=4)
def _load(path: str) -> PhrasingVocabulary:
    from finrag_pipeline.core.config import load_model

    return load_model(PhrasingVocabulary, Path(path).name, None, Path(path).parent)


def load_phrasing(directory: str | os.PathLike | None = None) -> PhrasingVocabulary:
    """assets_config/phrasing.yaml (or ``directory``/phrasing.yaml), validated; cached per file (without
    ``directory``, the file config_path resolves now: a session's config directory may differ)."""
    from finrag_pipeline.core.config import config_path

    return _load(str(Path(directory) / "phrasing.yaml" if directory else config_path("phrasing.yaml")))
