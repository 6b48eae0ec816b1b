"""``parse_filing(path)``: the one entry point from bytes to FilingMeta, pages, table rows and facts."""

from __future__ import annotations

import re
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
from finrag_pipeline.core.ingest.statements import page_statement_heading
from finrag_pipeline.core.ingest.tables import (
    RawTable,
    clean_text,
    find_unit_text,
    is_title_candidate,
    normalize_unit,
    to_table_rows,
)
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
        # a sidecar that names the company and year vouches for a 10-K whose pages carry no form marker
        vouched = bool(overrides.get("company") and overrides.get("fiscal_year"))
        cover, page_texts, raw_tables, facts_fn = _parse_pdf(path, timer, with_tables, vouched=vouched)
    else:
        cover, page_texts, raw_tables, facts_fn = _parse_html(path, timer)
    if len(page_texts) > limits.max_pages:
        raise IngestError("too_large", f"{len(page_texts):,} pages, over limits.max_pages {limits.max_pages:,} "
                          "(assets_config/ingest.yaml)", path=str(path))
    meta = _build_meta(path, sha, fmt, cover, len(page_texts), overrides)
    return path, meta, cover, page_texts, raw_tables, facts_fn


def _parse_pdf(path: Path, timer: _Timer, with_tables: bool = True, *, vouched: bool = False):
    with timer.step("pdf_text"):
        texts = pdf_mod.read_page_texts(path)
    with timer.step("metadata"):
        cover_text = "\n".join(texts[:2])
        cover = parse_pdf_cover(cover_text, running_header=running_header(texts),
                                info=pdf_mod.document_info(path), page_texts=texts, file_name=path.name)
        if not vouched and not looks_like_10k("\n".join(texts[:5])):
            raise IngestError("not_a_filing", "PDF has text but no 10-K cover (no 'FORM 10-K' / annual report "
                              "marker in its first pages); if it is a 10-K without its cover, add a sidecar "
                              f"{path.name}.yaml with company: and fiscal_year: (`finrag inspect {path.name}` "
                              "prints one)", path=str(path), details={"cover": cover})
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
                          f"{path.name}.yaml with company: and fiscal_year: next to it", path=str(path),
                          details={"cover": cover})
    form_type = cover.form_type or "10-K"
    meta = FilingMeta(
        filing_id=make_filing_id(cover.ticker or company, fiscal_year, form_type, company),
        content_sha256=sha, source_path=str(path), original_name=path.name, source_format=fmt,  # type: ignore[arg-type]
        company=company, ticker=cover.ticker, cik=cover.cik, form_type=form_type, fiscal_year=int(fiscal_year),
        period_end_date=cover.period_end_date, fiscal_year_end=cover.fiscal_year_end, n_pages=n_pages,
        metadata_source=cover.source, metadata_confidence=cover.confidence, field_sources=dict(cover.field_sources),
        field_confidence=dict(cover.field_confidence), review_reasons=list(cover.review_reasons),
    )
    meta = apply_sidecar(meta, overrides)
    if overrides:  # what a person wrote in a sidecar is reviewed already
        meta.review_reasons = [r for r in meta.review_reasons
                               if not any(r.startswith(f"{k} ") for k in overrides)]
        if "company" in overrides or "ticker" in overrides or "cik" in overrides:
            meta.review_reasons = [r for r in meta.review_reasons if r != "not in the company map"]
    return meta


def _table_rows(raw_tables: list[RawTable], filing_id: str, pages: list[Page],
                notes: list[str] | None = None) -> list[TableRow]:
    """Table rows of every raw table; a table over limits.max_rows_per_table keeps its first rows and a
    ``partial:`` note says which table was cut (the asset logs it as status ``partial``)."""
    cap = load_ingest_limits().max_rows_per_table
    rows: list[TableRow] = []
    per_page: dict[int, int] = {}
    add_table_context(raw_tables, pages)
    previous_raw: RawTable | None = None
    for raw in raw_tables:
        n = per_page.get(raw.page_number, 0)
        per_page[raw.page_number] = n + 1
        raw.section = pages[raw.page_number - 1].section
        if len(raw.rows) > cap:
            if notes is not None:
                notes.append(f"partial: table {n} on page {raw.page_number} ({raw.title or 'untitled'!r:.60}) has "
                             f"{len(raw.rows):,} rows; kept the first {cap:,} (limits.max_rows_per_table)")
            raw.rows = raw.rows[:cap]
        inherited = previous_raw.extra.get("open_headings") if previous_raw is not None and raw.extra.get(
            "context", {}).get("continues") else None
        rows.extend(to_table_rows(raw, filing_id, n, inherited_headings=inherited))
        previous_raw = raw
    return rows


