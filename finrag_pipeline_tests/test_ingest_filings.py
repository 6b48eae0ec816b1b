"""Ingest over the real sample filings. Expected values were read off the filings themselves
(page numbers are physical PDF pages / CSS-page-break pages, checked against the page text)."""

from __future__ import annotations

import os
from datetime import date

import pytest

from finrag_pipeline.core.ingest import ParsedFiling, parse_filing
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TEST_DATA = REPO_ROOT / "finrag_pipeline_tests" / "data"

# file -> (filing_id, ticker, fiscal_year, period_end, fiscal_year_end)
EXPECTED_META = {
    "APPLE_2021_10K.pdf": ("AAPL-2021-10K", "AAPL", 2021, date(2021, 9, 25), "--09-25"),
    "APPLE_2022_10K.pdf": ("AAPL-2022-10K", "AAPL", 2022, date(2022, 9, 24), "--09-24"),
    "AMAZON_2022_10K.pdf": ("AMZN-2022-10K", "AMZN", 2022, date(2022, 12, 31), "--12-31"),
    "MICROSOFT_2022_10K.pdf": ("MSFT-2022-10K", "MSFT", 2022, date(2022, 6, 30), "--06-30"),
    "BOEING_2021_10K.pdf": ("BA-2021-10K", "BA", 2021, date(2021, 12, 31), "--12-31"),
    "aapl-10-k-2024-11-01.html": ("AAPL-2024-10K", "AAPL", 2024, date(2024, 9, 28), "--09-28"),
    "amzn-10-k-2025-02-07.html": ("AMZN-2024-10K", "AMZN", 2024, date(2024, 12, 31), "--12-31"),
    "nvda-10-k-2025-02-26.html": ("NVDA-2025-10K", "NVDA", 2025, date(2025, 1, 26), "--01-26"),
    "aapl-10-k-2025-10-31.html": ("AAPL-2025-10K", "AAPL", 2025, date(2025, 9, 27), "--09-27"),
}


def _path(name: str):
    return TEST_DATA / name if (TEST_DATA / name).exists() else SAMPLE_FILINGS_DIR / name


@pytest.fixture(scope="module")
def parsed() -> dict[str, ParsedFiling]:
    """Each sample filing parsed once for the whole module (~15 s in all)."""
    return {name: parse_filing(_path(name)) for name in EXPECTED_META}


@pytest.mark.parametrize("name", sorted(EXPECTED_META))
def test_metadata_of_every_sample(parsed, name):
    fid, ticker, fy, period_end, fy_end = EXPECTED_META[name]
    meta = parsed[name].meta
    assert (meta.filing_id, meta.ticker, meta.fiscal_year, meta.period_end_date, meta.fiscal_year_end) == (
        fid, ticker, fy, period_end, fy_end)
    assert meta.form_type == "10-K"
    assert meta.n_pages == len(parsed[name].pages) > 50
    assert len(meta.content_sha256) == 64
    assert meta.source_path == str(_path(name))
    assert meta.source_format == ("pdf" if name.endswith(".pdf") else "html")
    assert all(p.text.strip() for p in parsed[name].pages[:5])
    assert parsed[name].table_rows, "every 10-K has financial tables"
    assert parsed[name].timings["total"] > 0


def test_html_metadata_carries_cik(parsed):
    assert parsed["nvda-10-k-2025-02-26.html"].meta.cik == "0001045810"
    assert parsed["nvda-10-k-2025-02-26.html"].meta.metadata_source == "ixbrl-dei"
    assert parsed["APPLE_2022_10K.pdf"].meta.metadata_source == "pdf-cover"


def test_apple_2022_income_statement_row(parsed):
    pf = parsed["APPLE_2022_10K.pdf"]
    rows = [r for r in pf.table_rows if r.row_label == "Total net sales"
            and r.table_title == "CONSOLIDATED STATEMENTS OF OPERATIONS"]
    assert len(rows) == 1
    row = rows[0]
    # Physical page 32 (printed "29" in the footer "Apple Inc. | 2022 Form 10-K | 29").
    assert row.page_number == 32
    assert pf.pages[31].printed_page_label == "29"
    assert row.unit == "USD millions"
    assert row.unit_text.startswith("(In millions")
    assert row.section == "Item 8"
    assert [(c.period, c.value) for c in row.cells] == [
        ("FY2022", 394328.0), ("FY2021", 365817.0), ("FY2020", 274515.0)]
    assert row.cells[0].header == "Years ended September 24, 2022"
    assert row.table_id == "AAPL-2022-10K:p32:t0"


