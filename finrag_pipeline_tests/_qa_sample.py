"""Sample filings for the QA tests: parsed by the ingest stage when it exists, else a small
PDF-text fallback (pypdfium2 page text; table rows from lines "label v1 v2 [v3]") so the QA tests
run on real figures and real pages either way."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from finrag_pipeline.core.models import Chunk, FilingMeta, Page, TableRow, XbrlFact
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

PDF_SAMPLES = ["APPLE_2022_10K", "APPLE_2021_10K", "MICROSOFT_2022_10K", "AMAZON_2022_10K", "BOEING_2021_10K"]
ALL_SAMPLES = sorted(p.name for p in SAMPLE_FILINGS_DIR.iterdir()) if SAMPLE_FILINGS_DIR.exists() else []

_VAL = r"\$?\s?\(?-?[\d,]*\d(?:\.\d+)?\)?%?"
_ROW_RE = re.compile(rf"^\s*([A-Za-z][^$\d]*?[A-Za-z)\.:])\s+((?:{_VAL}\s*){{2,4}})$")
_YEAR_RE = re.compile(r"\b(20[0-2]\d)\b")


@dataclass
class Sample:
    meta: FilingMeta
    pages: list[Page]
    table_rows: list[TableRow]
    facts: list[XbrlFact]
    chunks: list[Chunk]


def _fallback_rows(filing_id: str, pages: list[Page]) -> list[TableRow]:
    from finrag_pipeline.core.ingest.tables import RawTable, find_unit_text, to_table_rows

    rows: list[TableRow] = []
    for page in pages:
        lines = page.text.splitlines()
        years = list(dict.fromkeys(y for line in lines[:20] for y in _YEAR_RE.findall(line)))
        if len(years) < 2:
            continue
        title = next((ln.strip() for ln in lines[:6] if ln.strip().isupper() and len(ln.strip()) > 8), None)
        raw_rows = []
        for line in lines:
            m = _ROW_RE.match(line.strip())
            if not m:
                continue
            values = re.findall(_VAL, m.group(2))
            values = [v.strip() for v in values if v.strip() not in ("$", "")]
            if 2 <= len(values) <= len(years):
                raw_rows.append((m.group(1).strip(), values + [""] * (len(years) - len(values))))
        if len(raw_rows) >= 3:
            raw = RawTable(page.page_number, years, raw_rows, title=title, unit_text=find_unit_text(page.text))
            rows.extend(to_table_rows(raw, filing_id, 1))
    return rows


def _fallback(name: str) -> Sample:
    import pypdfium2 as pdfium

    stem = Path(name).stem
    company, year = stem.split("_")[0].title(), int(stem.split("_")[1])
    filing_id = f"{company.upper()[:4]}-{year}-10K"
    pdf = pdfium.PdfDocument(str(SAMPLE_FILINGS_DIR / name))
    pages = []
    for i in range(len(pdf)):
        text = pdf[i].get_textpage().get_text_range().replace("\r\n", "\n").replace("\r", "\n")
        pages.append(Page(filing_id, i + 1, text, None, None, char_count=len(text)))
    meta = FilingMeta(filing_id, "0" * 64, str(SAMPLE_FILINGS_DIR / name), name, "pdf", f"{company} Inc.",
                      None, None, "10-K", year, None, n_pages=len(pages))
    return Sample(meta, pages, _fallback_rows(filing_id, pages), [], [])


def _chunks(sample: Sample) -> list[Chunk]:
    try:
        from finrag_pipeline.core.chunking import chunk_filing
    except ImportError:
        return []
    return chunk_filing(sample.meta, sample.pages, sample.table_rows)


@functools.cache
def load_sample(name: str, use_ingest: bool = False) -> Sample:
    """A sample filing by file name ("APPLE_2022_10K.pdf") or stem, parsed and chunked once per session.

    ``use_ingest``: parse with the ingest stage (pdfplumber tables: slower); otherwise the fast
    pypdfium2 fallback, which only reads PDFs."""
    if "." not in name:
        name = next(n for n in ALL_SAMPLES if Path(n).stem == name)
    parse_filing = None
    if use_ingest or not name.lower().endswith(".pdf"):
        try:
            from finrag_pipeline.core.ingest.parse import parse_filing
        except ImportError:
            parse_filing = None
    if parse_filing is not None:
        parsed = parse_filing(SAMPLE_FILINGS_DIR / name)
        sample = Sample(parsed.meta, parsed.pages, parsed.table_rows, list(getattr(parsed, "facts", None)
                        or getattr(parsed, "xbrl_facts", []) or []), [])
    else:
        sample = _fallback(name)
    sample.chunks = _chunks(sample)
    return sample
