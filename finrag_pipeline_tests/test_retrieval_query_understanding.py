"""Company and period understanding, fiscal calendars, and the period prefilter/boost stages."""

from __future__ import annotations

import pytest
from _retrieval_fakes import fake_resources, sample_catalog

from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.query_understanding import CorpusCatalog, QueryParser, parse_periods
from finrag_pipeline.core.retrieval import build_retriever

PERIOD_CASES = [
    ("FY2022 revenue", [("fiscal_year", 2022, None)]),
    ("FY 22 capex", [("fiscal_year", 2022, None)]),
    ("fiscal 2021 net income", [("fiscal_year", 2021, None)]),
    ("fiscal year 2023", [("fiscal_year", 2023, None)]),
    ("net sales in 2023", [("year", 2023, None)]),
    ("total net sales fiscal 2022 vs 2021", [("fiscal_year", 2022, None), ("year", 2021, None)]),
    ("cash as of December 31, 2022", [("date", 2022, None)]),
    ("cash as of Sept. 24, 2022", [("date", 2022, None)]),
    ("balance on 2023-01-29", [("date", 2023, None)]),
    ("third quarter of 2023", [("fiscal_quarter", 2023, 3)]),
    ("Q3 FY23 gross margin", [("fiscal_quarter", 2023, 3)]),
    ("third quarter of calendar 2023", [("calendar_quarter", 2023, 3)]),
    ("revenue in calendar 2022", [("calendar_year", 2022, None)]),
    # figures are not years
    ("grew 5.2% to $394,328 million", []),
    ("no period at all", []),
]


@pytest.mark.parametrize(("question", "expected"), PERIOD_CASES, ids=[c[0] for c in PERIOD_CASES])
def test_parse_periods(question, expected):
    assert [(p.kind, p.year, p.quarter) for p in parse_periods(question)] == expected


CATALOG = CorpusCatalog([
    {"filing_id": "AAPL-2022-10K", "ticker": "AAPL", "company": "Apple Inc.", "fiscal_year": 2022,
     "period_end_date": "2022-09-24"},
    {"filing_id": "AAPL-2023-10K", "ticker": "AAPL", "company": "Apple Inc.", "fiscal_year": 2023,
     "period_end_date": "2023-09-30"},
    {"filing_id": "MSFT-2022-10K", "ticker": "MSFT", "company": "Microsoft Corporation", "fiscal_year": 2022,
     "period_end_date": "2022-06-30"},
    {"filing_id": "NVDA-2025-10K", "ticker": "NVDA", "company": "NVIDIA Corporation", "fiscal_year": 2025,
     "period_end_date": "2025-01-26"},
    {"filing_id": "AMZN-2022-10K", "ticker": "AMZN", "company": "Amazon.com, Inc.", "fiscal_year": 2022,
     "period_end_date": "2022-12-31"},
])

UNDERSTANDING_CASES = [
    # (question, companies, fiscal years per company, filing ids)
    ("What were Apple's total net sales in fiscal 2022?", ["AAPL"], {"AAPL": [2022]}, ["AAPL-2022-10K"]),
    # Apple's FY ends late September: Dec 31, 2022 is in FY2023
    ("Apple cash as of December 31, 2022", ["AAPL"], {"AAPL": [2023]}, ["AAPL-2023-10K"]),
    # Apple's own year end (52/53 weeks: Sep 30, 2023) belongs to FY2023, not FY2024
    ("AAPL cash as of September 30, 2023", ["AAPL"], {"AAPL": [2023]}, ["AAPL-2023-10K"]),
    # Microsoft's FY ends June 30: Dec 31, 2022 is FY2023; June 30, 2022 is FY2022
    ("Microsoft cash as of December 31, 2022", ["MSFT"], {"MSFT": [2023]}, []),
    ("MSFT cash as of June 30, 2022", ["MSFT"], {"MSFT": [2022]}, ["MSFT-2022-10K"]),
    # NVIDIA's FY ends late January: Dec 31, 2024 is FY2025; calendar Q3 2024 (ends Sep 30) too
    ("NVIDIA inventory as of December 31, 2024", ["NVDA"], {"NVDA": [2025]}, ["NVDA-2025-10K"]),
    ("NVIDIA revenue in the third quarter of calendar 2024", ["NVDA"], {"NVDA": [2025]}, ["NVDA-2025-10K"]),
    ("Amazon.com revenue as of December 31, 2022", ["AMZN"], {"AMZN": [2022]}, ["AMZN-2022-10K"]),
    # calendar 2022 overlaps Microsoft FY2022 and FY2023 by six months each
    ("Microsoft revenue in calendar 2022", ["MSFT"], {"MSFT": [2022, 2023]}, ["MSFT-2022-10K"]),
    # no company: each company's calendar maps the date
    ("cash as of December 31, 2022", [], {"AAPL": [2023], "MSFT": [2023], "NVDA": [2023], "AMZN": [2022]},
     ["AAPL-2023-10K", "AMZN-2022-10K"]),
    ("Apple risk factors", ["AAPL"], {}, ["AAPL-2022-10K", "AAPL-2023-10K"]),
    ("what are the main risks?", [], {}, None),
]


