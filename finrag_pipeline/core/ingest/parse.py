"""``parse_filing(path)``: the one entry point from bytes to FilingMeta, pages, table rows and facts."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finrag_pipeline.core.ingest import html as html_mod
from finrag_pipeline.core.ingest import pdf as pdf_mod
from finrag_pipeline.core.ingest import xbrl as xbrl_mod
from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.limits import load_ingest_limits
from finrag_pipeline.core.ingest.metadata import (
    CoverInfo,
    cover_from_dei,
    looks_like_10k,
    parse_pdf_cover,
    running_header,
)
from finrag_pipeline.core.ingest.registry import (
    apply_sidecar,
    detect_format,
    find_sidecar,
    load_sidecar,
    make_filing_id,
    sha256_file,
)
from finrag_pipeline.core.ingest.sections import assign_sections, find_printed_label
from finrag_pipeline.core.ingest.tables import RawTable, to_table_rows
from finrag_pipeline.core.ingest.text_quality import check_text_layer, textless_pages_note
from finrag_pipeline.core.models import FilingMeta, Page, TableRow, XbrlFact
from finrag_pipeline.core.progress import Task, task


@dataclass
class ParsedFiling:
    """Everything ingest knows about one filing; ``timings`` holds seconds per step."""

    meta: FilingMeta
    pages: list[Page]
    table_rows: list[TableRow]
    facts: list[XbrlFact]
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cover: CoverInfo | None = None    # what the cover said (file number, symbols, co-registrants)

    @property
    def filing_id(self) -> str:
        return self.meta.filing_id


class _Timer:
    """Seconds per parse step; each step is also a progress step of ``work`` (core/progress.py)."""

    def __init__(self, work: Task | None = None) -> None:
        self.timings: dict[str, float] = {}
        self.work = work

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        if self.work is not None:
            self.work.update(self.work.done, name)
        try:
            yield
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - t0, 4)
            if self.work is not None:
                self.work.advance()


def parse_filing(path: str | Path, *, sidecar: str | Path | Mapping[str, Any] | None = None) -> ParsedFiling:
    """Parse a 10-K (PDF or inline-XBRL HTML, told apart by content) into the core records.

    ``sidecar``: metadata overrides (a mapping or a YAML path); when None, a ``<file>.yaml`` /
    ``<file>.meta.yaml`` next to the file is used if present. Raises IngestError (status
    needs_ocr / corrupt / empty / unsupported / not_a_filing) for input that is not a usable filing.
    """
    timer = _Timer(task(f"parse {Path(path).name}", unit="steps"))
    path, meta, cover, page_texts, raw_tables, facts_fn = _read(path, sidecar, timer, with_tables=True)
    fid = meta.filing_id
    with timer.step("sections"):
        sections = assign_sections([text for text, _ in page_texts])
    with timer.step("assemble"):
        table_pages = {t.page_number for t in raw_tables}
        pages = [
            Page(filing_id=fid, page_number=i, text=text, section=sec, section_title=title,
                 printed_page_label=label, has_tables=i in table_pages, char_count=len(text))
            for i, ((text, label), (sec, title)) in enumerate(zip(page_texts, sections, strict=True), start=1)
        ]
        notes = list(cover.notes)
        if meta.source_format == "pdf":
            notes += textless_pages_note([text for text, _ in page_texts])
        table_rows = _table_rows(raw_tables, fid, pages, notes)
    with timer.step("xbrl_facts"):
        facts = facts_fn(fid)
    timer.timings["total"] = round(sum(timer.timings.values()), 4)
    timer.work.close()
    return ParsedFiling(meta=meta, pages=pages, table_rows=table_rows, facts=facts,
                        timings=timer.timings, notes=notes, cover=cover)


def read_filing_meta(path: str | Path, *, sidecar: str | Path | Mapping[str, Any] | None = None) -> FilingMeta:
    """Only the FilingMeta of a file (registration): same identity as ``parse_filing`` gives, without
    table extraction or facts. Reads every page's text so scans fail here (needs_ocr), not later."""
    return _read(path, sidecar, _Timer(), with_tables=False)[1]


def _read(path: str | Path, sidecar, timer: _Timer, *, with_tables: bool):
    path = Path(path)
    limits = load_ingest_limits()
    with timer.step("hash"):
        if not path.is_file():
            raise FileNotFoundError(path)
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise IngestError("too_large", f"{size:,} bytes, over limits.max_bytes {limits.max_bytes:,} "
                              "(assets_config/ingest.yaml)", path=str(path))
        sha = sha256_file(path)
        fmt = detect_format(path)
    with timer.step("sidecar"):
        sidecar_src = sidecar if sidecar is not None else find_sidecar(path)
        overrides = load_sidecar(sidecar_src) if sidecar_src is not None else {}
    if fmt == "pdf":
        cover, page_texts, raw_tables, facts_fn = _parse_pdf(path, timer, with_tables)
    else:
        cover, page_texts, raw_tables, facts_fn = _parse_html(path, timer)
    if len(page_texts) > limits.max_pages:
        raise IngestError("too_large", f"{len(page_texts):,} pages, over limits.max_pages {limits.max_pages:,} "
                          "(assets_config/ingest.yaml)", path=str(path))
    meta = _build_meta(path, sha, fmt, cover, len(page_texts), overrides)
    return path, meta, cover, page_texts, raw_tables, facts_fn


