"""10-K PDFs: text per physical page with pypdfium2, tables only where a page holds tables.

pypdfium2 reads a page's text in ~7 ms; pdfplumber's word extraction costs 0.2-0.9 s a page. So
every page gets pypdfium2 text, a cheap line test picks the pages that hold tables, and only those
get word boxes. EDGAR-rendered PDFs seldom have ruling lines, so tables are rebuilt from word
positions: numbers are right-aligned in columns, headers sit above them, labels sit on the left.
Word boxes come from pdfium's char boxes by default (~25 ms a page); pdfplumber's extract_words
gives the same tables at 0.2-0.9 s a page and stays available as ``engine="pdfplumber"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Literal

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.tables import (
    DATE_RE,
    UNIT_LINE_RE,
    YEAR_RE,
    RawTable,
    clean_text,
    find_unit_text,
    is_numeric_text,
    is_title_candidate,
    looks_like_period_header,
)
from finrag_pipeline.core.ingest.text_quality import check_text_layer
from finrag_pipeline.core.ingest.unlabelled_totals import UNLABELLED

_NUM = r"(?:\(?\$?\s?\d[\d,]*(?:\.\d+)?\s?\)?\s?%?|[—–-])"
_TABLE_LINE_RE = re.compile(r"[A-Za-z].*?(?:\s+" + _NUM + r"){2,}\s*$")
_FOOTNOTE_RE = re.compile(r"(\s*\(\d{1,2}\))+$")
_YEAR_ONLY_RE = re.compile(r"(?:19|20)\d{2}")
_PAGE_FOOTER_RE = re.compile(r"\d{1,3}|[ivxl]{1,5}")


def _clean_page_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").replace("\ufffe", "")
    return "\n".join(line.rstrip() for line in text.split("\n"))


def read_page_texts(path: str | Path) -> list[str]:
    """Text of every physical page (pypdfium2). Raises IngestError for corrupt PDFs and for PDFs
    without a text layer (scans): those need OCR, never a silently empty filing."""
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise IngestError("corrupt", f"PDF could not be opened: {exc}", path=str(path)) from exc
    try:
        if len(pdf) == 0:
            raise IngestError("corrupt", "PDF has no pages", path=str(path))
        texts: list[str] = []
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            texts.append(_clean_page_text(textpage.get_text_range()))
            textpage.close()
            page.close()
    except pdfium.PdfiumError as exc:
        raise IngestError("corrupt", f"PDF page could not be read: {exc}", path=str(path)) from exc
    finally:
        pdf.close()
    check_text_layer(texts, path=str(path))  # garbled_text / needs_ocr (mostly scanned)
    return texts


def document_info(path: str | Path) -> dict[str, str]:
    """The PDF's Info dictionary (Title, Author, Subject, Producer...), empty when unreadable."""
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError:
        return {}
    try:
        info = {k: str(v) for k, v in pdf.get_metadata_dict(skip_empty=True).items()}
    except Exception:  # noqa: BLE001 - metadata is a fallback; a broken Info dict must not stop parsing
        info = {}
    finally:
        pdf.close()
    title = xmp_title(path)
    if title:
        info["XMPTitle"] = title
    return info


_XMP_RE = re.compile(rb"<x:xmpmeta.*?</x:xmpmeta>", re.S)
_XMP_TITLE_RE = re.compile(r"<dc:title>.*?<rdf:li[^>]*>(.*?)</rdf:li>", re.S)


def xmp_title(path: str | Path, max_bytes: int = 8 << 20) -> str | None:
    """dc:title of the document's XMP packet (stored uncompressed, as the XMP spec recommends)."""
    with open(path, "rb") as fh:
        head = fh.read(max_bytes)
    m = _XMP_RE.search(head)
    if not m:
        return None
    t = _XMP_TITLE_RE.search(m.group(0).decode("utf-8", errors="ignore"))
    return clean_text(re.sub(r"<[^>]+>", "", t.group(1))) or None if t else None


def page_has_tables(text: str, *, min_lines: int = 3) -> bool:
    """Cheap test on plain text: at least ``min_lines`` lines end in two or more numeric columns."""
    return sum(1 for line in text.splitlines() if _TABLE_LINE_RE.match(line.strip())) >= min_lines


