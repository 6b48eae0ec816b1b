"""A filing page as an image, and where a chunk sits on it (boxes to highlight).

PDF pages are rendered by pypdfium2. Boxes come from pdfium's text page: the chunk's text is located
in the page's characters (whitespace-insensitive, so line breaks and the ingest's text clean-up do not
matter) and pdfium's line rectangles of the matched characters are the boxes. Table rows are found by
their label and then their printed values on the same line; prose windows by their text span.

HTML filings have no page image: their page (a CSS-page-break section) is shown as text, split into
segments with the highlighted spans marked (:func:`text_segments`), and escaped by the template.

Boxes are fractions of the page (0..1, origin top-left), so the browser scales them with the image.
"""

from __future__ import annotations

import atexit
import io
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

RENDER_SCALE = 1.5  # 72 dpi * 1.5: a letter page is 918 x 1188 px, readable and ~150-300 kB as PNG


@dataclass(frozen=True)
class Box:
    """A highlighted rectangle as fractions of the page, origin top-left."""

    x: float
    y: float
    w: float
    h: float

    def css(self) -> str:
        return (f"left:{self.x * 100:.3f}%;top:{self.y * 100:.3f}%;"
                f"width:{self.w * 100:.3f}%;height:{self.h * 100:.3f}%")


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if not ch.isspace())


class PageText:
    """One PDF page's characters: the whitespace-free lower-cased text with, per character, its
    pdfium char index, and the page size in points."""

    def __init__(self, pdf_path: str | Path, page_number: int):
        pdf = pdfium.PdfDocument(str(pdf_path))
        try:
            if not 1 <= page_number <= len(pdf):
                raise ValueError(f"{Path(pdf_path).name} has {len(pdf)} pages, no page {page_number}")
            page = pdf[page_number - 1]
            self.width, self.height = page.get_size()
            textpage = page.get_textpage()
            chars: list[str] = []
            index: list[int] = []
            for i in range(textpage.count_chars()):
                code = pdfium_c.FPDFText_GetUnicode(textpage, i)
                ch = chr(code) if code else ""
                if not ch or ch.isspace() or code in (0xFFFE, 0xFFFF):
                    continue
                for low in ch.lower():
                    chars.append(low)
                    index.append(i)
            self.squashed = "".join(chars)
            self.char_index = index
            # Line rectangles of char ranges, computed here while the text page is open.
            self._textpage, self._page, self._pdf = textpage, page, pdf
            self._rect_cache: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
        except Exception:
            pdf.close()
            raise

    def close(self) -> None:
        self._textpage.close()
        self._page.close()
        self._pdf.close()

    def find(self, needle: str, start: int = 0) -> tuple[int, int] | None:
        """(first, last) positions in the squashed text of the first whitespace-insensitive match at
        or after position ``start``, or None (:meth:`rects` maps positions to pdfium characters)."""
        sq = _squash(needle)
        if not sq:
            return None
        pos = self.squashed.find(sq, start)
        if pos < 0:
            return None
        return pos, pos + len(sq) - 1

    def rects(self, first: int, last: int) -> list[tuple[float, float, float, float]]:
        """pdfium's line rectangles (left, bottom, right, top, in points) of squashed positions
        first..last."""
        key = (first, last)
        if key not in self._rect_cache:
            i0, i1 = self.char_index[first], self.char_index[last]
            n = self._textpage.count_rects(i0, i1 - i0 + 1)
            self._rect_cache[key] = [self._textpage.get_rect(i) for i in range(n)]
        return self._rect_cache[key]

    def box(self, rect: tuple[float, float, float, float], pad: float = 1.5) -> Box:
        left, bottom, right, top = rect
        return Box(max(0.0, (left - pad) / self.width), max(0.0, (self.height - top - pad) / self.height),
                   (right - left + 2 * pad) / self.width, (top - bottom + 2 * pad) / self.height)


def _merge_line(boxes: Sequence[Box]) -> Box:
    x0 = min(b.x for b in boxes)
    y0 = min(b.y for b in boxes)
    x1 = max(b.x + b.w for b in boxes)
    y1 = max(b.y + b.h for b in boxes)
    return Box(x0, y0, x1 - x0, y1 - y0)


def _same_line(a: Box, b: Box) -> bool:
    """Vertical overlap of at least half the smaller height."""
    overlap = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
    return overlap >= 0.5 * min(a.h, b.h)


def span_boxes(page: PageText, text: str, *, probe_chars: int = 60) -> list[Box]:
    """Boxes of a prose span: the whole span when it matches; otherwise its first and last
    ``probe_chars`` (text cut at a page break or cleaned differently) and everything between."""
    whole = page.find(text)
    if whole is None:
        sq = _squash(text)
        if len(sq) < 2 * probe_chars:
            return []
        head = page.find(sq[:probe_chars])
        tail = page.find(sq[-probe_chars:], head[0] if head else 0)
        if head and tail:
            whole = (head[0], tail[1])
        elif head or tail:  # one end on this page: highlight that part
            whole = head or tail
        else:
            return []
    return [page.box(r) for r in page.rects(*whole)]


