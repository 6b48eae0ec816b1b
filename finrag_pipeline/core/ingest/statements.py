"""Which financial statement a table is: income statement, balance sheet, cash flow, equity, segment note.

Contract 1 (docs: /work/wt/notes/CONTRACTS.md): ``STATEMENT_TYPES`` and ``classify_table(title,
row_labels, section)``. The title decides when it names a statement ("CONSOLIDATED BALANCE SHEETS",
"Consolidated Statements of Cash Flows"); titles vary a lot between producers (a running header, a
company name, "AWS", or nothing at all), so the row labels decide otherwise: a statement is
recognised by the line items only it prints ("Total liabilities and shareholders' equity" is a
balance sheet whatever the title says). Tables outside Item 8 / the notes (MD&A summaries, selected
financial data) are only tagged as a primary statement when their rows say so strongly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from finrag_pipeline.core.models import TableRow

STATEMENT_TYPES = ("income_statement", "balance_sheet", "cash_flow", "equity", "segment_note", "other")

# Titles that name a statement. Order matters: "comprehensive income" is not the income statement,
# and "statements of shareholders' equity" must not match "balance sheet" words.
_TITLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cash_flow", re.compile(r"\bcash\s+flows?\b", re.I)),
    ("equity", re.compile(r"\b(?:statements?|changes?)\s+(?:of|in)\s+(?:consolidated\s+)?(?:changes\s+in\s+)?"
                          r"(?:total\s+)?(?:share(?:holders|owners)?['’]?|stockholders['’]?|shareowners['’]?|"
                          r"partners['’]?|members['’]?)\s*(?:equity|investment|deficit)|\bstatements?\s+of\s+"
                          r"(?:changes\s+in\s+)?(?:equity|deficit)\b", re.I)),
    ("balance_sheet", re.compile(r"\bbalance\s+sheets?\b|\bstatements?\s+of\s+(?:consolidated\s+)?financial\s+"
                                 r"(?:position|condition)\b", re.I)),
    ("income_statement", re.compile(r"\bstatements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings|"
                                    r"(?:net\s+)?loss|comprehensive\s+(?:income|loss)\s+and|income\s+and|"
                                    r"operations\s+and)\b|\bincome\s+statements?\b|\bstatements?\s+of\s+"
                                    r"(?:consolidated\s+)?(?:results\s+of\s+)?operations\b", re.I)),
    ("segment_note", re.compile(r"\bsegment(?:s|\s+information|\s+results|\s+data|\s+reporting)?\b|"
                                r"\bbusiness\s+segments?\b|\breportable\s+segments?\b", re.I)),
)
_COMPREHENSIVE_ONLY = re.compile(r"\bstatements?\s+of\s+(?:consolidated\s+)?comprehensive\s+(?:income|loss)\b"
                                 r"(?!\s+and)", re.I)

# Row labels that only a given statement prints, with weights. A table is that statement when its
# evidence reaches the threshold and beats the others.
_ROW_EVIDENCE: dict[str, tuple[tuple[re.Pattern[str], float], ...]] = {
    "balance_sheet": (
        (re.compile(r"^total\s+assets$", re.I), 2.0),
        (re.compile(r"^total\s+current\s+assets$", re.I), 1.5),
        (re.compile(r"^total\s+current\s+liabilities$", re.I), 1.5),
        (re.compile(r"^total\s+liabilities\s*(?:,|and)\s.*(?:equity|deficit|investment)", re.I), 3.0),
        (re.compile(r"^total\s+liabilities$", re.I), 1.0),
        (re.compile(r"^(?:total\s+)?(?:share|stock)holders['’]?\s+(?:equity|deficit)$|^total\s+equity$", re.I), 0.5),
        (re.compile(r"^property,?\s+(?:plant\s+)?and\s+equipment,?\s+net$|^goodwill$", re.I), 0.7),
        (re.compile(r"^accounts\s+payable$|^accounts\s+receivable", re.I), 0.5),
        (re.compile(r"^retained\s+earnings|^accumulated\s+deficit|^additional\s+paid-in\s+capital", re.I), 0.5),
    ),
    "income_statement": (
        (re.compile(r"^(?:total\s+)?(?:net\s+)?(?:revenues?|sales|net\s+sales)$|^total\s+(?:net\s+)?revenues?$", re.I),
         1.0),
        (re.compile(r"^(?:total\s+)?costs?\s+of\s+(?:sales|revenues?|goods\s+sold|products\s+sold)", re.I), 1.0),
        (re.compile(r"^gross\s+(?:profit|margin)$", re.I), 1.0),
        (re.compile(r"^(?:total\s+)?operating\s+(?:income|profit|loss)|^income\s+from\s+operations|"
                    r"^(?:operating\s+)?(?:income|loss)\s+\(loss\)\s+from\s+operations", re.I), 1.0),
        (re.compile(r"^(?:income|earnings|loss)\s+(?:\(loss\)\s+)?(?:from\s+continuing\s+operations\s+)?before\s+"
                    r"(?:provision\s+for\s+|the\s+provision\s+for\s+)?(?:income\s+)?tax", re.I), 1.5),
        (re.compile(r"^(?:provision\s+for|benefit\s+from)?\s*income\s+tax(?:es)?(?:\s+expense)?", re.I), 0.5),
        (re.compile(r"^(?:basic|diluted)(?:\s+(?:net\s+)?(?:earnings|income|loss)\s+per\s+share)?$|"
                    r"per\s+(?:common\s+)?share", re.I), 0.7),
        (re.compile(r"^net\s+(?:income|earnings|loss)(?:\s+\(loss\))?(?:\s+attributable\s+to\s+.*)?$", re.I), 0.5),
        (re.compile(r"weighted[- ]average", re.I), 0.7),
    ),
    "cash_flow": (
        (re.compile(r"net\s+cash\s+(?:provided|used|generated|from|\(used)", re.I), 2.0),
        (re.compile(r"^depreciation(?:\s+and\s+amortization|,\s+depletion)?", re.I), 0.5),
        (re.compile(r"^(?:cash\s+flows?\s+from\s+)?(?:operating|investing|financing)\s+activities", re.I), 1.5),
        (re.compile(r"cash(?:,\s+cash\s+equivalents)?.*(?:at|,)\s+(?:the\s+)?(?:beginning|end)\s+of\s+(?:the\s+)?"
                    r"(?:year|period)", re.I), 1.5),
        (re.compile(r"^(?:purchases?|acquisitions?)\s+of\s+property|^capital\s+expenditures$", re.I), 0.7),
        (re.compile(r"stock-based\s+compensation|share-based\s+compensation", re.I), 0.3),
        (re.compile(r"^changes\s+in\s+(?:operating\s+)?assets\s+and\s+liabilities", re.I), 1.0),
    ),
    "equity": (
        (re.compile(r"^balances?(?:,|\s+(?:at|as\s+of))\s", re.I), 2.0),
        (re.compile(r"^(?:cash\s+)?dividends\s+(?:declared|paid)", re.I), 0.3),
        (re.compile(r"^(?:repurchases?|purchases?)\s+of\s+(?:common\s+)?(?:stock|shares)", re.I), 0.3),
    ),
}
_THRESHOLD = {"balance_sheet": 3.0, "income_statement": 3.0, "cash_flow": 3.0, "equity": 4.0}
_SEGMENT_ROW_RE = re.compile(r"\bsegment\b|^total\s+segment", re.I)
_IN_STATEMENTS_RE = re.compile(r"^(?:item\s*8|item\s*15|part\s*iv|notes?)\b", re.I)


def _title_type(title: str) -> str | None:
    if _COMPREHENSIVE_ONLY.search(title) and not re.search(r"\bincome\s+and\s+comprehensive|\boperations\s+and\s+"
                                                            r"comprehensive", title, re.I):
        return "other"  # other comprehensive income is its own statement, not the income statement
    for kind, pattern in _TITLE_RULES:
        if pattern.search(title):
            return kind
    return None


def _row_scores(row_labels: Sequence[str]) -> dict[str, float]:
    scores = dict.fromkeys(_ROW_EVIDENCE, 0.0)
    for raw in row_labels:
        label = re.sub(r"\s+", " ", raw or "").strip(" :")
        if not label:
            continue
        for kind, rules in _ROW_EVIDENCE.items():
            # Each label counts once per statement, at its strongest rule.
            best = max((w for pattern, w in rules if pattern.search(label)), default=0.0)
            scores[kind] += best
    return scores


def classify_table(title: str | None, row_labels: Sequence[str], section: str | None = None) -> str:
    """One of STATEMENT_TYPES for a table, from its title, its row labels and (optionally) its section.

    >>> classify_table("CONSOLIDATED BALANCE SHEETS", ["Cash", "Total assets"])
    'balance_sheet'
    >>> classify_table(None, ["Net cash provided by operating activities", "Net cash used in investing activities"])
    'cash_flow'
    """
    by_title = _title_type(title or "")
    if by_title in ("cash_flow", "balance_sheet", "income_statement", "equity"):
        return by_title
    scores = _row_scores(row_labels)
    # The same line items under several group headings (North America / International / AWS:
    # "Net sales", "Operating income") is a segment table, not a statement.
    # An income statement repeats "Net income attributable to ..." under Basic and Diluted EPS, so
    # it is kept when it shows what a segment table never does (pre-tax income, share counts).
    income_markers = sum(bool(_INCOME_MARKER_RE.search(lbl or "")) for lbl in row_labels)
    # An equity roll-forward repeats its line items too, between "Balance at ..." rows.
    if by_title is None and _repeated_line_items(row_labels) >= 2 and scores["balance_sheet"] < 3.0 \
            and scores["cash_flow"] < 3.0 and scores["equity"] < _THRESHOLD["equity"] \
            and not (income_markers >= 2 and scores["income_statement"] >= 3.0):
        return "segment_note"
    in_statements = section is None or bool(_IN_STATEMENTS_RE.match(section.strip()))
    best_kind, best = max(scores.items(), key=lambda kv: kv[1])
    # Outside Item 8 (MD&A, selected data) a summary table shares statement line items; ask for more.
    need = _THRESHOLD[best_kind] * (1.0 if in_statements else 1.5)
    if best >= need and all(best > s for k, s in scores.items() if k != best_kind):
        if by_title == "segment_note" and best_kind != "balance_sheet":
            return "segment_note"
        return best_kind
    if by_title in ("segment_note", "other"):
        return by_title
    if sum(bool(_SEGMENT_ROW_RE.search(lbl or "")) for lbl in row_labels) >= 2:
        return "segment_note"
    return "other"


_INCOME_MARKER_RE = re.compile(r"before\s+(?:provision\s+for\s+)?(?:income\s+)?tax|weighted[- ]average|per\s+share|"
                               r"^(?:basic|diluted)$", re.I)
_NOT_A_LINE_ITEM = re.compile(r"^(?:basic|diluted|total|other|net|\W*)$", re.I)


def _repeated_line_items(row_labels: Sequence[str]) -> int:
    seen: dict[str, int] = {}
    for raw in row_labels:
        label = re.sub(r"\s+", " ", raw or "").strip(" :").lower()
        if label and not _NOT_A_LINE_ITEM.match(label):
            seen[label] = seen.get(label, 0) + 1
    return sum(1 for n in seen.values() if n > 1)


def statement_periods(periods: Sequence[str | None]) -> list[str]:
    """The distinct periods of a table's columns, in column order ("FY2022", "2022-09-24", ...)."""
    seen: list[str] = []
    for p in periods:
        if p and p not in seen:
            seen.append(p)
    return seen