# ---------------------------------------------------------------- table reconstruction from words


@dataclass
class Segment:
    """Words on one line close enough to be one cell."""

    x0: float
    x1: float
    text: str

    @property
    def numeric(self) -> bool:
        return is_numeric_text(self.text)


@dataclass
class Line:
    top: float
    segments: list[Segment]

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.segments)


def _group_lines(words: Sequence[dict], tol: float = 2.5) -> list[list[dict]]:
    lines: list[list[dict]] = []
    for w in sorted(words, key=lambda w: (w["top"], w["x0"])):
        if lines and abs(w["top"] - lines[-1][0]["top"]) <= tol:
            lines[-1].append(w)
        else:
            lines.append([w])
    return [sorted(ln, key=lambda w: w["x0"]) for ln in lines]


def words_to_lines(words: Sequence[dict]) -> list[Line]:
    """Words (pdfplumber dicts with x0, x1, top, bottom, text) -> lines of cell segments.

    A gap wider than ~60% of the text height separates cells; a lone "$" is dropped and a lone ")"
    or "%" is glued to the number before it (renderers emit them as separate words).
    """
    if not words:
        return []
    height = median(w["bottom"] - w["top"] for w in words)
    gap = max(3.0, 0.6 * height)
    out: list[Line] = []
    # Some renderers set a row's numbers a third of a line lower than its label (Apple FY2019's
    # statements: 2.7 pt on 8.3 pt text); lines are at least a text height apart, so under half of one is
    # still the same line.
    for lw in _group_lines(words, tol=max(2.5, 0.45 * height)):
        segs: list[Segment] = []
        for w in lw:
            t = w["text"]
            if segs and w["x0"] - segs[-1].x1 <= gap:
                segs[-1].text += ("" if t in (")", "%", ")%") else " ") + t
                segs[-1].x1 = w["x1"]
            else:
                segs.append(Segment(w["x0"], w["x1"], t))
        merged: list[Segment] = []
        for s in segs:
            if s.text in ("$", "€", "£"):
                continue
            if merged and s.text in (")", "%", ")%", ") %"):
                merged[-1].text += s.text
                merged[-1].x1 = s.x1
                continue
            s.text = re.sub(r"^\$\s*", "", s.text)
            merged.append(s)
        if merged:
            out.append(Line(lw[0]["top"], merged))
    return out


def _is_record(line: Line) -> bool:
    """A label on the left followed by numbers (not a row of bare years, which is a header)."""
    segs = line.segments
    if len(segs) < 2 or segs[0].numeric:
        return False
    values = [s.text for s in segs[1:] if s.numeric]
    return bool(values) and not all(_YEAR_ONLY_RE.fullmatch(v) for v in values)


def _is_figure_row(line: Line) -> bool:
    """Figures without a label (a subtotal under a rule: core/ingest/unlabelled_totals.py decides what it is),
    not a row of bare years (a header)."""
    segs = line.segments
    return bool(segs) and all(s.numeric for s in segs) and not all(_YEAR_ONLY_RE.fullmatch(s.text) for s in segs)


def _is_prose(line: Line, page_width: float) -> bool:
    return any(len(s.text) > 90 or (s.x1 - s.x0) > 0.55 * page_width for s in line.segments)


