"""What each leaf chunk is embedded *as* (the dense index's input), apart from the text it is stored,
shown and BM25-indexed with (``Chunk.text``, unchanged).

Two shortenings, each measured by what it does to retrieval (docs/BENCHMARKS.md "Embedding speed-ups"):

* ``boilerplate`` (on): lines repeated at the top or bottom of most pages of a filing (running headers,
  page footers such as "Apple Inc. | 2022 Form 10-K | 23", "Table of Contents") are left out of prose
  chunks' embedding input. They are found by repetition across the filing's own pages (digits masked,
  so the page number does not make each footer unique), never from a list of strings. No metric lost.
* ``table_rows: short`` (off): a table-row chunk is embedded as "company FY | title | row path | period:
  value ..." with each column's normalised period ("FY2022") instead of its printed header ("Year Ended
  September 24, 2022") when that is shorter. Rejected: -9 points of nDCG@10 on the analysts' questions.

Settings: ``inputs`` of assets_config/embedder.yaml (:class:`EmbeddingInputConfig`). The embedding
cache is keyed by the input text, so one text embedded once serves every variant and re-ingest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.chunking.text import row_path_text, short_company, tidy_title
from finrag_pipeline.core.config import config_path, read_yaml
from finrag_pipeline.core.models import Chunk, Page, TableRow

_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


class EmbeddingInputConfig(BaseModel):
    """``inputs`` of embedder.yaml: how leaf chunks are shortened before embedding."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    boilerplate: bool = Field(False, description="leave repeated page headers/footers out of prose inputs")
    boilerplate_min_share: float = Field(0.5, gt=0.0, le=1.0,
                                         description="share of the filing's pages a line must repeat on")
    boilerplate_min_pages: int = Field(3, ge=2, description="a line must repeat on at least this many pages")
    edge_lines: int = Field(2, ge=1, description="lines at the top and at the bottom of a page looked at")
    table_rows: Literal["full", "short"] = "full"

    @property
    def changes_nothing(self) -> bool:
        return not self.boilerplate and self.table_rows == "full"


def load_embedding_input_config(path: Path | None = None) -> EmbeddingInputConfig:
    return EmbeddingInputConfig(**(read_yaml(path or config_path("embedder.yaml")).get("inputs") or {}))


def line_key(line: str) -> str:
    """A line as repetition is counted: spaces collapsed, lower case, every digit run one '#'."""
    return _DIGITS.sub("#", _SPACES.sub(" ", line).strip().lower())


def _edge_lines(text: str, n: int) -> list[str]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[:n] + lines[n:][-n:]


def boilerplate_lines(pages: Sequence[Page], *, min_share: float = 0.5, min_pages: int = 3,
                      edge_lines: int = 2) -> frozenset[str]:
    """Line keys (:func:`line_key`) found among the first or last ``edge_lines`` lines of at least
    ``min_share`` of the pages that have text (and of ``min_pages`` pages): the filing's running
    headers and footers."""
    texts = [p.text for p in pages if p.text and p.text.strip()]
    if len(texts) < min_pages:
        return frozenset()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({line_key(ln) for ln in _edge_lines(text, edge_lines)})
    floor = max(min_pages, min_share * len(texts))
    return frozenset(k for k, n in counts.items() if k and n >= floor)


def strip_lines(text: str, keys: frozenset[str]) -> str:
    """``text`` without its lines whose key is in ``keys`` (the other lines and their order kept)."""
    if not keys:
        return text
    kept = [ln for ln in text.split("\n") if not ln.strip() or line_key(ln) not in keys]
    return "\n".join(kept)


def short_row_text(chunk: Chunk, row: TableRow) -> str:
    """A table row for the embedder: "Apple 10-K FY2022 | title | row path | FY2022: 394,328 | ..."; the
    column's normalised period replaces its printed header when shorter; no unit text."""
    cells = []
    for cell in row.cells:
        value = _SPACES.sub(" ", cell.value_text or "").strip()
        if not value:
            continue
        header = _SPACES.sub(" ", cell.header or "").strip()
        label = cell.period if cell.period and (not header or len(cell.period) < len(header)) else header
        cells.append(f"{label}: {value}" if label else value)
    parts = [f"{short_company(chunk.company)} {chunk.form_type} FY{chunk.fiscal_year}",
             tidy_title(row.table_title), row_path_text(row), *cells]
    return " | ".join(p for p in parts if p)


def embedding_inputs(leaves: Sequence[Chunk], pages: Iterable[Page] = (), table_rows: Iterable[TableRow] = (),
                     config: EmbeddingInputConfig | None = None) -> list[str]:
    """The text each of ``leaves`` is embedded as, in order. ``pages`` and ``table_rows`` are the filing's
    (needed by ``boilerplate`` and ``table_rows: short``); a chunk they do not cover keeps its text."""
    config = config or load_embedding_input_config()
    if config.changes_nothing:
        return [c.text for c in leaves]
    keys = (boilerplate_lines(list(pages), min_share=config.boilerplate_min_share,
                              min_pages=config.boilerplate_min_pages, edge_lines=config.edge_lines)
            if config.boilerplate else frozenset())
    rows = ({(r.table_id, r.row_index): r for r in table_rows} if config.table_rows == "short" else {})
    out = []
    for chunk in leaves:
        text = chunk.text
        if chunk.chunk_type == "prose" and keys:
            # Whole lines only: the window's first line carries the context header and is kept as it is (also
            # stripping a footer glued to the header cost 1.1 points of the analysts' nDCG@10: BENCHMARKS.md).
            text = strip_lines(text, keys)
        elif chunk.chunk_type == "table_row" and rows:
            row = rows.get((chunk.table_id, (chunk.metadata or {}).get("row_index")))
            if row is not None:
                text = short_row_text(chunk, row)
        out.append(text)
    return out

