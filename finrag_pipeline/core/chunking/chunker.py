"""Page/TableRow -> Chunk: prose windows per section, one chunk per table row, and their parents.

Chunk kinds:
  * ``prose``      a sentence-aligned window of a section's text (leaf, indexed)
  * ``table_row``  one table row as standalone text (leaf, indexed)
  * ``table``      a whole table; parent of its rows (not indexed)
  * ``section``    a whole section run; parent of its prose windows (not indexed)

Offsets (``char_start``/``char_end``) point into the filing text, the page texts in page order
joined by "\\n\\n" (:func:`filing_text`). For prose, ``text[metadata["header_chars"]:]`` is exactly
``filing_text(pages)[char_start:char_end]``. Ids are ``stable_id(filing_id, chunk_type, anchor...)``
with a position/content anchor, so re-chunking the same input gives the same ids, and table rows
keep their ids across chunking variants.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from finrag_pipeline.core.chunking.config import ChunkingConfig
from finrag_pipeline.core.chunking.text import prose_header, table_row_text, table_text
from finrag_pipeline.core.chunking.windows import sentence_windows
from finrag_pipeline.core.models import Chunk, FilingMeta, Page, TableRow, stable_id

PAGE_JOINER = "\n\n"


@dataclass(frozen=True)
class _SectionRun:
    """Consecutive pages sharing one section label."""

    section: str | None
    title: str | None
    first_page: int
    last_page: int
    char_start: int
    char_end: int


class _PageMap:
    """Page numbers <-> offsets in the concatenated filing text."""

    def __init__(self, pages: list[Page]):
        self.pages = pages
        self.starts: list[int] = []
        offset = 0
        for page in pages:
            self.starts.append(offset)
            offset += len(page.text) + len(PAGE_JOINER)
        self.text = PAGE_JOINER.join(p.text for p in pages)

    def page_at(self, offset: int) -> int:
        """Page number holding the character at ``offset``."""
        return self.pages[max(bisect.bisect_right(self.starts, offset) - 1, 0)].page_number

    def span_of_page(self, page_number: int) -> tuple[int, int]:
        for page, start in zip(self.pages, self.starts, strict=True):
            if page.page_number == page_number:
                return start, start + len(page.text)
        return 0, 0

    def section_of_page(self, page_number: int) -> tuple[str | None, str | None]:
        for page in self.pages:
            if page.page_number == page_number:
                return page.section, page.section_title
        return None, None


def table_row_chunk_id(filing_id: str, table_id: str, row_index: int) -> str:
    """The id of a table row's chunk (the same in every chunking variant): what answers cite."""
    return stable_id(filing_id, "table_row", table_id, row_index)


def filing_text(pages: list[Page]) -> str:
    """The filing's concatenated text that chunk offsets refer to."""
    return PAGE_JOINER.join(p.text for p in sorted(pages, key=lambda p: p.page_number))


def chunk_filing(meta: FilingMeta, pages: list[Page], table_rows: list[TableRow],
                 config: ChunkingConfig | None = None) -> list[Chunk]:
    """Cut one filing into chunks, in reading order (``position`` 0..n-1)."""
    config = config or ChunkingConfig()
    page_map = _PageMap(sorted(pages, key=lambda p: p.page_number))
    runs = _section_runs(page_map)

    keyed: list[tuple[tuple, Chunk]] = []
    section_ids: dict[int, str] = {}  # page number -> its section chunk id
    for run in runs:
        section_chunk = _section_chunk(meta, run, page_map, config)
        windows = _prose_chunks(meta, run, page_map, config, section_chunk.chunk_id)
        if config.include_parents:
            keyed.append(((run.first_page, 0, run.char_start), section_chunk))
            for page in range(run.first_page, run.last_page + 1):
                section_ids[page] = section_chunk.chunk_id
        else:
            for w in windows:
                w.parent_id = None
        keyed.extend(((w.page_start, 1, w.char_start), w) for w in windows)

    if config.include_table_rows:
        for order, rows in enumerate(_tables(table_rows)):
            keyed.extend(_table_chunks(meta, rows, page_map, config, section_ids, order))

    keyed.sort(key=lambda kc: kc[0])
    chunks = [c for _, c in keyed]
    for position, chunk in enumerate(chunks):
        chunk.position = position
    return chunks


