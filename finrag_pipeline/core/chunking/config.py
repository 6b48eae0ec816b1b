"""Chunking configuration: a pydantic model plus named variants loaded from ``assets_config/ingest.yaml``.

File format (section ``chunking``)::

    chunking:
      default_variant: default
      base:            # fields every variant starts from
        chunk_size: 1000
        overlap: 150
      variants:        # name -> overrides of ``base``
        default: {}
        small: {chunk_size: 500, overlap: 75}

The evaluation matrix selects variants by name; ``ChunkingConfig.fingerprint()`` identifies the
settings that produced a set of chunks.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from finrag_pipeline.core.config import config_path, read_yaml, unknown_names_error
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR

DEFAULT_CONFIG_FILE = ASSETS_CONFIG_DIR / "ingest.yaml"


class ChunkingConfig(BaseModel):
    """How a filing is cut into chunks. Sizes are in ``unit`` (characters or approximate tokens)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "default"
    chunk_size: int = Field(1000, gt=0, description="max window size, in `unit`")
    overlap: int = Field(150, ge=0, description="max sentence-aligned overlap between windows, in `unit`")
    unit: Literal["chars", "tokens"] = "chars"
    min_chunk_chars: int = Field(50, ge=0, description="shorter trailing windows merge into the previous one")
    include_table_rows: bool = True
    include_parents: bool = Field(True, description="emit `table` and `section` parent chunks")
    context_header: bool = Field(True, description="prefix indexed text with company/year/section")

    @model_validator(mode="after")
    def _overlap_smaller_than_size(self) -> ChunkingConfig:
        if self.overlap >= self.chunk_size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than chunk_size ({self.chunk_size})")
        return self

    def fingerprint(self) -> str:
        """Short hash of every setting except the name: equal settings, equal fingerprint."""
        payload = json.dumps(self.model_dump(exclude={"name"}), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _chunking_section(path: Path | None) -> dict[str, Any]:
    path = Path(path) if path else config_path("ingest.yaml")
    data = read_yaml(path)
    return data.get("chunking") or {}


def chunking_variants(path: Path | None = None) -> dict[str, ChunkingConfig]:
    """All named variants of the config file, validated."""
    section = _chunking_section(path)
    base = section.get("base") or {}
    variants = section.get("variants") or {"default": {}}
    return {name: ChunkingConfig(**{**base, **(overrides or {}), "name": name})
            for name, overrides in variants.items()}


def load_chunking_config(name: str | None = None, path: Path | None = None,
                         **overrides: Any) -> ChunkingConfig:
    """The variant ``name`` (default: the file's ``default_variant``), with field ``overrides`` applied."""
    section = _chunking_section(path)
    name = name or section.get("default_variant") or "default"
    variants = chunking_variants(path)
    if name not in variants:
        raise unknown_names_error("chunking variant", [name], variants)
    config = variants[name]
    # Re-validate rather than model_copy(update=...), which would skip the validators.
    return ChunkingConfig(**{**config.model_dump(), **overrides}) if overrides else config
