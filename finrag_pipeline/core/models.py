"""Records that flow between stages. Plain dataclasses: the contract every stage codes against.

Each record maps 1:1 onto a warehouse table (see ``warehouse.py`` and docs/WAREHOUSE.md);
``to_row()`` gives the dict that is written, with nested values JSON-encoded where DuckDB wants text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

ChunkType = Literal["prose", "table_row", "table", "section"]
SourceFormat = Literal["pdf", "html"]


def stable_id(*parts: object, length: int = 16) -> str:
    """Deterministic short id from parts: same inputs, same id, across runs and machines."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return h[:length]


def _jsonable(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if dataclasses.is_dataclass(value):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


class _Row:
    json_fields: tuple[str, ...] = ()

    def to_row(self) -> dict[str, Any]:
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        for name in self.json_fields:
            row[name] = json.dumps(_jsonable(row[name]), sort_keys=True)
        return row


@dataclass
class FilingMeta(_Row):
    """One registered filing. ``filing_id`` is the readable partition key, e.g. ``AAPL-2022-10K``."""

    filing_id: str
    content_sha256: str
    source_path: str          # where the bytes are kept (FINRAG_HOME/filings/...)
    original_name: str        # the file name it arrived under
    source_format: SourceFormat
    company: str
    ticker: str | None
    cik: str | None
    form_type: str            # "10-K", "10-K/A"
    fiscal_year: int          # the issuer's own fiscal year label (NVIDIA FY2025 ends 2025-01-26)
    period_end_date: date | None
    fiscal_year_end: str | None = None   # "--09-28" style month-day, from dei:CurrentFiscalYearEndDate or derived
    n_pages: int = 0
    metadata_source: str = ""            # "ixbrl-dei", "pdf-cover", "sidecar", combos like "pdf-cover+sidecar"
    metadata_confidence: float | None = None  # 0..1: how sure the reader is of company + fiscal year
    field_sources: dict[str, str] = field(default_factory=dict)  # field -> how it was found ("cover:exact-name")
    field_confidence: dict[str, float] = field(default_factory=dict)  # field -> 0..1
    # why the filing is in the review queue (a weak source, not in the company map); [] = not in review
    review_reasons: list[str] = field(default_factory=list)
    json_fields = ("field_sources", "field_confidence", "review_reasons")


@dataclass
class Page(_Row):
    filing_id: str
    page_number: int          # 1-based physical page (PDF) or CSS-page-break page (HTML)
    text: str
    section: str | None       # "Item 7", "Item 1A", "Part II", ...; None before Item 1 (cover, TOC)
    section_title: str | None  # "Management's Discussion and Analysis ..."
    printed_page_label: str | None = None  # the page number printed in the footer, when found
    has_tables: bool = False
    char_count: int = 0


@dataclass
class TableCell:
    header: str               # the column header as printed ("2022", "September 24, 2022")
    period: str | None        # normalized period of the column: "FY2022", "2022-09-24", ... or None
    value_text: str           # as printed: "(1,234)", "394,328", "12 %"
    value: float | None       # parsed number with sign applied (parentheses -> negative), unit scale NOT applied
    unit: str | None = None   # only when this cell's unit differs from its row's ("12 %" in a USD row)


@dataclass
class TableRow(_Row):
    filing_id: str
    table_id: str             # stable: f"{filing_id}:p{page}:t{n}"
    row_index: int            # 0-based within the table body
    page_number: int
    section: str | None
    table_title: str | None   # "CONSOLIDATED STATEMENTS OF OPERATIONS"
    unit: str | None          # per row (contract 1): "USD millions", "USD per share", "percent", "shares", ...
    unit_text: str | None     # the table's unit as printed: "(In millions, except ... per-share amounts)"
    row_label: str            # "Total net sales"
    headers: list[str] = field(default_factory=list)   # all column headers (label column first)
    cells: list[TableCell] = field(default_factory=list)
    row_path: list[str] = field(default_factory=list)  # group headings + the label: ["North America", "Operating income"]
    statement_type: str | None = None  # core/ingest/statements.py STATEMENT_TYPES
    json_fields = ("headers", "cells", "row_path")


@dataclass
class XbrlFact(_Row):
    filing_id: str
    fact_id: str              # the ix element id, or a stable id when missing
    concept: str              # "us-gaap:Revenues"
    value: float | None       # scale and sign applied
    value_text: str           # as displayed
    unit: str | None          # "USD", "shares", "USD/shares", "pure"
    decimals: int | None      # None for INF
    period_type: Literal["instant", "duration"]
    period_start: date | None
    period_end: date | None   # the instant for instant facts
    dimensions: dict[str, str] = field(default_factory=dict)  # axis -> member
    context_id: str = ""
    scale: int = 0
    page_number: int | None = None
    json_fields = ("dimensions",)


@dataclass
class Chunk(_Row):
    chunk_id: str             # stable: stable_id(filing_id, chunk_type, anchor...)
    filing_id: str
    ticker: str | None
    company: str
    fiscal_year: int
    form_type: str
    section: str | None
    page_start: int
    page_end: int
    chunk_type: ChunkType     # leaves are "prose" and "table_row"; "table" and "section" are parents
    text: str                 # self-contained text that is indexed (carries company/year/table context)
    char_start: int = 0       # offsets into the filing's concatenated page text (pages joined by "\n\n")
    char_end: int = 0
    parent_id: str | None = None
    position: int = 0         # reading order within the filing
    is_leaf: bool = True      # only leaves go into the indexes; parents are returned by auto-merging
    table_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    json_fields = ("metadata",)

    @property
    def pages(self) -> list[int]:
        return list(range(self.page_start, self.page_end + 1))


@dataclass(frozen=True)
class SearchFilters:
    """Prefilters a retriever applies; None means unconstrained."""

    filing_ids: tuple[str, ...] | None = None
    tickers: tuple[str, ...] | None = None
    fiscal_years: tuple[int, ...] | None = None
    chunk_types: tuple[str, ...] | None = None

    def clauses(self) -> list[tuple[str, tuple[str | int, ...]]]:
        """``(chunk column, allowed values)`` per constrained field, values coerced to the column's type;
        an empty tuple selects nothing. THE description of what a filter selects: the Lance SQL
        (``lance_index.filters_to_sql``), the exact scan's numpy masks and ``filters_match`` derive from it."""
        out = []
        for field_name, column, kind in FILTER_FIELDS:
            values = getattr(self, field_name)
            if values is not None:
                out.append((column, tuple(dict.fromkeys(kind(v) for v in values))))
        return out


# (SearchFilters field, chunk column, column type): a row matches when, for every constrained field,
# its column value is one of the allowed values (a NULL column value matches nothing).
FILTER_FIELDS: tuple[tuple[str, str, type], ...] = (
    ("filing_ids", "filing_id", str), ("tickers", "ticker", str),
    ("fiscal_years", "fiscal_year", int), ("chunk_types", "chunk_type", str))


def filters_match(filters: SearchFilters | None, *, filing_id: str | None, ticker: str | None,
                  fiscal_year: int | None, chunk_type: str | None) -> bool:
    """Python-side check of a SearchFilters (used by stores and wrappers that add chunks)."""
    if filters is None:
        return True
    row = {"filing_id": filing_id, "ticker": ticker, "fiscal_year": fiscal_year, "chunk_type": chunk_type}
    return all(row[column] in allowed for column, allowed in filters.clauses())


@dataclass
class Hit:
    chunk_id: str
    score: float
    rank: int                 # 1-based
    filing_id: str
    page_start: int
    page_end: int
    chunk_type: str
    text: str
    stage: str                # which stage produced this ranking: "bm25", "dense", "rrf", "rerank:features", ...
    section: str | None = None
    fiscal_year: int | None = None
    parent_id: str | None = None
    position: int = 0
    stage_scores: dict[str, float] = field(default_factory=dict)

    @property
    def pages(self) -> list[int]:
        return list(range(self.page_start, self.page_end + 1))


@dataclass
class EvidencePlace:
    chunk_id: str | None
    page: int
    filing_id: str


@dataclass
class QAItem(_Row):
    """One question with known evidence. ``evidence`` is a list of REQUIRED groups; each group lists
    ALTERNATIVE places (the same figure often appears in several chunks/pages). A question is fully
    supported when at least one place of every group is retrieved."""

    qa_id: str
    filing_id: str
    question: str
    reference_answer: str
    question_type: str        # factual | numerical | comparative | temporal | multi-page | unanswerable | narrative
    # Inputs the answer is computed from, as provenance ([{value, unit, period, text, role}]): quoting
    # them is context, never a match (docs/METRICS.md "Correctness").
    answer_figures: list[dict[str, Any]] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)                     # ["FY2022", "FY2021"]
    evidence: list[list[EvidencePlace]] = field(default_factory=list)
    computation: str | None = None       # e.g. "394328 - 365817 = 28511"
    generator: str = ""
    generator_version: str = ""
    prompt_hash: str | None = None
    difficulty: str = "medium"           # easy | medium | hard
    status: str = "accepted"             # accepted | rejected | edited | pending_review
    source: str = "generated"            # generated | financebench | jsonl | csv
    metadata: dict[str, Any] = field(default_factory=dict)
    # What the answer must commit to (core/scoring/answer_contract.py): one dict per asked quantity,
    # {"value", "unit", "scale", "period", "tolerance" (relative), "text"}; or, for a choice question,
    # the chosen option ("FY2022", a segment, "higher") among metadata["choice_options"].
    answer_values: list[dict[str, Any]] = field(default_factory=list)
    answer_choice: str | None = None
    json_fields = ("answer_figures", "periods", "evidence", "metadata", "answer_values")
