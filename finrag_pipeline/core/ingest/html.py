"""Inline-XBRL (EDGAR XHTML) -> pages split at CSS page breaks, and tables rebuilt from the DOM.

One document-order walk produces the page texts, the tables (with the page they sit on) and the page
of every ix:nonFraction fact, so a fact and the table cell showing it point at the same page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree
from lxml import html as lxml_html

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.sections import find_printed_label
from finrag_pipeline.core.ingest.tables import (
    RawTable,
    clean_text,
    find_unit_text,
    is_numeric_text,
    is_title_candidate,
    looks_like_period_header,
)
from finrag_pipeline.core.ingest.unlabelled_totals import UNLABELLED

_BREAK_BEFORE_RE = re.compile(r"(?:page-)?break-before\s*:\s*(always|page|left|right)", re.I)
_BREAK_AFTER_RE = re.compile(r"(?:page-)?break-after\s*:\s*(always|page|left|right)", re.I)
_BOLD_RE = re.compile(r"font-weight\s*:\s*(bold|[6-9]00)", re.I)
_HIDDEN_RE = re.compile(r"display\s*:\s*none", re.I)
_BLOCK_TAGS = frozenset({"div", "p", "tr", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "table",
                         "section", "article", "footer", "blockquote", "hr", "center", "body"})
_SKIP_TAGS = frozenset({"head", "script", "style", "title"})
_BOLD_TAGS = frozenset({"b", "strong", "h1", "h2", "h3", "h4", "h5", "h6", "th"})
_CELL_GLUE_RE = re.compile(r"^(\)|%|\)%|\)\s*%|pts?|bps)$", re.I)
_CURRENCY = frozenset({"$", "€", "£", "¥", "US$"})


def local_name(el: etree._Element) -> str:
    """Lower-case tag without namespace ("ix:nonFraction" -> "nonfraction"); "" for comments/PIs."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()


def _declares_inline_xbrl(path: str | Path) -> bool:
    """The inline-XBRL namespace or an ix:header near the top: the document claims to be iXBRL."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16).lower()
    return b"http://www.xbrl.org/2013/inlinexbrl" in head or b"<ix:header" in head


def load_html(path: str | Path) -> etree._Element:
    """Parse EDGAR XHTML with the XML parser (keeps ix: namespaces); fall back to the forgiving HTML
    parser for tag soup. Raises IngestError("corrupt") when neither yields a document, and
    IngestError("ixbrl_error") for inline XBRL that is not well-formed XML: the HTML parser would drop
    every fact's unit and period, so that is never a silent fallback."""
    try:
        return etree.parse(str(path), etree.XMLParser(huge_tree=True, resolve_entities=False)).getroot()
    except etree.XMLSyntaxError as exc:
        if _declares_inline_xbrl(path):
            raise IngestError("ixbrl_error", f"inline XBRL is not well-formed XML (line {exc.lineno}): "
                              f"{' '.join(str(exc.msg).split())[:200]}", path=str(path)) from exc
    try:
        root = lxml_html.parse(str(path)).getroot()
    except (etree.ParserError, ValueError, OSError) as exc:
        raise IngestError("corrupt", f"HTML could not be parsed: {exc}", path=str(path)) from exc
    if root is None:
        raise IngestError("corrupt", "HTML parser found no document element", path=str(path))
    return root


@dataclass
class HtmlPage:
    page_number: int
    lines: list[tuple[str, bool]] = field(default_factory=list)   # (text, is_bold)
    n_tables: int = 0

    @property
    def text(self) -> str:
        return "\n".join(t for t, _ in self.lines)

    @property
    def printed_label(self) -> str | None:
        return find_printed_label(self.text)


@dataclass
class HtmlDocument:
    root: etree._Element
    pages: list[HtmlPage]
    tables: list[RawTable]
    fact_pages: dict[str, int]          # ix element id -> page number