def _parse_pdf(path: Path, timer: _Timer, with_tables: bool = True):
    with timer.step("pdf_text"):
        texts = pdf_mod.read_page_texts(path)
    with timer.step("metadata"):
        cover_text = "\n".join(texts[:2])
        if not looks_like_10k("\n".join(texts[:5])):
            raise IngestError("not_a_filing", "PDF has text but no 10-K cover (no 'FORM 10-K' / annual report "
                              "marker in its first pages); if it is a 10-K without its cover, add a sidecar "
                              f"{path.name}.yaml with company: and fiscal_year:", path=str(path))
        cover = parse_pdf_cover(cover_text, running_header=running_header(texts),
                                info=pdf_mod.document_info(path))
    with timer.step("table_detect"):
        candidates = [i for i, t in enumerate(texts, start=1) if with_tables and pdf_mod.page_has_tables(t)]
    with timer.step("pdf_tables"):
        raw_tables = pdf_mod.extract_tables(path, candidates)
    page_texts = [(t, find_printed_label(t)) for t in texts]
    return cover, page_texts, raw_tables, lambda fid: []


def _parse_html(path: Path, timer: _Timer):
    with timer.step("html_parse"):
        root = html_mod.load_html(path)
        # garbled_text before anything reads the cover: junk inside dei values would pass for "not a 10-K"
        check_text_layer(["".join(root.itertext())], path=str(path), check_ocr=False)
    with timer.step("metadata"):
        dei = xbrl_mod.dei_values(root)
        if not dei.get("DocumentType"):
            has_header = any(html_mod.local_name(el) == "header" for el in root.iter())
            text = " ".join(root.itertext())[:50000]
            if not has_header or not looks_like_10k(text):
                raise IngestError("not_a_filing", "HTML has no inline-XBRL header (ix:header) with dei:DocumentType;"
                                  " not an EDGAR 10-K primary document", path=str(path))
        cover = cover_from_dei(dei, xbrl_mod.dei_context_end(root))
        if cover.form_type and not cover.form_type.upper().startswith("10-K"):
            raise IngestError("not_a_filing", f"document type is {cover.form_type}, not a 10-K", path=str(path))
    with timer.step("html_pages"):
        doc = html_mod.parse_html_document(root)
    page_texts = [(p.text, p.printed_label) for p in doc.pages]
    xbrl_mod.check_ix_facts(root)  # ixbrl_error: a fact without a readable scale

    def facts(fid: str) -> list[XbrlFact]:
        return xbrl_mod.extract_facts(root, fid, doc.fact_pages)

    return cover, page_texts, doc.tables, facts


def _build_meta(path: Path, sha: str, fmt: str, cover: CoverInfo, n_pages: int,
                overrides: Mapping[str, Any]) -> FilingMeta:
    company = overrides.get("company") or cover.company
    fiscal_year = overrides.get("fiscal_year") or cover.fiscal_year
    if not company or not fiscal_year:
        missing = [n for n, v in (("company", company), ("fiscal year", fiscal_year)) if not v]
        tried = "; ".join(cover.notes) or "no registrant name or 'fiscal year ended' date on the cover"
        raise IngestError("not_a_filing", f"could not read the {' and '.join(missing)} from the filing ({tried}); "
                          f"run `finrag inspect {path.name}` to see what was read, then add a sidecar "
                          f"{path.name}.yaml with company: and fiscal_year: next to it", path=str(path))
    form_type = cover.form_type or "10-K"
    meta = FilingMeta(
        filing_id=make_filing_id(cover.ticker or company, fiscal_year, form_type, company),
        content_sha256=sha, source_path=str(path), original_name=path.name, source_format=fmt,  # type: ignore[arg-type]
        company=company, ticker=cover.ticker, cik=cover.cik, form_type=form_type, fiscal_year=int(fiscal_year),
        period_end_date=cover.period_end_date, fiscal_year_end=cover.fiscal_year_end, n_pages=n_pages,
        metadata_source=cover.source, metadata_confidence=cover.confidence, field_sources=dict(cover.field_sources),
    )
    return apply_sidecar(meta, overrides)


def _table_rows(raw_tables: list[RawTable], filing_id: str, pages: list[Page],
                notes: list[str] | None = None) -> list[TableRow]:
    """Table rows of every raw table; a table over limits.max_rows_per_table keeps its first rows and a
    ``partial:`` note says which table was cut (the asset logs it as status ``partial``)."""
    cap = load_ingest_limits().max_rows_per_table
    rows: list[TableRow] = []
    per_page: dict[int, int] = {}
    for raw in raw_tables:
        n = per_page.get(raw.page_number, 0)
        per_page[raw.page_number] = n + 1
        raw.section = pages[raw.page_number - 1].section
        if len(raw.rows) > cap:
            if notes is not None:
                notes.append(f"partial: table {n} on page {raw.page_number} ({raw.title or 'untitled'!r:.60}) has "
                             f"{len(raw.rows):,} rows; kept the first {cap:,} (limits.max_rows_per_table)")
            raw.rows = raw.rows[:cap]
        rows.extend(to_table_rows(raw, filing_id, n))
    return rows