def _find_blocks(lines: list[Line], page_width: float) -> list[tuple[int, int]]:
    """[start, end) line ranges of tables: record lines, allowing group labels and wrapped labels in
    between. Only prose that runs into the value columns, or three non-record lines, ends a table."""
    value_x0 = [s.x0 for ln in lines if _is_record(ln) for s in ln.segments[1:] if s.numeric]
    values_start = sorted(value_x0)[len(value_x0) // 5] if value_x0 else page_width
    blocks: list[tuple[int, int]] = []
    start = last = tail = None
    for i, line in enumerate(lines):
        if _is_record(line):
            if start is None:
                start = i
            last = tail = i
        elif start is not None and i == tail + 1 and _is_figure_row(line) and line.segments[0].x1 > values_start:
            tail = i   # figures right under the rows, in the value columns: the table may end with its total
        elif start is not None:
            runs_into_values = line.segments[-1].x1 > values_start
            if (_is_prose(line, page_width) and runs_into_values) or i - last > 3:
                blocks.append((start, tail + 1))
                start = None
    if start is not None:
        blocks.append((start, tail + 1))
    return [(s, e) for s, e in blocks if sum(_is_record(ln) for ln in lines[s:e]) >= 2]


def _columns(records: list[Line]) -> list[tuple[float, float]]:
    """Value columns as (x0, x1) spans, clustered on right edges (numbers are right-aligned)."""
    segs = sorted((s for ln in records for s in ln.segments[1:] if s.numeric), key=lambda s: s.x1)
    clusters: list[list[Segment]] = []
    for s in segs:
        if clusters and s.x1 - clusters[-1][-1].x1 <= 12:
            clusters[-1].append(s)
        else:
            clusters.append([s])
    spans = [(min(s.x0 for s in c), max(s.x1 for s in c)) for c in clusters if len(c) >= 1]
    return sorted(spans)


def _nearest_column(seg: Segment, columns: list[tuple[float, float]], slack: float = 25.0) -> int | None:
    center = (seg.x0 + seg.x1) / 2
    best, dist = None, slack
    for k, (c0, c1) in enumerate(columns):
        if c0 - 2 <= center <= c1 + 2:
            return k
        d = min(abs(center - c0), abs(center - c1))
        if d < dist:
            best, dist = k, d
    return best


_BARE_YEAR = re.compile(r"^(?:19|20)\d{2}$")


def _header_band(lines: list[Line], start: int, columns: list[tuple[float, float]], page_width: float
                 ) -> tuple[list[str], int, list[Line]]:
    """Composed header per column from the lines just above the first record, the index of the
    first header line (the title and unit caption are looked for above it), and the group labels
    between the headers and the first record ("North America", "ASSETS:")."""
    headers = [[] for _ in columns]
    prefix: list[str] = []
    first_col_x0 = columns[0][0] if columns else page_width
    i = start - 1
    band: list[Line] = []
    groups: list[Line] = []
    below_unit = False
    while i >= 0 and start - i <= 7:
        line = lines[i]
        if _is_prose(line, page_width) or _is_record(line):
            break
        if find_unit_text(line.text) and not any(
                looks_like_period_header(s.text) for s in line.segments if s.x1 > first_col_x0 - 30):
            over_values = [s for s in line.segments if s.x1 > first_col_x0 - 30]
            if not band and not below_unit and start - i <= 4 and (
                    line.segments[0].x0 > first_col_x0 - 60
                    or (over_values and all(find_unit_text(s.text) for s in over_values))):
                # Netflix: "2020 2019 2018" / "(in thousands, except ...)" over the value columns / rows; AES:
                # "2021 2020 2019" / "OPERATING ACTIVITIES:  (in millions)", a group label beside the unit
                below_unit = True
                i -= 1
                continue
            break  # the unit caption; "In millions, except per share amounts 2020 2019 2018" is a header
        if (not band and i > 0 and ")" in line.text and "(" not in line.text and len(line.text) <= 20
                and find_unit_text(lines[i - 1].text) and not looks_like_period_header(line.text)):
            # AES 2020: "(in millions, except share and per share" / "data)": the caption's last word, wrapped
            i -= 1
            continue
        in_values = [s for s in line.segments if s.x1 > first_col_x0 - 30]
        if band and len(line.segments) == 1 and not looks_like_period_header(line.text) \
                and _nearest_column(line.segments[0], columns, slack=4.0) is None and is_title_candidate(line.text) \
                and not line.text.rstrip().endswith((".", ":")) \
                and (line.text.isupper() or band[-1].top - line.top > 16.0):
            # a heading over the whole table, in capitals or set apart ("SEGMENT RESULTS OF OPERATIONS"), is its
            # title, not a column header ("Common Stock" over Shares / Amount is one)
            break
        if not in_values and not looks_like_period_header(line.text):
            if not band and start - i <= 3 and not below_unit:
                groups.insert(0, line)
                i -= 1
                continue  # group labels ("ASSETS:", "Net sales:") between the headers and the rows
            break
        band.append(line)
        i -= 1
    for line in reversed(band):
        segs = line.segments
        if len(columns) > 1 and len(segs) == len(columns) and all(_BARE_YEAR.match(x.text.strip()) for x in segs) \
                and any(_nearest_column(x, columns) is None for x in segs):
            # one bare year per column, printed off their right-aligned numbers (PG&E 2016 p88: "2016" 30 points left
            # of its column): the years name the columns left to right
            for k, x in enumerate(sorted(segs, key=lambda x: x.x0)):
                headers[k].append(x.text)
            continue
        # one phrase over all the columns ("Years ended"), unless it sits over one column ("Percentage")
        single_span = len(segs) == 1 and not (DATE_RE.search(segs[0].text) or YEAR_RE.search(segs[0].text)) \
            and not (len(columns) > 1 and not looks_like_period_header(segs[0].text) and segs[0].x1 - segs[0].x0 < 0.8 * (columns[-1][1] - columns[-1][0] + 40)
                     and _nearest_column(segs[0], columns, slack=4.0) is not None)
        for s in segs:
            if single_span or s.x1 < first_col_x0 - 30:
                rest = clean_text(UNIT_LINE_RE.sub(" ", s.text))  # "Years Ended (In Millions, ...)" -> "Years Ended"
                if rest:
                    prefix.append(rest)  # "Years ended" over all columns, or "Year Ended June 30," on the left
                continue
            k = _nearest_column(s, columns)
            if k is not None:
                headers[k].append(s.text)
    composed = [clean_text(" ".join(prefix + h)) if h else "" for h in headers]
    if not band:
        groups = []  # no header band: those lines were not between a header and the rows
    return composed, i + 1, groups


_INTRO_TAIL_RE = re.compile(r"[,;]?\s*(?:is|are|were|was)\s+(?:as\s+follows|summarized\s+(?:as\s+follows|below)|"
                            r"shown\s+below|presented\s+below|set\s+forth\s+below)\b.*$|\s*(?:consisted\s+of|"
                            r"included|includes?)\s+the\s+following\b.*$|[\s(]*\bin\s+(?:millions|thousands|billions)"
                            r"\b[^)]*\)?\s*:?\s*$|\s*:\s*$", re.I)
_INTRO_HEAD_RE = re.compile(r"^(?:the\s+following\s+table(?:s)?\s+(?:sets\s+forth|shows|summarizes|presents|provides|"
                            r"reflects|includes|details)\s+(?:the\s+)?|(?:the\s+)?following\s+is\s+(?:a\s+)?"
                            r"(?:summary\s+of\s+)?)", re.I)
_INTRO_TRAILER_RE = re.compile(r"\s+(?:during|for|as\s+of|at)\s+(?:the\s+)?(?:years?|fiscal|periods?|december|"
                               r"january|june|september|20\d\d)\b.*$|\s+(?:are|is)\s+summarized\s+in\s+the\s+table\s+"
                               r"below.*$|\s+in\s+the\s+table\s+below.*$", re.I)


def intro_caption(sentence: str) -> str | None:
    """The caption a sentence that introduces a table gives it: "Operating income (loss) by segment is
    as follows (in millions):" -> "Operating income (loss) by segment"; "The following table summarizes
    our restricted stock unit activity (in millions):" -> "restricted stock unit activity"."""
    t = clean_text(sentence)
    t = re.split(r"(?<=[a-z0-9)][.;])\s+(?=[A-Z])", t)[-1]   # the last sentence only
    for _ in range(3):
        t = _INTRO_TAIL_RE.sub("", t).strip()
    t = _INTRO_HEAD_RE.sub("", t).strip()
    t = _INTRO_TRAILER_RE.sub("", t).strip()
    t = re.sub(r"^(?:our|the)\s+", "", t, flags=re.I).strip(" ,;:")
    return t[:1].upper() + t[1:] if 3 <= len(t) <= 160 and re.search(r"[A-Za-z]{3}", t) else None


def _title_and_unit(lines: list[Line], top: int, records: list[Line], page_width: float = 612.0
                    ) -> tuple[str | None, str | None]:
    """The table's title and unit caption from the lines above its header: the nearest heading line
    (short, not prose), else the caption of the sentence that introduces it ("... is as follows (in
    millions):"). Looks up to 12 lines above and never past the table before it."""
    unit = None
    title = None
    intro: list[str] = []
    intro_done = scanned_past = False
    for line in reversed(lines[max(0, top - 12):top]):
        text = line.text
        if _is_record(line):
            break   # the table above this one
        if unit is None and find_unit_text(text):
            unit = find_unit_text(text)
            if text.strip().startswith("("):
                continue
        if title is not None or scanned_past:
            continue   # only a unit caption is still looked for (above the title: "(Dollars in millions)")
        if not intro and text.rstrip().endswith(":") and title is None:
            intro = [text]    # "... is as follows (in millions):" introduces the table
            continue
        if intro and not intro_done:
            wrapped = _is_prose(line, page_width) or (len(text) > 60 and not text.rstrip().endswith(":"))
            if wrapped and len(intro) < 4:
                intro.insert(0, text)   # the introducing sentence, wrapped over lines
                intro_done = text.rstrip().endswith(".")   # it starts on this line
                if not intro_done:
                    continue
            intro_done = True
        if title is None and len(text) <= 100 and is_title_candidate(text) and not _is_prose(line, page_width) \
                and not text.rstrip().endswith((".", ":", ",", ";")) and not text[:1].islower():
            title = text
            continue
        if intro or _is_prose(line, page_width) or text.rstrip().endswith("."):
            scanned_past = True   # prose: a heading further up belongs to something else
    if title is None and intro:
        title = intro_caption(" ".join(intro))
    if title and unit is None:
        unit = find_unit_text(title)
    return title, unit


def tables_from_words(words: Sequence[dict], page_number: int, page_width: float) -> list[RawTable]:
    """Rebuild the tables on one page from its words."""
    lines = words_to_lines(words)
    # The running footer ("Financial Statements  Consolidated Statements of Income  74") is no record.
    while lines and _PAGE_FOOTER_RE.fullmatch(lines[-1].segments[-1].text) and \
            sum(s.numeric for s in lines[-1].segments) == 1:
        lines.pop()
    out: list[RawTable] = []
    for start, end in _find_blocks(lines, page_width):
        records = [ln for ln in lines[start:end] if _is_record(ln)]
        columns = _columns(records)
        if not columns:
            continue
        headers, top, groups = _header_band(lines, start, columns, page_width)
        if len(columns) == 1 and not any(headers):
            continue  # an index of page numbers ("Consolidated Balance Sheets ... 31"), not a table
        rows: list[tuple[str, list[str]]] = []
        indents: list[float] = []
        pending_label = ""
        for line in [*groups, *lines[start:end]]:
            figures = _figure_values(line, columns) if _is_figure_row(line) else None
            if figures is not None:
                pending_label = ""
                rows.append((UNLABELLED, figures))   # named or left out by to_table_rows (unlabelled_totals)
                indents.append(line.segments[0].x0)
                continue
            if not _is_record(line):
                # A text-only line inside a table: a group label ("Net sales:") or a wrapped label.
                pending_label = line.text if len(line.segments) == 1 else ""
                rows.append((line.text, [""] * len(columns)))
                indents.append(line.segments[0].x0)
                continue
            label_parts = [s.text for s in line.segments if s.x1 < columns[0][0] - 2 and not s.numeric]
            label = " ".join(label_parts) or line.segments[0].text
            indent = line.segments[0].x0
            if pending_label and label[:1].islower() and not pending_label.rstrip().endswith(":"):
                rows.pop()
                indent = indents.pop()
                label = f"{pending_label} {label}"  # a label wrapped onto two lines
            pending_label = ""
            values = [""] * len(columns)
            for s in line.segments:
                if s.numeric and s.x1 >= columns[0][0] - 2:
                    k = _nearest_column(s, columns)
                    if k is not None and not values[k]:
                        values[k] = s.text
            rows.append((_FOOTNOTE_RE.sub("", label), values))
            indents.append(indent)
        title, unit = _title_and_unit(lines, top, records, page_width)
        if out and not any(headers) and len(out[-1].headers) == len(headers):
            # The rest of a table interrupted by a long label: same columns as the one above.
            headers, title, unit = out[-1].headers, out[-1].title, unit or out[-1].unit_text
        header_text = " ".join(ln.text for ln in lines[top:start])
        out.append(RawTable(page_number=page_number, headers=headers, rows=rows, title=title,
                            unit_text=unit or find_unit_text(header_text), extra={"indents": indents}))
    return out


def _figure_values(line: Line, columns: list[tuple[float, float]]) -> list[str] | None:
    """A figure row's values by column; None when a figure sits outside the value columns (a page number, a
    footnote mark) or two figures fall in one column."""
    values = [""] * len(columns)
    for s in line.segments:
        k = _nearest_column(s, columns) if s.x1 >= columns[0][0] - 2 else None
        if k is None or values[k]:
            return None
        values[k] = s.text
    return values


def pdfium_words(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, gap_factor: float = 0.2) -> list[dict]:
    """Words with pdfplumber-style boxes (x0, x1, top, bottom, text) from pdfium's loose char boxes.

    Loose boxes span the glyph advance, so the gap between two glyphs of a word is ~0 and a space or
    a column gap is clearly wider; ~25 ms a page against pdfplumber's 0.2-0.9 s.
    """
    height = page.get_height()
    rect = pdfium_c.FS_RECTF()
    words: list[dict] = []
    cur: dict | None = None
    for i in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, i)
        ch = chr(code) if code else ""
        if not ch or code in (0xFFFE, 0xFFFF) or ch.isspace() or pdfium_c.FPDFText_IsGenerated(textpage, i) == 1:
            if cur:
                words.append(cur)
                cur = None
            continue
        pdfium_c.FPDFText_GetLooseCharBox(textpage, i, rect)
        x0, x1, top, bottom = rect.left, rect.right, height - rect.top, height - rect.bottom
        if cur and (x0 - cur["x1"] > (bottom - top) * gap_factor or abs(top - cur["top"]) > 2):
            words.append(cur)
            cur = None
        if cur is None:
            cur = {"x0": x0, "x1": x1, "top": top, "bottom": bottom, "text": ch}
        else:
            cur["text"] += ch
            cur["x1"] = max(cur["x1"], x1)
    if cur:
        words.append(cur)
    return words


