"""How chunk text is written: context headers, table rows and whole tables as standalone text."""

from __future__ import annotations

import re

from finrag_pipeline.core.models import FilingMeta, TableRow

# Legal-form suffixes dropped from the short company name used in table-row text ("Apple Inc." -> "Apple").
_LEGAL_SUFFIX = re.compile(
    r",?\s+(inc\.?|incorporated|corp\.?|corporation|co\.|ltd\.?|limited|plc|llc|l\.p\.|n\.v\.|s\.a\.|ag)$",
    re.IGNORECASE)
_SMALL_WORDS = frozenset({"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "per"})
_SPACES = re.compile(r"\s+")


def short_company(company: str) -> str:
    """Company name without its legal-form suffix: "Apple Inc." -> "Apple"."""
    name = company.strip()
    while True:
        shorter = _LEGAL_SUFFIX.sub("", name).strip()
        if shorter == name or not shorter:
            return name
        name = shorter


def tidy_title(title: str | None) -> str | None:
    """Collapse whitespace; title-case titles printed in capitals ("CONSOLIDATED STATEMENTS OF ...")."""
    if not title:
        return None
    title = _SPACES.sub(" ", title).strip()
    if not title or not title.isupper():
        return title or None
    words = title.lower().split(" ")
    return " ".join(w if (i and w in _SMALL_WORDS) else w[:1].upper() + w[1:] for i, w in enumerate(words))


def filing_label(meta: FilingMeta, *, short: bool = False) -> str:
    """ "Apple Inc. (AAPL) 10-K FY2022", or with ``short`` "Apple 10-K FY2022"."""
    if short:
        return f"{short_company(meta.company)} {meta.form_type} FY{meta.fiscal_year}"
    ticker = f" ({meta.ticker})" if meta.ticker else ""
    return f"{meta.company}{ticker} {meta.form_type} FY{meta.fiscal_year}"


def section_label(section: str | None, section_title: str | None) -> str:
    parts = [p for p in (section, _SPACES.sub(" ", section_title or "").strip()) if p]
    return " ".join(parts) if parts else "Front matter"


def prose_header(meta: FilingMeta, section: str | None, section_title: str | None) -> str:
    """Context prefix for prose: "Apple Inc. (AAPL) 10-K FY2022 | Item 7 Management's ... | "."""
    return f"{filing_label(meta)} | {section_label(section, section_title)} | "


def cell_texts(row: TableRow) -> list[str]:
    """ "2022: 394,328" per non-empty cell; the header as printed, else the normalised period."""
    out = []
    for cell in row.cells:
        value = _SPACES.sub(" ", cell.value_text or "").strip()
        if not value:
            continue
        label = _SPACES.sub(" ", cell.header or "").strip() or (cell.period or "")
        out.append(f"{label}: {value}" if label else value)
    return out


def row_path_text(row: TableRow) -> str:
    """The row's label with its group headings: "North America > Operating income (loss)"."""
    path = [p for p in (row.row_path or []) if p] or [row.row_label]
    return " > ".join(_SPACES.sub(" ", p).strip() for p in path)


def table_row_text(meta: FilingMeta, row: TableRow) -> str:
    """One row standing alone:
    "Amazon 10-K FY2022 | North America > Operating income (loss) | 2022: (2,847) | USD millions".
    """
    parts = [filing_label(meta, short=True), tidy_title(row.table_title),
             row_path_text(row), *cell_texts(row), row.unit or _tidy(row.unit_text)]
    return " | ".join(p for p in parts if p)


def table_text(meta: FilingMeta, rows: list[TableRow]) -> str:
    """A whole table: a title line, a header line, then one line per row ("label | v1 | v2")."""
    first = rows[0]
    title = " | ".join(p for p in (filing_label(meta, short=True), tidy_title(first.table_title),
                                   first.unit or _tidy(first.unit_text)) if p)
    lines = [title]
    value_headers = [_SPACES.sub(" ", c.header or c.period or "").strip() for c in first.cells]
    if any(value_headers):
        lines.append(" | ".join(["", *value_headers]).strip())
    for row in rows:
        values = [_SPACES.sub(" ", c.value_text or "").strip() for c in row.cells]
        unit = f" [{row.unit}]" if row.unit and row.unit != first.unit else ""
        lines.append(" | ".join([row_path_text(row) + unit, *values]))
    return "\n".join(lines)


def _tidy(text: str | None) -> str | None:
    return _SPACES.sub(" ", text).strip() or None if text else None