def find_statement(rows: Sequence[TableRow], statement_type: str, period: str | None = None) -> list[TableRow]:
    """The rows of a filing's primary ``statement_type`` table ("the consolidated balance sheet of
    FY2022"): among the tables so tagged (that have a column for ``period`` when given: "FY2022",
    "2022-12-31", or a bare year matching either), the one in Item 8 with the most rows. Empty when none."""
    if statement_type not in STATEMENT_TYPES:
        raise ValueError(f"unknown statement type {statement_type!r}; valid: {', '.join(STATEMENT_TYPES)}")
    tables: dict[str, list[TableRow]] = {}
    for r in rows:
        if r.statement_type == statement_type:
            tables.setdefault(r.table_id, []).append(r)

    def has_period(table: list[TableRow]) -> bool:
        if period is None:
            return True
        year = period[2:] if period.startswith("FY") else period[:4] if len(period) == 4 else None
        for c in table[0].cells:
            p = c.period or ""
            if p == period or (year and (p == f"FY{year}" or p.startswith(f"{year}-"))):
                return True
        return False

    candidates = [t for t in tables.values() if has_period(t)]
    if not candidates:
        return []
    best = max(candidates, key=lambda t: (bool(_IN_STATEMENTS_RE.match((t[0].section or "").strip())), len(t),
                                          -t[0].page_number))
    return sorted(best, key=lambda r: r.row_index)