_CLOSING_ROW_RE = re.compile(r"^(?:total\b|ending\s+balance|balance,?\s+(?:at\s+)?end\b|net\s+(?:increase|decrease|change)"
                             r"\b)", re.I)
_UNLESS_NOTED_RE = re.compile(r"unless\s+otherwise\s+(?:noted|stated|indicated),?\s+(?:all\s+)?(?:tabular\s+)?(?:dollar\s+)?"
                              r"(?:amounts|dollars|figures)\s+(?:are\s+)?(?:presented\s+|shown\s+|expressed\s+|stated\s+)?"
                              r"in\s+(?:millions|thousands|billions)\b[^.]*", re.I)
_ITEM_LINE_RE = re.compile(r"^\s*item\s+\d+[a-z]?\b", re.I)
_NOTES_HEADING_RE = re.compile(r"^\s*notes\s+to\s+(?:the\s+)?(?:consolidated\s+|combined\s+)?financial\s+statements\b", re.I | re.M)


def standing_unit_caption(page_text: str) -> str | None:
    """A unit caption that holds for a whole section from this page on: under the notes' heading ("Notes to
    the Consolidated Financial Statements / (Dollars in millions, except otherwise stated)"), on an Item's
    heading line ("Item 7A—Quantitative and Qualitative Disclosures About Market Risk (amounts in millions)"),
    or said in words ("Unless otherwise noted, tabular dollars are presented in millions")."""
    head = "\n".join(page_text.splitlines()[:12])
    if _NOTES_HEADING_RE.search(head) and (unit := find_unit_text(head)):
        return unit
    for line in page_text.splitlines():
        if _ITEM_LINE_RE.match(line) and (unit := find_unit_text(line)):
            return unit
    m = _UNLESS_NOTED_RE.search(clean_text(page_text))
    return find_unit_text(m.group(0)) if m else None


def add_table_context(raw_tables: list[RawTable], pages: list[Page]) -> None:
    """A title and a unit caption for the tables their own lines left without one, in this order:

    - title: the statement heading of the page ("CONSOLIDATED BALANCE SHEETS"), the table it continues
      (the last one of the page before, same columns: a statement broken over a page), else the page's
      section ("Item 7. Management's Discussion and Analysis ...");
    - unit: the table it continues, the one unit caption the page prints, else the caption that heads the
      notes, an Item's heading or an "unless otherwise noted, dollars are in millions" (standing_unit_caption),
      which holds for every table after it in the same section.
    Each filled-in field is recorded in ``raw.extra["context"]``."""
    standing: dict[int, tuple[str | None, str]] = {}   # page -> (section, caption) in force on it
    current: tuple[str | None, str] | None = None
    for page in pages:
        if (unit := standing_unit_caption(page.text)) is not None:
            current = (page.section, unit)
        if current is not None and current[0] == page.section:
            standing[page.page_number] = current
    previous: RawTable | None = None
    seen_pages: set[int] = set()
    for raw in raw_tables:
        page = pages[raw.page_number - 1]
        first_on_page = raw.page_number not in seen_pages
        seen_pages.add(raw.page_number)
        standing_unit = standing.get(raw.page_number)
        filled = raw.extra.setdefault("context", {})
        if raw.title and _looks_like_data(raw.title):
            raw.title, filled["dropped_title"] = None, raw.title   # "AWS 60,324 72,701": a row, not a title
        # A table broken over a page: the first one on its page, the last one of the page before had the same
        # columns and did not end on a total, and this part repeats no header of its own (or says "continued").
        continues = (previous is not None and first_on_page and previous.page_number == raw.page_number - 1
                     and len(previous.headers) == len(raw.headers) and bool(previous.rows)
                     and not _CLOSING_ROW_RE.match(clean_text(previous.rows[-1][0]))
                     and (not any(raw.headers) or bool(re.search(r"\bcontinued\b", "\n".join(
                         page.text.splitlines()[:8]), re.I))))
        if continues and raw.rows and any(clean_text(v) for v in raw.rows[0][1]):
            filled["continues"] = True   # starts with a record, no heading: the groups open above carry on
        heading = page_statement_heading(page.text)
        if raw.title and heading and first_on_page and not _names_a_statement(raw.title):
            # a header row read as the title ("(000's) Amount Capital Income (Loss) Earnings Equity") under the
            # page's statement heading: the heading is the first table's title
            raw.title, filled["title"], filled["dropped_title"] = heading, "page heading", raw.title
        if not raw.title:
            if heading:
                raw.title, filled["title"] = heading, "page heading"
            elif continues and previous.title:
                raw.title, filled["title"] = previous.title, "continued from the page before"
            elif caption := caption_above(page.text, raw):
                raw.title, filled["title"] = caption, "nearest caption above"
            elif page.section_title or page.section:
                raw.title = clean_text(" ".join(x for x in (page.section, page.section_title) if x))
                filled["title"] = "section"
        if not raw.unit_text:
            units = {normalize_unit(u): u for u in map(find_unit_text, page.text.splitlines()) if u}
            if continues and previous.unit_text:
                raw.unit_text, filled["unit"] = previous.unit_text, "continued from the page before"
            elif len(units) == 1:
                raw.unit_text, filled["unit"] = next(iter(units.values())), "the page's unit caption"
            elif standing_unit is not None and standing_unit[0] == page.section:
                raw.unit_text, filled["unit"] = standing_unit[1], "the section's standing unit caption"
        previous = raw


