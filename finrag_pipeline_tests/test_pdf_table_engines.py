"""pdfplumber, a named dependency of the design, stays as the cross-check of the default table path: on real
statement pages both engines rebuild the same tables (same pages, headers, labels and cells), and the figures
checked in the filings come out of both."""

from __future__ import annotations

import pytest

from finrag_pipeline.core.ingest.pdf import extract_tables
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

# (file, pages, a row checked in the filing: page, label, cells)
CASES = [
    ("APPLE_2022_10K.pdf", [32, 33], (32, "Products", ["316,199", "297,392", "220,747"])),        # income statement
    ("APPLE_2022_10K.pdf", [32, 33], (33, "Net income", ["99,803", "94,680", "57,411"])),        # comprehensive income
    ("MICROSOFT_2022_10K.pdf", [44], (44, "Productivity and Business Processes", ["63,364", "53,915", "18%"])),
    ("BOEING_2021_10K.pdf", [33], (33, "Commercial Airplanes", ["296,882", "281,588"])),          # backlog
]


def _rows(tables):
    return [(t.page_number, tuple(t.headers), label, tuple(cells)) for t in tables for label, cells in t.rows]


@pytest.mark.parametrize(("name", "pages", "checked"), CASES)
def test_pdfplumber_and_pdfium_read_the_same_tables(name, pages, checked):
    pdfium = _rows(extract_tables(SAMPLE_FILINGS_DIR / name, pages))
    plumber = _rows(extract_tables(SAMPLE_FILINGS_DIR / name, pages, engine="pdfplumber"))
    assert len(pdfium) >= 8
    assert plumber == pdfium
    page, label, cells = checked
    assert any(r[0] == page and r[2] == label and list(r[3]) == cells for r in pdfium)