def _section_runs(page_map: _PageMap) -> list[_SectionRun]:
    runs: list[_SectionRun] = []
    for page, start in zip(page_map.pages, page_map.starts, strict=True):
        end = start + len(page.text)
        last = runs[-1] if runs else None
        if last and last.section == page.section:
            runs[-1] = _SectionRun(last.section, last.title or page.section_title, last.first_page,
                                   page.page_number, last.char_start, end)
        else:
            runs.append(_SectionRun(page.section, page.section_title, page.page_number,
                                    page.page_number, start, end))
    return runs


def _base(meta: FilingMeta, **fields) -> Chunk:
    return Chunk(filing_id=meta.filing_id, ticker=meta.ticker, company=meta.company,
                 fiscal_year=meta.fiscal_year, form_type=meta.form_type, **fields)


def _section_chunk(meta: FilingMeta, run: _SectionRun, page_map: _PageMap, config: ChunkingConfig) -> Chunk:
    header = prose_header(meta, run.section, run.title) if config.context_header else ""
    return _base(
        meta, chunk_id=stable_id(meta.filing_id, "section", run.section, run.char_start),
        section=run.section, page_start=run.first_page, page_end=run.last_page, chunk_type="section",
        text=header + page_map.text[run.char_start:run.char_end], char_start=run.char_start,
        char_end=run.char_end, is_leaf=False,
        metadata={"section_title": run.title, "header_chars": len(header), "chunking": config.name})


def _prose_chunks(meta: FilingMeta, run: _SectionRun, page_map: _PageMap, config: ChunkingConfig,
                  parent_id: str) -> list[Chunk]:
    header = prose_header(meta, run.section, run.title) if config.context_header else ""
    windows = sentence_windows(page_map.text, run.char_start, run.char_end, size=config.chunk_size,
                               overlap=config.overlap, unit=config.unit, min_chars=config.min_chunk_chars)
    return [
        _base(meta, chunk_id=stable_id(meta.filing_id, "prose", run.section, a, b),
              section=run.section, page_start=page_map.page_at(a), page_end=page_map.page_at(b - 1),
              chunk_type="prose", text=header + page_map.text[a:b], char_start=a, char_end=b,
              parent_id=parent_id,
              metadata={"section_title": run.title, "header_chars": len(header), "chunking": config.name})
        for a, b in windows
    ]


def _tables(table_rows: list[TableRow]) -> list[list[TableRow]]:
    """Rows grouped by table, tables in (page, first appearance) order, rows by row_index."""
    grouped: dict[str, list[TableRow]] = defaultdict(list)
    for row in table_rows:
        grouped[row.table_id].append(row)
    tables = [sorted(rows, key=lambda r: r.row_index) for rows in grouped.values()]
    return sorted(tables, key=lambda rows: min(r.page_number for r in rows))


def _table_chunks(meta: FilingMeta, rows: list[TableRow], page_map: _PageMap, config: ChunkingConfig,
                  section_ids: dict[int, str], order: int) -> list[tuple[tuple, Chunk]]:
    table_id = rows[0].table_id
    first_page = min(r.page_number for r in rows)
    last_page = max(r.page_number for r in rows)
    section = rows[0].section or page_map.section_of_page(first_page)[0]
    # Table rows carry no character offsets: use the span of the pages the table sits on.
    char_start = page_map.span_of_page(first_page)[0]
    char_end = page_map.span_of_page(last_page)[1]
    table_chunk_id = stable_id(meta.filing_id, "table", table_id)
    common = {"table_title": rows[0].table_title, "unit": rows[0].unit, "chunking": config.name}
    out: list[tuple[tuple, Chunk]] = []
    if config.include_parents:
        table = _base(meta, chunk_id=table_chunk_id, section=section, page_start=first_page,
                      page_end=last_page, chunk_type="table", text=table_text(meta, rows),
                      char_start=char_start, char_end=char_end, parent_id=section_ids.get(first_page),
                      is_leaf=False, table_id=table_id, metadata={**common, "n_rows": len(rows)})
        out.append(((first_page, 2, order, -1), table))
    for row in rows:
        row_start, row_end = page_map.span_of_page(row.page_number)
        chunk = _base(meta, chunk_id=table_row_chunk_id(meta.filing_id, table_id, row.row_index),
                      section=row.section or section, page_start=row.page_number, page_end=row.page_number,
                      chunk_type="table_row", text=table_row_text(meta, row), char_start=row_start,
                      char_end=row_end, parent_id=table_chunk_id if config.include_parents else None,
                      table_id=table_id, metadata={**common, "row_index": row.row_index,
                                                   "row_label": row.row_label, "row_path": list(row.row_path),
                                                   "statement_type": row.statement_type, "unit": row.unit})
        out.append(((first_page, 2, order, row.row_index), chunk))
    return out
