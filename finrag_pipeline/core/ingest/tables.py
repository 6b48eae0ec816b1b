"""Normalisation shared by PDF and HTML tables: numbers, units, column periods, and RawTable -> TableRow.

Both extractors reduce a table to a ``RawTable`` (a label column plus value columns with composed
headers); everything that interprets text (what a number is, which period a column means, what unit
the table is in) lives here so PDF and HTML agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from finrag_pipeline.core.ingest.unlabelled_totals import UNLABELLED, resolve_unlabelled_totals
from finrag_pipeline.core.models import TableCell, TableRow
from finrag_pipeline.core.numbers import NIL_DASHES, parse_cell

DASHES = NIL_DASHES   # kept for importers of this name

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH_RE = (r"(?P<month>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
             r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
# "September 24, 2022", "Sept. 24,2022", "June 30 2022" (EDGAR <br/> sometimes eats the space).
DATE_RE = re.compile(_MONTH_RE + r"\s*(?P<day>\d{1,2})\s*,?\s*(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)
YEAR_RE = re.compile(r"(?<![\d,.$])((?:19|20)\d{2})(?![\d,.%])")
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
    """A table cell's number (core.numbers.parse_cell: the one cell parser)."""
    return parse_cell(text, dash_value=dash_value)


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
    d = _column_date(h)
    if d is not None:
        d = _column_year(h, d)
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


def _column_date(header: str) -> date | None:
    """The date of a column: the header's date, or its LAST date when a spanning title is joined to the column's own
    header ("As of May 31, 2019 and 2018 May 31, 2018" is the May 31, 2018 column, not the title's first date)."""
    dates = list(DATE_RE.finditer(header))
    return parse_date(dates[-1].group(0)) if len(dates) >= 2 else parse_date(header)


_TRAILING_YEAR_RE = re.compile(r"(?<![\d,.$])((?:19|20)\d{2})\s*$")


def _column_year(header: str, d: date) -> date:
    """The date of the column a merged header names: "December 31, 2021 and 2020 2020" and "Years ended December 31,
    2021, 2020, and 2019 2020" are the 2020 column under a heading that lists every year (the heading's first date
    alone would give each column 2021). The column's own year is the standalone year at the end."""
    m = _TRAILING_YEAR_RE.search(header)
    if not m or len(set(re.findall(r"\b(?:19|20)\d{2}\b", header))) < 2 or int(m.group(1)) == d.year:
        return d
    try:
        return d.replace(year=int(m.group(1)))
    except ValueError:   # February 29 of a year without one
        return d.replace(year=int(m.group(1)), day=28)


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


# ---------------------------------------------------------------- units per row and per cell

_CURRENCY_UNITS = frozenset({"USD", "USD thousands", "USD millions", "USD billions"})
_SHARES_ROW_RE = re.compile(
    r"weighted[- ]average\b.*\bshares|\bshares\s+(?:used|outstanding)\b|\b(?:average|number\s+of|diluted|basic)\s+"
    r"(?:common\s+|ordinary\s+)?shares\b|\bshares\s+(?:repurchased|purchased|issued|granted|vested|forfeited)"
    r"(?:\s+\(in\s+\w+\))?$|^shares\b|\(shares\)|\bin\s+shares\b", re.I)
_SHARES_NOT_RE = re.compile(r"par\s+value|\bat\s+cost\b|\$|\bamount\b|\bvalue\b|proceeds|payments?\b", re.I)
_PER_SHARE_RE = re.compile(r"\bper\s+(?:common\s+|ordinary\s+|basic\s+|diluted\s+|class\s+\w\s+)?(?:share|unit)\b|"
                           r"\bper[- ]share\b|\bEPS\b|\bearnings\s+per\b|\bdividends?\s+declared\s+per\b", re.I)
_PERCENT_ROW_RE = re.compile(r"\bpercent(?:age)?\b|%|\b(?:tax|growth|interest|discount|churn|return|"
                             r"utili[sz]ation|payout|occupancy|load)\s+rates?\b|\bas\s+a\s+percentage\b|"
                             r"\bbasis\s+points?\b|\bmargins?\s+\(%\)", re.I)