class _Walker:
    """Walks the body once, in document order, cutting pages at CSS page breaks."""

    def __init__(self) -> None:
        self.pages: list[HtmlPage] = [HtmlPage(1)]
        self.tables: list[RawTable] = []
        self.fact_pages: dict[str, int] = {}
        self._line: list[str] = []
        self._line_bold = False

    # -- text accumulation
    @property
    def page(self) -> HtmlPage:
        return self.pages[-1]

    def emit(self, text: str | None, bold: bool) -> None:
        if text:
            self._line.append(text)
            if bold and text.strip():
                self._line_bold = True

    def newline(self) -> None:
        line = clean_text("".join(self._line))
        if line:
            self.page.lines.append((line, self._line_bold))
        self._line, self._line_bold = [], False

    def page_break(self) -> None:
        self.newline()
        if self.page.lines or self.page.n_tables:
            self.pages.append(HtmlPage(len(self.pages) + 1))

    # -- traversal
    def walk(self, el: etree._Element, bold: bool = False) -> None:
        name = local_name(el)
        if not name or name in _SKIP_TAGS or (name == "header" and "inlineXBRL" in el.tag):
            return  # ix:header holds hidden facts, contexts and units: not page text
        style = el.get("style") or ""
        if _HIDDEN_RE.search(style):
            return
        if _BREAK_BEFORE_RE.search(style):
            self.page_break()
        bold = bold or name in _BOLD_TAGS or bool(_BOLD_RE.search(style))
        if name == "nonfraction" and el.get("id"):
            self.fact_pages[el.get("id")] = self.page.page_number
        if name == "table":
            self.newline()
            self.table(el)
        elif name == "br":
            self.newline()
        else:
            block = name in _BLOCK_TAGS
            if block:
                self.newline()
            self.emit(el.text, bold)
            for child in el:
                self.walk(child, bold)
                self.emit(child.tail, bold)
            if block:
                self.newline()
        if _BREAK_AFTER_RE.search(style):
            self.page_break()

    def table(self, table_el: etree._Element) -> None:
        page = self.page
        grid = _table_grid(table_el, self.fact_pages, page.page_number)
        for row in grid:
            text = " ".join(t for _, _, t in row)
            if text:
                page.lines.append((text, False))
        raw = build_raw_table(grid, page.page_number)
        if raw is None:
            return
        preceding = page.lines[: len(page.lines) - len([r for r in grid if r])]
        raw.title = _title_from(preceding)
        raw.unit_text = raw.unit_text or _unit_from(preceding)
        page.n_tables += 1
        self.tables.append(raw)


def _cell_text(cell: etree._Element) -> str:
    parts: list[str] = []

    def rec(e: etree._Element) -> None:
        if local_name(e) == "br":
            parts.append(" ")
        parts.append(e.text or "")
        for c in e:
            if isinstance(c.tag, str):
                rec(c)
            parts.append(c.tail or "")

    rec(cell)
    return clean_text("".join(parts))


def _table_grid(table_el: etree._Element, fact_pages: dict[str, int], page_number: int
                ) -> list[list[tuple[int, int, str]]]:
    """Rows of (start_col, end_col, text) for non-empty cells, with EDGAR's split "$", ")" and "%"
    cells merged back into their numbers. Records the page of facts inside the table."""
    rows: list[list[tuple[int, int, str]]] = []
    for tr in table_el.iter():
        if local_name(tr) != "tr":
            continue
        col = 0
        cells: list[tuple[int, int, str]] = []
        for td in tr:
            if local_name(td) not in ("td", "th"):
                continue
            span = int(td.get("colspan") or 1) if (td.get("colspan") or "1").isdigit() else 1
            for f in td.iter():
                if local_name(f) == "nonfraction" and f.get("id"):
                    fact_pages[f.get("id")] = page_number
            text = _cell_text(td)
            if text:
                cells.append((col, col + span, text))
            col += span
        rows.append(_merge_split_cells(cells))
    return rows