_RECORD_LINE_RE = re.compile(r"[\d)%—–-]\s*$")


def caption_above(page_text: str, raw: RawTable, max_lines: int = 25) -> str | None:
    """The nearest caption above a table in its page's text: a short heading line ("Stock Award Activity"),
    or the caption of the sentence that introduces it ("... is as follows:", "The following table
    summarizes ..."); never past another table."""
    from finrag_pipeline.core.ingest.pdf import intro_caption

    first = next(((clean_text(label), next((clean_text(v) for v in values if clean_text(v)), ""))
                  for label, values in raw.rows if clean_text(label)), ("", ""))
    lines = [clean_text(ln) for ln in page_text.splitlines()]
    starts = [i for i, ln in enumerate(lines) if first[0] and ln.startswith(first[0][:40])]
    # the label may also appear in the prose above: take the line followed by the row's first figure
    at = next((i for i in starts if first[1] and first[1] in " ".join(lines[i:i + 4])), starts[0] if starts else None)
    if at is None:
        return None
    for ln in reversed(lines[max(0, at - max_lines):at]):
        if not ln or not is_title_candidate(ln) or re.fullmatch(r"table\s+of\s+contents", ln, re.I):
            continue
        figures = re.findall(r"\d[\d,.]*", ln)
        if figures and all(re.fullmatch(r"(?:19|20)\d{2}", f) or len(f) <= 2 for f in figures) \
                and not ln.endswith(":") and len(ln) < 90:
            continue   # a header line: "Years ended December 31, 2021 2020 2019", "Level 1 Level 2"
        if _RECORD_LINE_RE.search(ln) and figures and not ln.endswith(":"):
            if re.search(r"[A-Za-z].*\d[\d,.]*\)?\s*$", ln) and len(figures) >= 2:
                return None   # a row of the table above
            continue
        if (ln.endswith(":") and len(ln) > 40) or _INTRO_SENTENCE_RE.search(ln):
            return intro_caption(ln.rstrip("."))
        if len(ln) <= 80 and not ln.endswith((".", ",", ";")) and not ln[:1].islower():
            return ln
    return None


_INTRO_SENTENCE_RE = re.compile(r"\bthe\s+following\s+table\b|\bin\s+the\s+table\s+below\b|\bas\s+follows\b", re.I)


def _looks_like_data(text: str) -> bool:
    """A row of figures or of column years read as a title ("AWS 60,324 72,701 110,683", "2025 2026 2027")."""
    t = clean_text(text)
    figures = re.findall(r"\(?\$?\d[\d,.]*\)?%?", t)
    return len(figures) >= 2 and bool(re.search(r"\d[\d,.]*\)?%?$", t))


def _names_a_statement(title: str) -> bool:
    from finrag_pipeline.core.ingest.statements import classify_table

    return classify_table(title, []) in ("income_statement", "balance_sheet", "cash_flow", "equity")
