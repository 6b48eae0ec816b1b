"""Ingest building blocks and bad input: each rejected file gets its own status."""

from __future__ import annotations

import shutil
import zipfile
from datetime import date
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from finrag_pipeline.core.ingest import IngestError, parse_filing
from finrag_pipeline.core.ingest.metadata import parse_pdf_cover, ticker_from_name
from finrag_pipeline.core.ingest.registry import (
    detect_format,
    ensure_not_duplicate,
    make_filing_id,
    sha256_file,
)
from finrag_pipeline.core.ingest.sections import assign_sections, find_printed_label, parse_heading
from finrag_pipeline.core.ingest.tables import normalize_period, normalize_unit, parse_number
from finrag_pipeline.core.ingest.xbrl import parse_ix_number
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR

EXCERPT = REPO_ROOT / "finrag_pipeline_tests" / "data" / "apple_2022_excerpt.pdf"


# ---------------------------------------------------------------- normalisation

@pytest.mark.parametrize(("text", "value"), [
    ("(1,234)", -1234.0), ("394,328", 394328.0), ("$ 316,199", 316199.0), ("12.5 %", 12.5),
    ("(8)%", -8.0), ("—", 0.0), ("–", 0.0), ("6.15", 6.15), ("", None), ("Total", None), ("1,234)", -1234.0),
])
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_parse_number_dash_can_mean_missing():
    assert parse_number("—", dash_value=None) is None


@pytest.mark.parametrize(("header", "period"), [
    ("2022", "FY2022"), ("Fiscal 2022", "FY2022"), ("September 24, 2022", "2022-09-24"),
    ("September 28,2024", "2024-09-28"), ("Years ended September 24, 2022", "FY2022"),
    ("Year Ended June 30, 2022", "FY2022"), ("Year Ended Jan 26, 2025", "FY2025"),
    ("Three Months Ended March 31, 2022", "3M:2022-03-31"), ("Change", None), ("% Change", None), ("", None),
    # a spanning title joined to the column's own header (Oracle FY2019 statements): the column's date is the last one
    ("As of May 31, 2019 and 2018 May 31, 2018", "2018-05-31"), ("As of May 31, 2019 and 2018 May 31, 2019", "2019-05-31"),
    ("Years Ended May 31, 2019, 2018 and 2017 Year Ended May 31, 2017", "FY2017"),
    ("Year Ended December 31, 2021 December 31, 2020", "FY2020"),
])
def test_normalize_period(header, period):
    assert normalize_period(header) == period


@pytest.mark.parametrize(("text", "unit"), [
    ("(In millions, except number of shares, which are reflected in thousands, and per-share amounts)",
     "USD millions"),
    ("(in thousands)", "USD thousands"), ("(dollars in millions)", "USD millions"), ("in billions", "USD billions"),
    ("(In millions, except per share data)", "USD millions"), ("", None),
])
def test_normalize_unit(text, unit):
    assert normalize_unit(text) == unit


@pytest.mark.parametrize(("text", "fmt", "value"), [
    ("130,497", "ixt:num-dot-decimal", 130497.0), ("—", "ixt:fixed-zero", 0.0), ("-", "ixt-sec:zerodash", 0.0),
    ("1.234,5", "ixt:num-comma-decimal", 1234.5), ("no", "ixt-sec:numwordsen", 0.0), ("6.11", None, 6.11),
])
def test_parse_ix_number(text, fmt, value):
    assert parse_ix_number(text, fmt) == value


# ---------------------------------------------------------------- identity and metadata

def test_make_filing_id():
    assert make_filing_id("AAPL", 2022, "10-K") == "AAPL-2022-10K"
    assert make_filing_id("aapl", 2022, "10-K/A") == "AAPL-2022-10KA"
    assert make_filing_id("Apple Inc.", 2022) == "APPLE-INC-2022-10K"


def test_ticker_fallback_map():
    assert ticker_from_name("THE BOEING COMPANY") == "BA"
    assert ticker_from_name("AMAZON.COM, INC.") == "AMZN"
    assert ticker_from_name("Unknown Widgets LLC") is None


def test_cover_without_trading_symbol_uses_name_map():
    info = parse_pdf_cover("FORM 10-K\nFor the fiscal year ended June 30, 2022\nCommission File Number 001-37845\n"
                           "MICROSOFT CORPORATION\nWASHINGTON 91-1144442\n")
    assert (info.company, info.ticker, info.fiscal_year, info.period_end_date) == (
        "MICROSOFT CORPORATION", "MSFT", 2022, date(2022, 6, 30))


def test_section_headings_and_toc():
    assert parse_heading("Item 1A. Risk Factors") == ("Item 1A", "Risk Factors")
    assert parse_heading("ITEM 7A. QUANTITATIVE AND QUALITATIVE DISCLOSURES") [0] == "Item 7A"
    assert parse_heading("Item 7 of this Form 10-K describes ...") is None
    toc = "\n".join(f"Item {n}. Title {n} {i + 3}" for i, n in enumerate(["1", "1A", "2", "3", "7", "8"]))
    pages = ["cover", toc, "Item 1. Business\nText", "more business", "Item 1A. Risk Factors\nRisks",
             "See Item 1. Business for more\nrisks", "Item 7. Management's Discussion\nMD&A"]
    assert [s for s, _ in assign_sections(pages)] == [None, None, "Item 1", "Item 1", "Item 1A", "Item 1A",
                                                      "Item 7"]


def test_printed_page_label():
    assert find_printed_label("text\nApple Inc. | 2022 Form 10-K | 29") == "29"
    assert find_printed_label("Some text\n52") == "52"
    assert find_printed_label("No number here at all") is None


# ---------------------------------------------------------------- the small real fixture