def table_row_boxes(page: PageText, row_label: str, values: Sequence[str]) -> list[Box]:
    """One box around a table row: its label, then its printed values on the same line.

    The label can occur several times on a page ("Total" ...): the occurrence with the most of the
    row's values on its line wins. Values are searched left to right after the label."""
    best: tuple[int, list[Box]] | None = None
    start = 0
    values = [v for v in values if _squash(v)]
    while (found := page.find(row_label, start)) is not None:
        label_boxes = [page.box(r) for r in page.rects(*found)]
        if not label_boxes:
            break
        line = [label_boxes[-1]]
        cursor = found[1] + 1
        matched = 0
        for value in values:
            hit = page.find(value, cursor)
            if hit is None:
                continue
            vboxes = [page.box(r) for r in page.rects(*hit)]
            if vboxes and _same_line(vboxes[0], line[0]):
                line += vboxes
                cursor = hit[1] + 1
                matched += 1
        if best is None or matched > best[0]:
            best = (matched, label_boxes[:-1] + [_merge_line(line)])
        start = found[0] + 1
        if best[0] == len(values):
            break
    return best[1] if best else []


# ---------------------------------------------------------------------------------------------
# Rendering, with small caches (a question view and its image request hit the same page)


class _LRU:
    def __init__(self, size: int, on_evict: Callable[[Any], None] | None = None):
        self.size, self.on_evict = size, on_evict
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            while self._items:
                _, old = self._items.popitem(last=False)
                if self.on_evict:
                    self.on_evict(old)

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                _, old = self._items.popitem(last=False)
                if self.on_evict:
                    self.on_evict(old)
        return value


_PAGE_TEXTS = _LRU(32, on_evict=lambda p: p.close())
_PNGS = _LRU(64)
# pdfium is not thread-safe: one lock around every call into it.
PDFIUM_LOCK = threading.RLock()


@atexit.register
def _close_cached_pages() -> None:
    """Close the cached pdfium pages before pdfium itself goes away at exit."""
    with PDFIUM_LOCK:
        _PAGE_TEXTS.clear()


def page_text(pdf_path: str | Path, page_number: int) -> PageText:
    with PDFIUM_LOCK:
        return _PAGE_TEXTS.get((str(pdf_path), page_number), lambda: PageText(pdf_path, page_number))


def render_page_png(pdf_path: str | Path, page_number: int, scale: float = RENDER_SCALE) -> bytes:
    """The page as PNG bytes (cached per file, page and scale)."""

    def make() -> bytes:
        with PDFIUM_LOCK:
            pdf = pdfium.PdfDocument(str(pdf_path))
            try:
                if not 1 <= page_number <= len(pdf):
                    raise ValueError(f"{Path(pdf_path).name} has {len(pdf)} pages, no page {page_number}")
                page = pdf[page_number - 1]
                image = page.render(scale=scale).to_pil()
                page.close()
            finally:
                pdf.close()
        buf = io.BytesIO()
        image.save(buf, format="PNG", optimize=False)
        return buf.getvalue()

    return _PNGS.get((str(pdf_path), page_number, scale), make)


def chunk_boxes(pdf_path: str | Path, page_number: int, chunk: Any, page_span_text: str | None,
                row: Any | None = None) -> list[Box]:
    """Boxes of one chunk on one PDF page: a table row by its label and values (``row``: a
    :class:`TableRow`), a prose window by ``page_span_text`` (its part of the page text), enclosed
    in one box."""
    with PDFIUM_LOCK:
        page = page_text(pdf_path, page_number)
        if row is not None:
            return table_row_boxes(page, row.row_label, [c.value_text for c in row.cells])
        if page_span_text:
            # one outline around the window: a box per line would paint a page-long window as a grid
            lines = span_boxes(page, page_span_text)
            return [_merge_line(lines)] if lines else []
    return []


# ---------------------------------------------------------------------------------------------
# HTML filings: the page's text with marked spans


@dataclass(frozen=True)
class Segment:
    text: str
    marks: tuple[str, ...] = ()   # css classes ("evidence", "cited", "hit")


def text_segments(text: str, spans: Sequence[tuple[int, int, str]]) -> list[Segment]:
    """Split ``text`` at span boundaries; each segment carries the classes of the spans covering it.
    Spans are (start, end, css_class) in page-text offsets; out-of-range parts are clipped."""
    cuts = {0, len(text)}
    clean = []
    for s, e, cls in spans:
        s, e = max(0, s), min(len(text), e)
        if e > s:
            clean.append((s, e, cls))
            cuts.update((s, e))
    points = sorted(cuts)
    out: list[Segment] = []
    for a, b in zip(points, points[1:], strict=False):
        marks = tuple(sorted({cls for s, e, cls in clean if s <= a and b <= e}))
        if out and out[-1].marks == marks:
            out[-1] = Segment(out[-1].text + text[a:b], marks)
        else:
            out.append(Segment(text[a:b], marks))
    return out


def line_span(text: str, needle: str) -> tuple[int, int] | None:
    """(start, end) of the first line of ``text`` that contains ``needle`` (whitespace-insensitive)."""
    target = _squash(needle)
    if not target:
        return None
    pos = 0
    for line in text.split("\n"):
        if target in _squash(line):
            return pos, pos + len(line)
        pos += len(line) + 1
    return None