def test_apple_2022_negative_and_balance_sheet_periods(parsed):
    rows = {r.row_label: r for r in parsed["APPLE_2022_10K.pdf"].table_rows if r.page_number == 32}
    assert rows["Other income/(expense), net"].cells[0].value == -334.0
    bs = [r for r in parsed["APPLE_2022_10K.pdf"].table_rows
          if r.page_number == 34 and r.row_label == "Total assets"]
    assert [(c.period, c.value) for c in bs[0].cells] == [("2022-09-24", 352755.0), ("2021-09-25", 351002.0)]


def test_microsoft_june_year_columns(parsed):
    row = next(r for r in parsed["MICROSOFT_2022_10K.pdf"].table_rows
               if r.row_label == "Total revenue" and r.page_number == 57)
    assert [(c.period, c.value) for c in row.cells] == [
        ("FY2022", 198270.0), ("FY2021", 168088.0), ("FY2020", 143015.0)]


def test_nvidia_revenue_fact(parsed):
    pf = parsed["nvda-10-k-2025-02-26.html"]
    fact = next(f for f in pf.facts if f.fact_id == "f-77")
    assert fact.concept == "us-gaap:Revenues"
    assert fact.value == 130_497_000_000
    assert fact.value_text == "130,497"
    assert (fact.unit, fact.decimals, fact.scale) == ("USD", -6, 6)
    assert (fact.period_type, fact.period_start, fact.period_end) == ("duration", date(2024, 1, 29),
                                                                      date(2025, 1, 26))
    assert fact.dimensions == {}
    # The Consolidated Statements of Income: 52nd page, footer "52".
    assert fact.page_number == 52
    assert "Consolidated Statements of Income" in pf.pages[51].text
    assert pf.pages[51].printed_page_label == "52"


def test_nvidia_fact_sign_units_and_dimensions(parsed):
    facts = parsed["nvda-10-k-2025-02-26.html"].facts
    assert len(facts) == 1229  # the corpus README counts 1,229 numeric facts
    neg = next(f for f in facts if f.fact_id == "f-109")  # Other income (expense), FY2023: (48)
    assert neg.value == -48_000_000
    assert {f.unit for f in facts} >= {"USD", "shares", "USD/shares", "pure"}
    assert any(f.dimensions and all(":" in k for k in f.dimensions) for f in facts)


def test_html_table_matches_fact(parsed):
    row = next(r for r in parsed["nvda-10-k-2025-02-26.html"].table_rows
               if r.row_label == "Revenue" and r.table_title == "Consolidated Statements of Income")
    assert row.page_number == 52
    assert [(c.period, c.value) for c in row.cells] == [
        ("FY2025", 130497.0), ("FY2024", 60922.0), ("FY2023", 26974.0)]
    assert row.unit == "USD millions"


def test_apple_2024_html_income_statement(parsed):
    row = next(r for r in parsed["aapl-10-k-2024-11-01.html"].table_rows
               if r.row_label == "Total net sales" and r.table_title == "CONSOLIDATED STATEMENTS OF OPERATIONS")
    assert [(c.period, c.value) for c in row.cells] == [
        ("FY2024", 391035.0), ("FY2023", 383285.0), ("FY2022", 394328.0)]
    assert row.section == "Item 8"


@pytest.mark.parametrize(("name", "page", "section"), [
    ("APPLE_2022_10K.pdf", 3, None),        # table of contents
    ("APPLE_2022_10K.pdf", 10, "Item 1A"),  # risk factors (printed page 7)
    ("APPLE_2022_10K.pdf", 24, "Item 7"),   # MD&A products and services table
    ("APPLE_2022_10K.pdf", 32, "Item 8"),   # income statement
    ("MICROSOFT_2022_10K.pdf", 30, "Item 1A"),
    ("MICROSOFT_2022_10K.pdf", 45, "Item 7"),
    ("MICROSOFT_2022_10K.pdf", 57, "Item 8"),
    ("BOEING_2021_10K.pdf", 15, "Item 1A"),
    ("BOEING_2021_10K.pdf", 40, "Item 7"),
    ("BOEING_2021_10K.pdf", 70, "Item 8"),
    ("aapl-10-k-2024-11-01.html", 10, "Item 1A"),
    ("aapl-10-k-2024-11-01.html", 31, "Item 8"),
    ("nvda-10-k-2025-02-26.html", 20, "Item 1A"),
    ("nvda-10-k-2025-02-26.html", 40, "Item 7"),
])
def test_sections(parsed, name, page, section):
    assert parsed[name].pages[page - 1].section == section


def test_section_titles(parsed):
    pages = parsed["APPLE_2022_10K.pdf"].pages
    assert pages[31].section_title == "Financial Statements and Supplementary Data"
    assert pages[9].section_title == "Risk Factors"


def test_only_table_pages_flagged(parsed):
    pf = parsed["APPLE_2022_10K.pdf"]
    flagged = {p.page_number for p in pf.pages if p.has_tables}
    assert {24, 32, 34} <= flagged
    assert 10 not in flagged and 1 not in flagged