_PAGE_HEADING_RE = re.compile(r"^(?:consolidated\s+|combined\s+)?(?:balance\s+sheets?|statements?\s+of\s+[a-z' ’,()-]+"
                              r"|statements?\s+of\s+(?:consolidated\s+)?[a-z' ’,()-]+)(?:\s*\(continued\))?$", re.I)


def page_statement_heading(page_text: str, max_lines: int = 10) -> str | None:
    """The statement a page is headed with ("THE COCA-COLA COMPANY AND SUBSIDIARIES / CONSOLIDATED BALANCE
    SHEETS" -> "CONSOLIDATED BALANCE SHEETS"): a line of its own among the first ones that names a primary
    statement, or None. Tables on the page without a title of their own take it."""
    for line in (page_text or "").splitlines()[:max_lines]:
        line = re.sub(r"\s+", " ", line).strip()
        if 8 <= len(line) <= 90 and _PAGE_HEADING_RE.match(line) and \
                _title_type(line) in ("income_statement", "balance_sheet", "cash_flow", "equity"):
            return line
    return None


def statement_search(page_texts: Sequence[str], statement_type: str) -> list[int]:
    """1-based pages headed with ``statement_type`` (where a missing statement was looked for)."""
    return [i for i, text in enumerate(page_texts, start=1)
            if (h := page_statement_heading(text)) is not None and _title_type(h) == statement_type]
