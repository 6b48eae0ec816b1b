"""Normalisation shared by PDF and HTML tables: numbers, units, column periods, and RawTable -> TableRow.

Both extractors reduce a table to a ``RawTable`` (a label column plus value columns with composed
headers); everything that interprets text (what a number is, which period a column means, what unit
the table is in) lives here so PDF and HTML agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from finrag_pipeline.core.models import TableCell, TableRow

# Dashes EDGAR and PDF renderings use for "nil" in a numeric column.
DASHES = frozenset({"—", "–", "-", "−", "——", "— —"})

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH_RE = (r"(?P<month>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
             r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
# "September 24, 2022", "Sept. 24,2022", "June 30 2022" (EDGAR <br/> sometimes eats the space).
DATE_RE = re.compile(_MONTH_RE + r"\s*(?P<day>\d{1,2})\s*,?\s*(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)
YEAR_RE = re.compile(r"(?<![\d,.$])((?:19|20)\d{2})(?![\d,.%])")
_NUMBER_RE = re.compile(r"^\(?-?\d[\d,]*(?:\.\d+)?\)?$|^\(?-?\.\d+\)?$")
_ANNUAL_RE = re.compile(r"\b(years?|twelve months|12 months|fiscal(?: years?)?)\s+ended\b|\bfiscal\b", re.I)
_PARTIAL_RE = re.compile(r"\b(three|six|nine|3|6|9)\s+months\s+ended\b", re.I)
_MONTHS_BY_WORD = {"three": 3, "six": 6, "nine": 9, "3": 3, "6": 6, "9": 9}


def parse_date(text: str) -> date | None:
    """First "Month D, YYYY" date in ``text`` (None when there is none or it is not a real date)."""
    m = DATE_RE.search(text or "")
    if not m:
        return None
    try:
        return date(int(m["year"]), _MONTHS[m["month"][:3].lower()], int(m["day"]))
    except ValueError:
        return None


def clean_text(text: str) -> str:
    """Collapse whitespace (incl. NBSP and zero-width) to single spaces."""
    return re.sub(r"[\s\u00a0\u200b\u2009\u202f]+", " ", text or "").strip()


def parse_number(text: str | None, *, dash_value: float | None = 0.0) -> float | None:
    """Parse a number as printed in a financial table.

    "(1,234)" -> -1234.0, "$ 394,328" -> 394328.0, "12.5 %" -> 12.5, "(8)%" -> -8.0.
    A lone dash means nil in 10-K tables, so it returns ``dash_value`` (0.0 by default; pass None
    where a dash means "not applicable"). Anything that is not a number returns None.
    """
    s = clean_text(text or "")
    if not s:
        return None
    s = s.replace("$", "").replace("€", "").replace("£", "").replace(" ", "")
    if s in DASHES or s in {"(—)", "(–)"}:
        return dash_value
    s = s.rstrip("%").replace("−", "-")
    if s.endswith(")") and not s.startswith("("):
        s = "(" + s  # "1,234)" after a split "(" cell; EDGAR separates the parentheses
    if not _NUMBER_RE.match(s):
        return None
    negative = s.startswith("(") or s.startswith("-")
    digits = s.strip("()").lstrip("-").replace(",", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    return -value if negative else value


def is_numeric_text(text: str | None) -> bool:
    """True for cells that hold a table value (numbers, percentages, a nil dash)."""
    return parse_number(text) is not None


def normalize_unit(text: str | None) -> str | None:
    """"(In millions, except per-share amounts)" -> "USD millions"; None when no unit is stated."""
    t = (text or "").lower()
    if not t:
        return None
    for scale in ("billions", "millions", "thousands"):
        if re.search(rf"\bin {scale}\b", t) or re.search(rf"\b{scale} of (?:u\.s\. )?dollars\b", t):
            if re.search(rf"\bshares? in {scale}\b", t) and "dollar" not in t and "$" not in t \
                    and not re.search(rf"\(in {scale}\b", t):
                return f"shares {scale}"
            return f"USD {scale}"
    if "per share" in t or "per-share" in t:
        return "USD per share"
    if "percent" in t or "%" in t:
        return "percent"
    return None


UNIT_LINE_RE = re.compile(
    r"\((?:dollars |amounts |\$ )?in (?:millions|thousands|billions)[^)]*\)|\bin (?:millions|thousands|billions)\b",
    re.IGNORECASE,
)


def find_unit_text(text: str) -> str | None:
    """The unit phrase as printed, e.g. "(In millions, except ... per-share amounts)" or "in millions"."""
    m = UNIT_LINE_RE.search(text or "")
    return m.group(0) if m else None


def normalize_period(header: str | None) -> str | None:
    """Normalise a column header to a period label.

    "2022" / "Fiscal 2022" -> "FY2022"; "September 24, 2022" -> "2022-09-24" (an instant, e.g. a
    balance-sheet date); "Years ended September 24, 2022" / "Year Ended June 30, 2022" -> "FY2022"
    (the fiscal year is labelled by the year its period ends, as issuers do);
    "Three months ended March 31, 2022" -> "3M:2022-03-31". Headers such as "Change" -> None.
    """
    h = clean_text(header or "")
    if not h:
        return None
    d = parse_date(h)
    if d is not None:
        partial = _PARTIAL_RE.search(h)
        if partial:
            return f"{_MONTHS_BY_WORD[partial.group(1).lower()]}M:{d.isoformat()}"
        if _ANNUAL_RE.search(h):
            return f"FY{d.year}"
        return d.isoformat()
    if re.search(r"\bchange\b|%|\bvariance\b", h, re.I):
        return None
    years = YEAR_RE.findall(h)
    if len(years) == 1:
        return f"FY{years[0]}"
    return None


_NOT_A_TITLE_RE = re.compile(r"^(table of contents|index|[_\-\s=]+|page|\d+)$", re.IGNORECASE)


def is_title_candidate(text: str) -> bool:
    """Running headers ("Table of Contents" links on every EDGAR page) and rules are never titles."""
    t = clean_text(text)
    return 3 <= len(t) <= 160 and not _NOT_A_TITLE_RE.match(t) and not re.fullmatch(r"[\d\s|]+", t)


def looks_like_period_header(text: str) -> bool:
    """Header cells name years or dates ("2022", "September 24, 2022", "Year Ended June 30,")."""
    t = clean_text(text)
    return bool(DATE_RE.search(t) or YEAR_RE.search(t) or _ANNUAL_RE.search(t) or _PARTIAL_RE.search(t)
                or re.search(r"\b(ended|as of|change)\b", t, re.I))


@dataclass
class RawTable:
    """A table reduced to a label column and value columns, before normalisation."""

    page_number: int
    headers: list[str]                                   # one composed header per value column
    rows: list[tuple[str, list[str]]]                    # (label, value texts aligned to headers)
    title: str | None = None
    unit_text: str | None = None
    section: str | None = None
    extra: dict = field(default_factory=dict)


def to_table_rows(raw: RawTable, filing_id: str, table_number: int) -> list[TableRow]:
    """One TableRow per record row of ``raw``; rows without any value (group labels such as
    "Net sales:") are not records and are skipped."""
    table_id = f"{filing_id}:p{raw.page_number}:t{table_number}"
    unit_text = clean_text(raw.unit_text) if raw.unit_text else None
    unit = normalize_unit(unit_text)
    periods = [normalize_period(h) for h in raw.headers]
    out: list[TableRow] = []
    for label, values in raw.rows:
        if not any(clean_text(v) for v in values):
            continue
        cells = [
            TableCell(header=clean_text(h), period=p, value_text=clean_text(v), value=parse_number(v))
            for h, p, v in zip(raw.headers, periods, values, strict=False)
        ]
        out.append(TableRow(
            filing_id=filing_id, table_id=table_id, row_index=len(out), page_number=raw.page_number,
            section=raw.section, table_title=clean_text(raw.title) if raw.title else None,
            unit=unit, unit_text=unit_text, row_label=clean_text(label),
            headers=[""] + [clean_text(h) for h in raw.headers], cells=cells,
        ))
    return out