_DAYS_ROW_RE = re.compile(r"\bdays?\s+(?:sales|inventory|payables?|receivables?)\b|\bnumber\s+of\s+days\b|\(days\)|"
                          r"\bin\s+days\b|\bdays\s+outstanding\b", re.I)
_RATIO_ROW_RE = re.compile(r"\bratio\b|\bcoverage\b.*\(x\)|\btimes\s+interest\b", re.I)
_COUNT_ROW_RE = re.compile(r"^(?:number\s+of\s+(?:employees|stores|locations|restaurants|customers|clubs|"
                           r"warehouses|members|subscribers|units|aircraft|deliveries))\b|\bheadcount\b", re.I)
_PERCENT_HEADER_RE = re.compile(r"%|\bpercent", re.I)


def table_units(unit_text: str | None) -> tuple[str | None, str | None]:
    """(money unit, share unit) a table's caption states.

    "(In millions, except per share amounts)" -> ("USD millions", "shares millions");
    "(in millions, except number of shares, which are reflected in thousands, and per-share amounts)"
    -> ("USD millions", "shares thousands"). Shares follow the table's scale unless stated.
    """
    base = normalize_unit(unit_text)
    t = (unit_text or "").lower()
    share = None
    m = re.search(r"\bshares?\b[^;)]{0,40}?\bin\s+(thousands|millions|billions)", t) or \
        re.search(r"(thousands|millions|billions)\s+of\s+shares", t)
    if m:
        share = f"shares {m.group(1)}"
    elif base and base.startswith("USD ") and base.split(" ")[1] in ("thousands", "millions", "billions"):
        share = f"shares {base.split(' ')[1]}"
    elif base and base.startswith("shares"):
        share = base
    return base, share


def cell_unit(value_text: str, header: str | None = None) -> str | None:
    """The unit a single cell states by itself: "12.5 %" -> "percent", "3.2x" -> "ratio", else None."""
    t = clean_text(value_text)
    if not t:
        return None
    if t.endswith("%") or t.endswith("%)"):
        return "percent"
    value = parse_number(t)
    # A "Percentage change" column header makes its bare numbers percentages; a long header is text the
    # layout merged from several lines (Microsoft's MD&A summary) and says nothing about one column, and
    # a value of 1,000 or more is no percentage.
    if (header and len(header) <= 40 and _PERCENT_HEADER_RE.search(header) and value is not None
            and abs(value) < 1000 and not re.search(r"\$", t)):
        return "percent"
    if re.fullmatch(r"\(?-?\d[\d,]*(?:\.\d+)?\)?\s?[x×]", t):
        return "ratio"
    return None


def row_unit(path_text: str, cell_units: list[str | None], table_unit: str | None, share_unit: str | None) -> str | None:
    """One row's unit: what all its valued cells state ("(4.7)%"), else what its label with its group
    headings says ("Diluted" under "Earnings per share:"), else the table's unit. Percentages and per-share values never get the table's currency scale."""
    stated = [u for u in cell_units if u]
    if stated and len(stated) == len(cell_units) and len(set(stated)) == 1:
        return stated[0]  # every valued cell says it: "(4.7)%", "12 %"
    label = path_text
    if _SHARES_ROW_RE.search(label) and not _SHARES_NOT_RE.search(label) and not _PER_SHARE_RE.search(
            re.sub(r"(?:earnings|income|loss)\s+per\s+share", "", label, flags=re.I)):
        return share_unit or "shares"
    if _PER_SHARE_RE.search(label):
        return "USD per share"
    if _PERCENT_ROW_RE.search(label):
        return "percent"
    if _DAYS_ROW_RE.search(label):
        return "days"
    if _RATIO_ROW_RE.search(label) and not re.search(r"\$", label):
        return "ratio"
    if _COUNT_ROW_RE.search(label):
        return None
    if table_unit in ("percent", "USD per share") and stated:
        return stated[0]
    return table_unit


def is_currency_unit(unit: str | None) -> bool:
    return unit in _CURRENCY_UNITS