def _merge_split_cells(cells: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Drop currency-only spacer cells and glue ")" / "%" cells onto the number before them."""
    out: list[tuple[int, int, str]] = []
    pending_open = False
    for start, end, text in cells:
        if text in _CURRENCY:
            continue
        if text == "(":
            pending_open = True
            continue
        if pending_open:
            text, pending_open = "(" + text, False
        if out and _CELL_GLUE_RE.match(text):
            s, _, prev = out[-1]
            out[-1] = (s, end, prev + text if text.startswith(")") else f"{prev} {text}")
            continue
        out.append((start, end, text))
    return out


_YEAR_CELL_RE = re.compile(r"(?:19|20)\d{2}")


def _is_record_row(row: list[tuple[int, int, str]]) -> bool:
    """A label followed by at least one value; a row of bare years is a header, not a record."""
    if is_numeric_text(row[0][2]):
        return False
    values = [t for _, _, t in row[1:] if is_numeric_text(t)]
    return bool(values) and not all(_YEAR_CELL_RE.fullmatch(v) for v in values)


def build_raw_table(grid: list[list[tuple[int, int, str]]], page_number: int) -> RawTable | None:
    """Headers, label column and value columns from a cell grid; None for layout tables (no numbers)."""
    rows = [r for r in grid if r]
    if len(rows) < 2:
        return None
    data_idx = [i for i, r in enumerate(rows) if _is_record_row(r)]
    if not data_idx:
        return None
    header_rows = rows[: data_idx[0]]
    columns = _value_columns(header_rows, [rows[i] for i in data_idx])
    if not columns:
        return None
    # Group labels between the column headers and the first record ("Net sales:", "Current assets:")
    # are the first rows' context, not header text.
    lead_groups: list[str] = []
    while len(header_rows) > 1 and _is_group_label_row(header_rows[-1], columns):
        lead_groups.insert(0, header_rows.pop()[0][2])
    headers = [_compose_header(header_rows, c) for c in columns]
    has_period = any(looks_like_period_header(h) for h in headers)
    if not has_period and (len(columns) < 2 or len(data_idx) < 2):
        return None  # a TOC or a layout table with page numbers, not a financial table
    body: list[tuple[str, list[str]]] = [(g, [""] * len(columns)) for g in lead_groups]
    first = data_idx[0]
    for r in rows[first:]:
        figures = _unlabelled_figures(r, columns) if r[0][0] >= columns[0][0] else None
        if figures is not None:
            body.append((UNLABELLED, figures))   # named or left out by to_table_rows (unlabelled_totals)
            continue
        if is_numeric_text(r[0][2]) or r[0][0] >= columns[0][0]:
            continue  # a repeated header band or a cell off the label column
        label = r[0][2]
        values = [""] * len(columns)
        for cell in r[1:]:
            k = _column_for(cell, columns)
            if k is not None:
                values[k] = f"{values[k]} {cell[2]}".strip() if values[k] else cell[2]
        body.append((label, values))
    header_text = " ".join(t for r in header_rows for _, _, t in r)
    return RawTable(page_number=page_number, headers=headers, rows=body, unit_text=find_unit_text(header_text))


def _is_group_label_row(row: list[tuple[int, int, str]], columns: list[tuple[int, int]]) -> bool:
    """One text cell in the label column ("Net sales:"), or a caption spanning the table that ends in a
    colon ("ASSETS:"): a group label, not a column header."""
    if len(row) != 1:
        return False
    start, end, text = row[0]
    if looks_like_period_header(text) or find_unit_text(text) is not None or is_numeric_text(text):
        return False
    return end <= columns[0][0] or (text.rstrip().endswith(":") and not re.search(r"\d", text))


def _value_columns(header_rows: list[list[tuple[int, int, str]]], data_rows: list[list[tuple[int, int, str]]]
                   ) -> list[tuple[int, int]]:
    """Column spans: the most specific (lowest) header row when it covers the values, else the spans of
    the value cells themselves."""
    value_cells = sorted({(s, e) for r in data_rows for s, e, t in r[1:] if is_numeric_text(t)})
    n_value_starts = len({s for s, _ in value_cells})
    for hr in reversed(header_rows):
        spans = [(s, e) for s, e, t in hr if find_unit_text(t) is None]
        if n_value_starts > 1 and len(spans) < 2:
            continue  # a caption or "Year Ended" spanning every column, not the column headers
        covered = sum(1 for v in value_cells if any(s < v[1] and v[0] < e for s, e in spans))
        if spans and covered >= 0.8 * len(value_cells):
            return spans
    merged: list[tuple[int, int]] = []
    for s, e in value_cells:
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def _unlabelled_figures(row: list[tuple[int, int, str]], columns: list[tuple[int, int]]) -> list[str] | None:
    """A row of figures without a label, all in the value columns (a total under a rule), not a band of years."""
    if not all(is_numeric_text(t) for _, _, t in row) or all(_YEAR_CELL_RE.fullmatch(t) for _, _, t in row):
        return None
    values = [""] * len(columns)
    for cell in row:
        k = _column_for(cell, columns)
        if k is None or values[k]:
            return None
        values[k] = cell[2]
    return values


def _column_for(cell: tuple[int, int, str], columns: list[tuple[int, int]]) -> int | None:
    s, e, _ = cell
    best, best_overlap = None, 0
    for k, (cs, ce) in enumerate(columns):
        overlap = min(e, ce) - max(s, cs)
        if overlap > best_overlap:
            best, best_overlap = k, overlap
    return best


def _compose_header(header_rows: list[list[tuple[int, int, str]]], col: tuple[int, int]) -> str:
    parts = []
    for hr in header_rows:
        for s, e, t in hr:
            if s < col[1] and col[0] < e and find_unit_text(t) is None:
                parts.append(t)
    return clean_text(" ".join(parts))


def _title_from(lines: list[tuple[str, bool]]) -> str | None:
    """Nearest preceding bold or upper-case line that is not a unit caption or a page header."""
    for text, bold in reversed(lines[-6:]):
        if find_unit_text(text) and len(text) < 120 and text.startswith("("):
            continue
        if (bold or text.isupper()) and is_title_candidate(text):
            return text
    return None


def _unit_from(lines: list[tuple[str, bool]]) -> str | None:
    for text, _ in reversed(lines[-4:]):
        u = find_unit_text(text)
        if u:
            return u
    return None


def parse_html_document(root: etree._Element) -> HtmlDocument:
    """Pages, tables and fact pages from a parsed (X)HTML document."""
    body = next((el for el in root.iter() if local_name(el) == "body"), root)
    walker = _Walker()
    walker.walk(body)
    walker.newline()
    pages = walker.pages
    if len(pages) > 1 and not pages[-1].lines and not pages[-1].n_tables:
        pages.pop()  # a trailing page break leaves an empty page
    return HtmlDocument(root=root, pages=pages, tables=walker.tables, fact_pages=walker.fact_pages)
