"""Limits on what one filing may cost (``limits:`` in assets_config/ingest.yaml).

A file over ``max_bytes`` or ``max_pages`` is rejected as ``too_large`` before its tables are read; a
table over ``max_rows_per_table`` keeps its first rows and the filing's ingest log says it is partial;
a filing over ``max_leaf_chunks`` (what is embedded) is rejected as ``too_large``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.config import config_path, read_yaml


class IngestLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bytes: int = Field(200_000_000, gt=0, description="file size")
    max_pages: int = Field(1_500, gt=0, description="pages (PDF pages or HTML page breaks)")
    max_rows_per_table: int = Field(2_000, gt=0, description="record rows kept per table (the rest dropped, logged)")
    max_leaf_chunks: int = Field(20_000, gt=0, description="indexed chunks per filing")


def load_ingest_limits(directory: str | None = None) -> IngestLimits:
    """``limits:`` of ``directory``/ingest.yaml, or of ingest.yaml as resolved now (config_path)."""
    path = Path(directory) / "ingest.yaml" if directory else config_path("ingest.yaml")
    return _load(str(path))


@cache
def _load(path: str) -> IngestLimits:
    data = read_yaml(path)
    return IngestLimits.model_validate(data.get("limits") or {})