TableEngine = Literal["pdfium", "pdfplumber"]


def extract_tables(path: str | Path, page_numbers: Sequence[int], *, engine: TableEngine = "pdfium"
                   ) -> list[RawTable]:
    """Tables of the given 1-based pages, rebuilt from word positions.

    ``engine="pdfium"`` (default) takes words from pdfium's char boxes; ``"pdfplumber"`` from
    ``extract_words`` (same reconstruction, ~15x slower; kept as a cross-check and a fallback).
    """
    if engine == "pdfplumber":
        return _extract_tables_pdfplumber(path, page_numbers)
    out: list[RawTable] = []
    pdf = pdfium.PdfDocument(str(path))
    try:
        for n in page_numbers:
            page = pdf[n - 1]
            textpage = page.get_textpage()
            out.extend(tables_from_words(pdfium_words(page, textpage), n, float(page.get_width())))
            textpage.close()
            page.close()
    finally:
        pdf.close()
    return out


def _extract_tables_pdfplumber(path: str | Path, page_numbers: Sequence[int]) -> list[RawTable]:
    import pdfplumber  # imported here: ~0.3 s, and the default engine never needs it

    out: list[RawTable] = []
    with pdfplumber.open(str(path)) as pdf:
        for n in page_numbers:
            page = pdf.pages[n - 1]
            words = page.extract_words(x_tolerance=1.5, y_tolerance=2.5, keep_blank_chars=False)
            out.extend(tables_from_words(words, n, float(page.width)))
            page.flush_cache()  # pdfplumber keeps every parsed object per page otherwise
    return out
