"""10-K Item detection: which section ("Item 7", "Item 1A", ...) each page belongs to.

A section starts at a heading line ("Item 7. Management's Discussion ..." or "ITEM 7A." at the start of
a line). The table of contents lists every item on one page, so pages that look like a TOC are
ignored; and because Items only move forward through a 10-K, a heading for an earlier Item than the
one in force (a cross-reference that happens to start a line) is ignored too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Titles from Form 10-K itself, used when a heading carries only the item number
# (Microsoft prints "Item 8" as a running header on every page).
STANDARD_TITLES: dict[str, str] = {
    "Item 1": "Business",
    "Item 1A": "Risk Factors",
    "Item 1B": "Unresolved Staff Comments",
    "Item 1C": "Cybersecurity",
    "Item 2": "Properties",
    "Item 3": "Legal Proceedings",
    "Item 4": "Mine Safety Disclosures",
    "Item 5": "Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases "
              "of Equity Securities",
    "Item 6": "[Reserved]",
    "Item 7": "Management's Discussion and Analysis of Financial Condition and Results of Operations",
    "Item 7A": "Quantitative and Qualitative Disclosures About Market Risk",
    "Item 8": "Financial Statements and Supplementary Data",
    "Item 9": "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure",
    "Item 9A": "Controls and Procedures",
    "Item 9B": "Other Information",
    "Item 9C": "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections",
    "Item 10": "Directors, Executive Officers and Corporate Governance",
    "Item 11": "Executive Compensation",
    "Item 12": "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder Matters",
    "Item 13": "Certain Relationships and Related Transactions, and Director Independence",
    "Item 14": "Principal Accountant Fees and Services",
    "Item 15": "Exhibits and Financial Statement Schedules",
    "Item 16": "Form 10-K Summary",
}

HEADING_RE = re.compile(
    r"^\s*item\s+(?P<num>1[0-6]|[1-9])(?P<letter>[a-c])?\b\s*(?P<sep>[.:\-\u2013\u2014|])?\s*(?P<title>.*)$",
    re.IGNORECASE,
)
_TOC_PAGE_NUMBER_RE = re.compile(r"\s(\d{1,3}|[ivx]{1,5})\s*$", re.IGNORECASE)


def item_key(item: str) -> tuple[int, str]:
    """Sort key: "Item 7A" -> (7, "A"); Items only move forward through a 10-K."""
    m = re.match(r"Item (\d+)([A-C]?)", item)
    return (int(m.group(1)), m.group(2)) if m else (0, "")


def parse_heading(line: str) -> tuple[str, str | None] | None:
    """("Item 7A", "Quantitative and ...") for a heading line, else None.

    Accepts "Item 7.", "ITEM 7A:", "Item 1B, 2, 3, 4" (a running header: the first item counts).
    Rejects prose that merely starts with an item reference ("Item 7 of this Form 10-K ...").
    """
    m = HEADING_RE.match(line)
    if not m:
        return None
    item = f"Item {m['num']}{(m['letter'] or '').upper()}"
    title = m["title"].strip()
    if m["sep"] in (None, "") and title and not title.startswith(","):
        # "Item 7 of Part II ..." is prose; a heading has a separator or nothing after the number.
        if title[:1].islower() or len(title) > 200:
            return None
        if re.match(r"(of|in|and|to|under|for|above|below)\b", title, re.I):
            return None
    if title.startswith(","):
        title = ""
    title = re.sub(r"\s+", " ", title).strip(" .:")
    if len(title) > 200 or (title and title[:1].islower()):
        return None
    return item, (title or None)


def is_toc_page(text: str) -> bool:
    """A table of contents: several Item lines ending in page numbers, or most Items on one page."""
    items: set[str] = set()
    numbered = 0
    for line in text.splitlines():
        h = parse_heading(line)
        if h is None:
            continue
        items.add(h[0])
        if _TOC_PAGE_NUMBER_RE.search(line):
            numbered += 1
    return numbered >= 3 or len(items) >= 8


def page_headings(text: str) -> list[tuple[str, str | None]]:
    """Item headings on a page in reading order (empty for a TOC page)."""
    if is_toc_page(text):
        return []
    out = []
    for line in text.splitlines():
        h = parse_heading(line)
        if h is not None:
            out.append(h)
    return out


# The audited statements printed after Part IV (Item 8 of NVIDIA 2025, Netflix 2020 and Verizon 2019 says they follow
# Item 15): a page in Part IV that opens with the statements' index, the auditor's report or a primary statement
# starts them, and the exhibit index, a schedule or the signatures end them.
_STATEMENTS_START_RE = re.compile(
    r"^(?:index\s+to\s+(?:the\s+)?(?:consolidated\s+)?financial\s+statements|report\s+of\s+independent\s+registered\s+"
    r"public\s+accounting\s+firm|consolidated\s+(?:statements?\s+of\s+(?:operations|income|earnings)|balance\s+sheets?))\b",
    re.IGNORECASE)
_STATEMENTS_END_RE = re.compile(r"^(?:exhibit\s+index|index\s+to\s+exhibits|signatures?|schedule\s+ii\b)", re.IGNORECASE)
_PART_IV = ("Item 15", "Item 16")
_LEAD_LINES = 4   # the lines a page opens with (its running header, company name and title)


def _opening_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and ln.strip().lower() != "table of contents"][:_LEAD_LINES]


def assign_sections(page_texts: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """(section, section_title) per page.

    The section in force carries over from the previous page. When a heading starts a new section
    on a page, the page belongs to whichever section holds more of its text (a running header at
    the top or a heading above most of the text wins; a section that starts in the last lines of a
    page leaves the page to the previous one). Statements printed after Part IV are Item 8 when Item 8
    itself held at most a page (a pointer to them, or no heading at all): ``_STATEMENTS_START_RE``.
    """
    current: tuple[str | None, str | None] = (None, None)
    out: list[tuple[str | None, str | None]] = []
    item8_pages = 0
    for text in page_texts:
        opening = _opening_lines(text)
        if current[0] in _PART_IV and item8_pages <= 1 and any(_STATEMENTS_START_RE.match(ln) for ln in opening):
            current = ("Item 8", STANDARD_TITLES["Item 8"])
        elif current[0] == "Item 8" and out and out[-1][0] == "Item 8" and item8_pages > 1 \
                and any(_STATEMENTS_END_RE.match(ln) for ln in opening) and _after_part_iv(out):
            current = ("Item 15", STANDARD_TITLES["Item 15"])
        chars: dict[tuple[str | None, str | None], int] = {current: 0}
        for line in ([] if is_toc_page(text) else text.splitlines()):
            h = parse_heading(line)
            if h is not None and not (current[0] is not None and item_key(h[0]) < item_key(current[0])):
                item, title = h
                if title is None and item == current[0]:
                    title = current[1]
                current = (item, title or STANDARD_TITLES.get(item))
                # Headings themselves weigh in, so a heading-only running header claims the page.
                chars[current] = chars.get(current, 0) + 200
            chars[current] = chars.get(current, 0) + len(line.strip())
        best = max(chars.items(), key=lambda kv: kv[1])[0] if any(chars.values()) else current
        item8_pages += best[0] == "Item 8"
        out.append(best)
    return out


def _after_part_iv(assigned: Sequence[tuple[str | None, str | None]]) -> bool:
    """Whether Part IV came before the Item 8 in force (the statements printed after it)."""
    last_other = next((s for s, _ in reversed(assigned) if s != "Item 8"), None)
    return last_other in _PART_IV


_LABEL_RE = re.compile(r"(?:^|\|\s*|\s{2,}|Page\s+)(?P<label>\d{1,3}|[ivxlc]{1,6}|[A-Z]-\d{1,3})\s*$", re.IGNORECASE)


def find_printed_label(text: str) -> str | None:
    """The page number printed in the footer ("Apple Inc. | 2022 Form 10-K | 29" -> "29", "F-12"),
    looked for in the last lines of the page, then in the first line (some put it on top)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in [*reversed(lines[-2:]), *lines[:1]]:
        if len(line) > 80:
            continue
        m = _LABEL_RE.search(line)
        if m and (m.start("label") == 0 or "|" in line or "page" in line.lower() or "  " in line):
            return m.group("label")
    return None