def test_excerpt_fixture_parses():
    assert EXCERPT.stat().st_size < 200_000
    pf = parse_filing(EXCERPT)
    assert pf.meta.filing_id == "AAPL-2022-10K"
    assert (pf.meta.fiscal_year, pf.meta.period_end_date, pf.meta.n_pages) == (2022, date(2022, 9, 24), 4)
    assert [p.section for p in pf.pages] == [None, "Item 1A", "Item 8", "Item 8"]
    row = next(r for r in pf.table_rows if r.row_label == "Total net sales")
    assert row.page_number == 4
    assert [c.value for c in row.cells] == [394328.0, 365817.0, 274515.0]


def test_sidecar_overrides_metadata(tmp_path):
    copy = tmp_path / "excerpt.pdf"
    shutil.copy(EXCERPT, copy)
    (tmp_path / "excerpt.pdf.yaml").write_text("ticker: APPL_TEST\nfiscal_year: 2023\ncik: '0000320193'\n")
    pf = parse_filing(copy)
    assert pf.meta.filing_id == "APPL-TEST-2023-10K"
    assert pf.meta.cik == "0000320193"
    assert pf.meta.metadata_source == "pdf-cover+sidecar"
    assert parse_filing(copy, sidecar={"company": "Apple"}).meta.company == "Apple"
    with pytest.raises(ValueError, match="unknown keys"):
        parse_filing(copy, sidecar={"tickr": "X"})


# ---------------------------------------------------------------- bad input

def _status(path: Path) -> str:
    with pytest.raises(IngestError) as exc:
        parse_filing(path)
    assert exc.value.message  # a human explanation, not just the status
    return exc.value.status


def test_corrupt_pdf(tmp_path):
    bad = tmp_path / "truncated.pdf"
    bad.write_bytes((SAMPLE_FILINGS_DIR / "APPLE_2022_10K.pdf").read_bytes()[:3000])
    assert _status(bad) == "corrupt"


def _vector_only_pdf(path: Path) -> None:
    """A one-page PDF holding only a filled rectangle: pages exist, no text layer."""
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(612, 792)
    rect = pdfium_c.FPDFPageObj_CreateNewRect(100, 100, 300, 400)
    pdfium_c.FPDFPath_SetDrawMode(rect, pdfium_c.FPDF_FILLMODE_ALTERNATE, False)
    pdfium_c.FPDFPage_InsertObject(page, rect)
    assert pdfium_c.FPDFPage_GenerateContent(page)
    pdf.save(str(path))


def test_pdf_without_text_needs_ocr(tmp_path):
    scan = tmp_path / "scan.pdf"
    _vector_only_pdf(scan)
    assert _status(scan) == "needs_ocr"


def test_empty_file(tmp_path):
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    assert _status(empty) == "empty"


def test_png_and_zip_are_unsupported(tmp_path):
    png = tmp_path / "filing.pdf"  # the extension lies; content decides
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    assert _status(png) == "unsupported"
    archive = tmp_path / "filing.html"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.txt", "hello")
    assert _status(archive) == "unsupported"


def test_html_that_is_not_a_filing(tmp_path):
    page = tmp_path / "blog.html"
    page.write_text("<!DOCTYPE html><html><head><title>Blog</title></head><body><h1>Hello</h1>"
                    "<p>Revenue grew 5% in 2022.</p></body></html>")
    assert _status(page) == "not_a_filing"


def test_format_by_content_not_extension(tmp_path):
    renamed = tmp_path / "report.bin"
    shutil.copy(EXCERPT, renamed)
    assert detect_format(renamed) == "pdf"
    assert detect_format(SAMPLE_FILINGS_DIR / "nvda-10-k-2025-02-26.html") == "html"


def test_same_bytes_same_hash_and_duplicate(tmp_path):
    a, b = tmp_path / "a.pdf", tmp_path / "b.pdf"
    shutil.copy(EXCERPT, a)
    shutil.copy(EXCERPT, b)
    assert sha256_file(a) == sha256_file(b) == parse_filing(b).meta.content_sha256
    with pytest.raises(IngestError) as exc:
        ensure_not_duplicate(sha256_file(b), {sha256_file(a): "AAPL-2022-10K"})
    assert exc.value.status == "duplicate"
    assert "AAPL-2022-10K" in exc.value.message


def test_read_filing_meta_matches_parse(tmp_path):
    from finrag_pipeline.core.ingest.parse import read_filing_meta

    assert read_filing_meta(EXCERPT) == parse_filing(EXCERPT).meta


def test_xbrl_nil_facts_are_skipped_unless_asked():
    from lxml import etree

    from finrag_pipeline.core.ingest.xbrl import extract_facts

    doc = etree.fromstring(
        b'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL" '
        b'xmlns:xbrli="http://www.xbrl.org/2003/instance" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        b'<body><ix:header><ix:resources><xbrli:unit id="u"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>'
        b'<xbrli:context id="c"><xbrli:period><xbrli:instant>2024-09-28</xbrli:instant></xbrli:period></xbrli:context>'
        b'</ix:resources></ix:header>'
        b'<ix:nonFraction name="us-gaap:CommitmentsAndContingencies" contextRef="c" unitRef="u" xsi:nil="true"/>'
        b'<ix:nonFraction name="us-gaap:Cash" contextRef="c" unitRef="u" decimals="-6" scale="6" sign="-" '
        b'format="ixt:num-dot-decimal" id="f1">1,234</ix:nonFraction></body></html>')
    facts = extract_facts(doc, "X-2024-10K")
    assert [(f.concept, f.value, f.unit, f.period_type, f.period_end) for f in facts] == [
        ("us-gaap:Cash", -1_234_000_000, "USD", "instant", date(2024, 9, 28))]
    assert len(extract_facts(doc, "X-2024-10K", include_nil=True)) == 2