@pytest.mark.parametrize(("question", "companies", "years", "filings"), UNDERSTANDING_CASES,
                         ids=[c[0] for c in UNDERSTANDING_CASES])
def test_understanding_on_fiscal_calendars(question, companies, years, filings):
    qu = QueryParser(CATALOG).parse(question)
    assert qu.companies == companies
    assert qu.fiscal_years == years
    assert qu.filing_ids == filings


def test_scope_limits_understanding_and_covering_years():
    scope = SearchFilters(filing_ids=("AAPL-2023-10K",))
    assert QueryParser(CATALOG).parse("Apple fiscal 2022 sales", scope).filing_ids == []
    # covering_years=1: the FY2023 10-K also reports FY2022 figures
    assert QueryParser(CATALOG, covering_years=1).parse("Apple fiscal 2022 sales", scope).filing_ids == ["AAPL-2023-10K"]


def test_without_catalog_filters_on_labels():
    qu = QueryParser(None).parse("FY2022 revenue")
    assert qu.to_filters() == SearchFilters(fiscal_years=(2022,))


QUESTIONS = ["Apple total net sales fiscal 2021", "total net sales in 2021", "Apple net sales FY2022 vs FY2021",
             "net sales 2022", "Microsoft revenue fiscal 2022", "total net sales as of September 25, 2021"]


@pytest.mark.parametrize("base", ["bm25", "dense", "hybrid_rrf", "multi_query"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_period_prefilter_never_returns_another_fiscal_year(base, question):
    res = fake_resources()
    r = build_retriever({"type": base, "period_mode": "prefilter"}, res)
    qu = QueryParser(sample_catalog()).parse(question)
    allowed = set(qu.filing_ids)
    hits = r.search(question, 10)
    assert hits, "the fake corpus has matching chunks for every question"
    assert {h.filing_id for h in hits} <= allowed
    years = {y for ys in qu.fiscal_years.values() for y in ys}
    assert {h.fiscal_year for h in hits} <= years


def test_prefilter_intersects_caller_scope_and_reports_info():
    r = build_retriever({"type": "bm25", "period_mode": "prefilter"}, fake_resources())
    result = r.retrieve("Apple total net sales fiscal 2022", 5, SearchFilters(filing_ids=("MSFT-2022-10K",)))
    assert result.hits == []  # Apple FY2022 is outside the caller's scope: nothing, not another filing
    assert result.info["understanding"]["companies"] == ["AAPL"]
    assert "understand" in result.timings_ms


def test_boost_mode_ranks_matching_year_first_but_keeps_others():
    res = fake_resources()
    plain = build_retriever({"type": "bm25"}, res).search("total net sales 2021", 10)
    boosted_r = build_retriever({"type": "bm25", "period_mode": "boost", "period_boost": 1.0}, res)
    boosted = boosted_r.search("total net sales 2021", 10)
    assert boosted[0].fiscal_year == 2021
    assert {h.fiscal_year for h in boosted} > {2021}  # other years remain (boost, not filter)
    assert len(boosted) == len(plain)
    assert boosted[0].stage_scores["period_boost"] > 0


def test_catalog_from_warehouse_rows_normalises_pandas_timestamps():
    """Warehouse rows come back as pandas Timestamps (a datetime subclass): comparing one with a date
    raised inside the fiscal calendar, and every period-filtered search of a real corpus failed."""
    import pandas as pd

    from finrag_pipeline.core.query_understanding import CorpusCatalog, QueryParser

    catalog = CorpusCatalog([
        {"filing_id": "MSFT-2022-10K", "ticker": "MSFT", "company": "Microsoft", "fiscal_year": 2022,
         "period_end_date": pd.Timestamp("2022-06-30")},
        {"filing_id": "X-2022-10K", "ticker": "X", "company": "X", "fiscal_year": 2022, "period_end_date": pd.NaT},
    ])
    assert [type(f.period_end_date).__name__ for f in catalog] == ["date", "NoneType"]
    parsed = QueryParser(catalog).parse("Microsoft revenue as of June 30, 2022")
    assert parsed.filing_ids == ["MSFT-2022-10K"]
