"""The extractive answerer's fixes from issue 13, on real table-row chunks of the sample filings:
"Total" rows, percent units, the consolidated row over a segment row, and abstaining when no row
names the asked line item."""

from __future__ import annotations

import pytest
from _analyst_corpus import hits_from_chunks, parsed_samples

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import format_printed_figure


@pytest.fixture(scope="module")
def chunks():
    parsed = parsed_samples()
    return {name: chunk_filing(p.meta, p.pages, p.table_rows) for name, p in parsed.items()}


def _table_rows(chunks, name):
    return hits_from_chunks(chunks[name], lambda c: c.chunk_type == "table_row")


def test_total_row_is_an_answer_and_the_statement_row_is_cited(chunks):
    hits = _table_rows(chunks, "BOEING_2021_10K.pdf")
    r = ExtractiveAnswerer().answer("What was Boeing's total revenue in 2021?", hits)
    assert r.response_state == "answered"
    assert "$62,286 million" in r.text and "31," not in r.text
    # p.60 Consolidated Statements of Operations "Total revenues", not the MD&A segment table's "Total"
    assert r.citations[0][1] == 60


def test_bare_total_row_counts_as_the_table_total():
    text = "Boeing 10-K FY2021 | Revenues | Total | Years ended December 31, 2021: 62,286 | USD millions"
    hit = Hit("t", 1.0, 1, "BA-2021-10K", 28, 28, "table_row", text, "test")
    r = ExtractiveAnswerer().answer("What were Boeing's total revenues in 2021?", [hit])
    assert r.response_state == "answered" and "$62,286 million" in r.text


def test_percent_row_keeps_its_unit(chunks):
    hits = _table_rows(chunks, "APPLE_2022_10K.pdf")
    r = ExtractiveAnswerer().answer("What was Apple's total gross margin percentage in fiscal 2022?", hits)
    assert r.response_state == "answered"
    assert "43.3%" in r.text and "$43.3" not in r.text and "% million" not in r.text
    assert format_printed_figure("43.3%", "USD millions") == "43.3%"


def test_consolidated_operating_income_not_non_operating(chunks):
    hits = _table_rows(chunks, "AMAZON_2022_10K.pdf")
    r = ExtractiveAnswerer().answer("What was Amazon's operating income in 2022?", hits)
    assert r.response_state == "answered"
    assert "$12,248 million" in r.text, r.text  # p.37 Operating income 12,248; not (18,184) non-operating
    assert "18,184" not in r.text


def test_abstains_when_no_row_names_the_line_item():
    text = "Microsoft 10-K FY2022 | Balance Sheets | Unearned revenue | June 30, 2022: 45,538 | USD millions"
    hit = Hit("u", 1.0, 1, "MSFT-2022-10K", 58, 58, "table_row", text, "test")
    r = ExtractiveAnswerer().answer("What was Microsoft Cloud revenue in fiscal 2022?", [hit])
    assert r.response_state == "abstained" and "45,538" not in r.text


def test_company_name_row_is_no_line_item():
    # Apple's stock-performance table has a row "Apple Inc. | $100 | ..." (p.22): not an answer
    text = "Apple 10-K FY2022 | Company Stock Performance | Apple Inc. | September 2022: $ 100 | USD millions"
    hit = Hit("s", 1.0, 1, "AAPL-2022-10K", 22, 22, "table_row", text, "test")
    r = ExtractiveAnswerer().answer("What was Apple's bitcoin holdings in fiscal 2022?", [hit])
    assert r.response_state == "abstained"
