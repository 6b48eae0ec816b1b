"""Rebuild finrag_pipeline_tests/data/apple_2022_excerpt.pdf from the sample Apple FY2022 10-K.

Pages kept (physical, 1-based): 1 cover, 8 Item 1A Risk Factors, 31 Item 8 heading/index,
32 Consolidated Statements of Operations. Run: python -m finrag_pipeline_tests.make_ingest_fixtures
"""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium

from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

EXCERPT_PAGES = (1, 8, 31, 32)
OUT = Path(__file__).parent / "data" / "apple_2022_excerpt.pdf"


def build_excerpt(src: Path = SAMPLE_FILINGS_DIR / "APPLE_2022_10K.pdf", out: Path = OUT) -> Path:
    """Import the excerpt pages into a new PDF (text layer preserved)."""
    source = pdfium.PdfDocument(str(src))
    dest = pdfium.PdfDocument.new()
    dest.import_pages(source, [p - 1 for p in EXCERPT_PAGES])
    dest.save(str(out))
    return out


if __name__ == "__main__":
    path = build_excerpt()
    print(path, path.stat().st_size, "bytes")
