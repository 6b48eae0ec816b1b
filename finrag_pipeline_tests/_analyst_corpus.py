"""Statement-page excerpts of the sample 10-K PDFs (data/sample_filings), parsed once per test session.

Pages kept (physical, 1-based, checked by hand in the PDFs):
  BOEING_2021_10K.pdf     1 cover, 28 MD&A revenues by segment ("Total $62,286"), 60 Consolidated
                          Statements of Operations (Total revenues 62,286 / 58,158 / 76,559, 2021/2020/2019),
                          66 segment note
  MICROSOFT_2022_10K.pdf  1 cover, 43 summary results, 44 segment revenue / operating income, 57 Income
                          Statements (Total revenue 198,270; Operating income 83,383, FY2022)
  APPLE_2022_10K.pdf      1 cover, 26 gross margin table (Total gross margin 170,782; 43.3%), 32 Statements
                          of Operations (Total net sales 394,328; Gross margin 170,782, FY2022)
  AMAZON_2022_10K.pdf     1 cover, 24 segment operating income, 36 cash flows (no dividends line), 37
                          Statements of Operations (Operating income 22,899 / 24,879 / 12,248 for
                          2020/2021/2022), 39 balance sheets
Excerpts are cut with pypdfium2 (text layer kept) into a temporary folder: nothing binary is added to
the repository and a fresh clone has everything it needs.
"""

from __future__ import annotations

from pathlib import Path

from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

EXCERPTS: dict[str, tuple[int, ...]] = {
    "BOEING_2021_10K.pdf": (1, 28, 60, 66),
    "MICROSOFT_2022_10K.pdf": (1, 43, 44, 57),
    "APPLE_2022_10K.pdf": (1, 26, 32),
    "AMAZON_2022_10K.pdf": (1, 24, 36, 37, 39),
}
APPLE_2024_HTML = SAMPLE_FILINGS_DIR / "aapl-10-k-2024-11-01.html"


def cut_excerpt(name: str, out_dir: Path) -> Path:
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(str(SAMPLE_FILINGS_DIR / name))
    dest = pdfium.PdfDocument.new()
    dest.import_pages(source, [p - 1 for p in EXCERPTS[name]])
    out = out_dir / name.replace(".pdf", "_excerpt.pdf")
    dest.save(str(out))
    return out


def excerpt_page(name: str, physical_page: int) -> int:
    """The excerpt's page number of a page of the full filing."""
    return EXCERPTS[name].index(physical_page) + 1


def parse_excerpts(out_dir: Path) -> dict[str, object]:
    """File name -> ParsedFiling of its excerpt."""
    from finrag_pipeline.core.ingest.parse import parse_filing

    return {name: parse_filing(cut_excerpt(name, out_dir)) for name in EXCERPTS}


def hits_from_chunks(chunks, wanted) -> list:
    """Hits (rank order) for the leaf chunks ``wanted(chunk)`` selects."""
    from finrag_pipeline.core.models import Hit

    chosen = [c for c in chunks if c.is_leaf and wanted(c)]
    return [Hit(chunk_id=c.chunk_id, score=1.0 / (i + 1), rank=i + 1, filing_id=c.filing_id, page_start=c.page_start,
                page_end=c.page_end, chunk_type=c.chunk_type, text=c.text, stage="test", section=c.section,
                fiscal_year=c.fiscal_year) for i, c in enumerate(chosen)]