def currency_unit_violations(rows: list[TableRow]) -> list[TableRow]:
    """Rows whose values are percentages or per-share amounts but whose unit is a currency scale
    (the check behind the ``table_row_units`` asset check)."""
    bad = []
    for r in rows:
        if not is_currency_unit(r.unit):
            continue
        path = " ".join(r.row_path or [r.row_label])
        valued = [c for c in r.cells if clean_text(c.value_text) and c.value is not None]
        all_percent = bool(valued) and all(clean_text(c.value_text).endswith(("%", "%)")) for c in valued)
        if all_percent or (_PER_SHARE_RE.search(path) and not _SHARES_ROW_RE.search(path)):
            bad.append(r)
    return bad


# ---------------------------------------------------------------- group headings -> row_path

_TOTAL_RE = re.compile(r"^total\b", re.I)
_BARE_YEARS_RE = re.compile(r"(?:^|\s)(?:19|20)\d{2}\s+(?:19|20)\d{2}(?:\s|$)")


class _HeadingStack:
    """Group headings seen so far in a table. With indents (PDF word boxes) a heading holds the rows
    indented deeper than itself; without, a heading ending in ":" ("Current assets:") is a subgroup
    of the last plain heading ("North America") and a "Total ..." row closes it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, float | None, bool]] = []   # (heading, indent, ends with colon)

    def push(self, heading: str, indent: float | None) -> None:
        colon = heading.rstrip().endswith(":")
        if indent is not None and all(i is not None for _, i, _ in self.items):
            self.items = [h for h in self.items if h[1] < indent - 1]   # type: ignore[operator]
        elif colon:
            self.items = [h for h in self.items if not h[2]]
        else:
            self.items = []
        self.items.append((heading, indent, colon))

    def path_for(self, label: str, indent: float | None) -> list[str]:
        """The row's path; with indents, a row at a heading's own level (or left of it) closes that
        heading ("Operating income" after the "Costs and expenses:" group)."""
        if indent is not None and all(i is not None for _, i, _ in self.items):
            self.items = [h for h in self.items if h[1] < indent - 1]  # type: ignore[operator]
        return [_heading_text(h) for h, _, _ in self.items] + [label]

    def after_row(self, label: str) -> None:
        # "Total current assets" ends "Current assets:"; the next rows are outside it.
        if _TOTAL_RE.match(label) and self.items and self.items[-1][2] and self.items[-1][1] is None:
            self.items.pop()


def _heading_text(h: str) -> str:
    return clean_text(h).rstrip(":").strip()


def to_table_rows(raw: RawTable, filing_id: str, table_number: int,
                  inherited_headings: list[tuple[str, float | None, bool]] | None = None) -> list[TableRow]:
    """One TableRow per record row of ``raw``. Rows without any value (group labels such as
    "Net sales:" or a segment name) are not records: they become the ``row_path`` of the rows below
    them. Units are per row (and per cell where a cell differs); the table's caption is the default.

    ``inherited_headings``: the group headings still open at the end of the table this one continues
    (a statement broken over a page); the headings open at the end are left in ``raw.extra["open_headings"]``."""
    from finrag_pipeline.core.ingest.statements import classify_table  # statements imports nothing from here

    if any(label == UNLABELLED for label, _ in raw.rows):
        # figures printed without a label: a block's total when they sum the rows above, else left out
        raw.rows, indents_in, _ = resolve_unlabelled_totals(raw.rows, raw.extra.get("indents"))
        if raw.extra.get("indents") is not None:
            raw.extra["indents"] = indents_in
    table_id = f"{filing_id}:p{raw.page_number}:t{table_number}"
    unit_text = clean_text(raw.unit_text) if raw.unit_text else None
    table_unit, share_unit = table_units(unit_text)
    periods = [normalize_period(h) for h in raw.headers]
    headers = [clean_text(h) for h in raw.headers]
    indents: list[float | None] = list(raw.extra.get("indents") or [None] * len(raw.rows))
    title = clean_text(raw.title) if raw.title else None
    statement_type = classify_table(title, [label for label, values in raw.rows if any(clean_text(v) for v in values)],
                                    raw.section)
    stack = _HeadingStack()
    stack.items = list(inherited_headings or [])
    out: list[TableRow] = []
    last_was_heading = False
    flat_groups = _flat_group_headings(raw.rows, indents)
    flat: tuple[str, float] | None = None   # a heading printed at its rows' own indent ("Revenue" over segments)
    # A table without group headings whose short title names what its rows measure ("Backlog", "Operating
    # income by segment") keeps the title as their group: "Commercial Airplanes" alone reads as revenue.
    # Only a title read off the table's own lines (not a fallback from the page, section or table before),
    # that does not read like a header row ("Unrealized Unrealized Total", "In millions ...").
    words = (title or "").lower().split()
    root = [title] if title and statement_type not in ("income_statement", "balance_sheet", "cash_flow", "equity") \
        and len(words) <= 6 and len(set(words)) == len(words) and not find_unit_text(title) \
        and "title" not in raw.extra.get("context", {}) \
        and not any(not any(clean_text(v) for v in vals) and clean_text(lbl) for lbl, vals in raw.rows) else []
    for k, ((label, values), indent) in enumerate(zip(raw.rows, indents, strict=False)):
        label = clean_text(label)
        if not any(clean_text(v) for v in values):
            if label and last_was_heading and label[:1].islower() and stack.items:
                head, head_indent, _ = stack.items.pop()   # a heading wrapped onto two lines
                label, indent = f"{head} {label}", head_indent
            if label:
                stack.push(label, indent)
                last_was_heading = True
                flat = (_heading_text(label), indent) if k in flat_groups and indent is not None else None
            continue
        last_was_heading = False
        path = stack.path_for(label, indent)
        if flat is not None and indent is not None and indent >= flat[1] - 1 and flat[0] not in path:
            path = [*path[:-1], flat[0], path[-1]]
        path = [*root, *path]
        units = [cell_unit(v, h) for h, v in zip(headers, values, strict=False)]
        valued_units = [u for u, v in zip(units, values, strict=False) if clean_text(v) and parse_number(v) is not None]
        unit = row_unit(" ".join(path), valued_units, table_unit, share_unit)
        cells = [
            TableCell(header=h, period=p, value_text=clean_text(v), value=parse_number(v),
                      unit=u if u and u != unit else None)
            for h, p, v, u in zip(headers, periods, values, units, strict=False)
        ]
        out.append(TableRow(
            filing_id=filing_id, table_id=table_id, row_index=len(out), page_number=raw.page_number,
            section=raw.section, table_title=title, unit=unit, unit_text=unit_text, row_label=label,
            headers=[""] + headers, cells=cells, row_path=path, statement_type=statement_type,
        ))
        stack.after_row(label)
        if flat is not None and _TOTAL_RE.match(label):
            flat = None   # "Total" closes the flat group
    raw.extra["open_headings"] = list(stack.items)
    return out


def _flat_group_headings(rows: list[tuple[str, list[str]]], indents: list[float | None]) -> set[int]:
    """Indexes of headings printed at the same indent as the rows they group (Microsoft's "Revenue" /
    "Operating Income" over the same segment names): a heading followed, at its own indent, by records
    that a "Total" row closes before the next heading."""
    out: set[int] = set()
    for i, ((label, values), indent) in enumerate(zip(rows, indents, strict=False)):
        if indent is None or any(clean_text(v) for v in values) or not clean_text(label) \
                or (find_unit_text(label) and not re.search(r"[A-Za-z]{3}", UNIT_LINE_RE.sub("", label))) \
                or _BARE_YEARS_RE.search(label):
            continue   # a unit caption or a line of column years is a header line, not a group ("Revenues (in millions)" is)
        records_at_level = 0
        for (lbl, vals), ind in zip(rows[i + 1:], indents[i + 1:], strict=False):
            if ind is None:
                break
            if not any(clean_text(v) for v in vals):
                break   # the next heading
            if _TOTAL_RE.match(clean_text(lbl)):
                if records_at_level:
                    out.add(i)
                break
            if ind < indent - 1:
                break
            if abs(ind - indent) <= 1:
                records_at_level += 1
    return out
