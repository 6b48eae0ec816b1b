"""Real 10-Ks from many PDF producers: cover metadata, statement types, units per row, row paths.

Excerpts under finrag_pipeline_tests/data were cut from ../shared/corpus/robustness with pypdfium2
(cover page + one statement page each); every expected value below was read off the filing page:
- block_2017_excerpt.pdf: Square, Inc. FY2017 10-K (text layer one word per line), p.1 cover, p.73
  Consolidated Statements of Operations (in thousands, except per share data).
- pge_2020_excerpt.pdf: PG&E Corporation and Pacific Gas and Electric Company (two registrants on one
  cover) FY2020, p.1 cover, p.109 PG&E Corporation Consolidated Statements of Income.
- walmart_2021_excerpt.pdf: Walmart Inc. FY2021 (ended January 31, 2021), p.1 cover (a "☐ Transition
  report" line right above the name), p.54 Consolidated Statements of Income.
"""

from __future__ import annotations

import math
from datetime import date

import pytest

from finrag_pipeline.core.ingest import parse_filing
from finrag_pipeline.core.ingest.metadata import normalize_cover_text, parse_pdf_cover, plausible_company_name
from finrag_pipeline.core.ingest.pdf import extract_tables
from finrag_pipeline.core.ingest.statements import STATEMENT_TYPES, classify_table
from finrag_pipeline.core.ingest.tables import (
    RawTable,
    cell_unit,
    currency_unit_violations,
    row_unit,
    table_units,
    to_table_rows,
)
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR

TEST_DATA = REPO_ROOT / "finrag_pipeline_tests" / "data"


@pytest.fixture(scope="module")
def excerpts():
    return {name: parse_filing(TEST_DATA / f"{name}_excerpt.pdf") for name in ("block_2017", "pge_2020", "walmart_2021")}


def _row(parsed, path):
    matches = [r for r in parsed.table_rows if r.row_path == path]
    assert matches, f"no row with path {path}: {[r.row_path for r in parsed.table_rows][:40]}"
    return matches[0]


def _value(row, period):
    return next(c.value for c in row.cells if c.period == period)


# ---------------------------------------------------------------- cover metadata


@pytest.mark.parametrize(("name", "company", "ticker", "cik", "fy", "period_end", "company_source"), [
    # one word per line; the name appears only on the cover, the ticker from the company map's former name
    ("block_2017", "SQUARE, INC.", "XYZ", "0001512673", 2017, date(2017, 12, 31), "cover:exact-name"),
    ("pge_2020", "PG&E CORPORATION", "PCG", "0001004980", 2020, date(2020, 12, 31), "cover:registrant-row"),
    ("walmart_2021", "WALMART INC.", "WMT", "0000104169", 2021, date(2021, 1, 31), "cover:exact-name"),
])
def test_cover_metadata_of_real_filings(excerpts, name, company, ticker, cik, fy, period_end, company_source):
    meta = excerpts[name].meta
    assert (meta.company, meta.ticker, meta.cik, meta.fiscal_year, meta.period_end_date) == (
        company, ticker, cik, fy, period_end)
    assert meta.field_sources["company"] == company_source
    assert meta.field_sources["fiscal_year"] == "cover:year-ended"
    assert meta.metadata_confidence == 1.0
    assert meta.filing_id == f"{ticker}-{fy}-10K"


def test_two_registrants_on_one_cover_are_both_named(excerpts):
    parsed = excerpts["pge_2020"]
    assert parsed.meta.company == "PG&E CORPORATION"
    assert any("PACIFIC GAS AND ELECTRIC COMPANY" in n for n in parsed.notes)
    assert parsed.cover.co_registrants == ["PACIFIC GAS AND ELECTRIC COMPANY"]
    assert parsed.cover.commission_file_number == "1-12609"
    assert parsed.cover.trading_symbols[:2] == ["PCG", "PCGU"]


def test_ticker_from_former_name_is_noted(excerpts):
    meta = excerpts["block_2017"].meta
    assert meta.field_sources["ticker"] == "company-map:former name"
    assert any("former name" in n for n in excerpts["block_2017"].notes)


def test_cover_read_the_same_whatever_the_line_layout():
    cover = ("UNITED STATES SECURITIES AND EXCHANGE COMMISSION FORM 10-K For the fiscal year ended June 30, 2022 "
             "Commission File Number 001-37845 MICROSOFT CORPORATION WASHINGTON 91-1144442 "
             "Securities registered pursuant to Section 12(b) of the Act: Common stock, $0.00000625 par value "
             "per share MSFT NASDAQ")
    one_per_line = parse_pdf_cover("\n".join(cover.split()))
    one_line = parse_pdf_cover(cover)
    for info in (one_per_line, one_line):
        assert (info.company, info.ticker, info.cik, info.fiscal_year, info.commission_file_number) == (
            "MICROSOFT CORPORATION", "MSFT", "0000789019", 2022, "001-37845")
        assert info.trading_symbols == ["MSFT"]


def test_former_name_gives_the_current_ticker():
    """Adobe's FY2015 cover says "ADOBE SYSTEMS INCORPORATED" and prints no trading symbol: the filing id
    takes the ticker the company map knows for it (ADBE), not the legal name."""
    cover = ("FORM 10-K For the fiscal year ended November 27, 2015 Commission File Number: 0-15175 "
             "ADOBE SYSTEMS INCORPORATED (Exact name of registrant as specified in its charter) Delaware 77-0019522")
    info = parse_pdf_cover(cover)
    assert (info.company, info.ticker, info.cik, info.fiscal_year) == (
        "ADOBE SYSTEMS INCORPORATED", "ADBE", "0000796343", 2015)


def test_underscore_rules_are_not_part_of_the_name():
    text = ("FORM 10-K\nFor the fiscal year ended December 31, 2020\nCommission File Number: 001-35727\n"
            "_________________________________ Netflix, Inc.\n(Exact name of registrant as specified in its charter)")
    assert parse_pdf_cover(text).company == "Netflix, Inc."
    assert normalize_cover_text("a\n\n___ b  \t c") == "a b c"


@pytest.mark.parametrize(("text", "ok"), [
    ("☐ Transition report pursuant to section 13 or 15(d) of the Securities Exchange Act of 1934", False),
    ("FOR THE TRANSITION PERIOD FROM TO", False),
    ("(Exact name of registrant as specified in its charter)", False),
    ("Delaware 80-0429876", False),
    ("PG&E CORPORATION", True),
    ("McDONALD'S CORPORATION", True),
    ("The Kraft Heinz Company", True),
    ("salesforce.com, inc.", True),
    ("eBay Inc.", True),
])
def test_cover_boilerplate_is_never_a_company(text, ok):
    assert plausible_company_name(text) is ok


def test_unreadable_cover_is_refused_with_a_remedy(tmp_path):
    import pypdfium2 as pdfium

    from finrag_pipeline.core.ingest.errors import IngestError

    # The Block statement page alone: a 10-K body without its cover -> no company: refused, with what to do.
    src = pdfium.PdfDocument(TEST_DATA / "block_2017_excerpt.pdf")
    doc = pdfium.PdfDocument.new()
    doc.import_pages(src, [1])
    out = tmp_path / "no_cover.pdf"
    doc.save(out)
    with pytest.raises(IngestError) as err:
        parse_filing(out)
    assert err.value.status == "not_a_filing"
    assert "sidecar" in err.value.message


# ---------------------------------------------------------------- statements, units, row paths


def test_block_income_statement_rows(excerpts):
    parsed = excerpts["block_2017"]
    page2 = [r for r in parsed.table_rows if r.page_number == 2]
    assert {r.statement_type for r in page2} == {"income_statement"}
    total = _row(parsed, ["Revenue", "Total net revenue"])
    assert (total.unit, _value(total, "FY2017"), _value(total, "FY2016")) == ("USD thousands", 2214253.0, 1708721.0)
    eps = _row(parsed, ["Net loss per share attributable to common stockholders", "Diluted"])
    assert (eps.unit, _value(eps, "FY2017")) == ("USD per share", -0.17)
    shares = _row(parsed, ["Weighted-average shares used to compute net loss per share attributable to common "
                           "stockholders", "Basic"])
    assert (shares.unit, _value(shares, "FY2017")) == ("shares thousands", 379344.0)


def test_pge_income_statement_rows(excerpts):
    parsed = excerpts["pge_2020"]
    revenues = _row(parsed, ["Operating Revenues", "Total operating revenues"])
    assert (revenues.statement_type, revenues.unit, _value(revenues, "FY2020")) == ("income_statement", "USD millions",
                                                                                     18469.0)
    # a row at the heading's own indent closes the "Operating Expenses" group
    assert _row(parsed, ["Interest income"]).unit == "USD millions"
    eps = _row(parsed, ["Net Loss Per Common Share, Basic"])
    assert (eps.unit, _value(eps, "FY2020")) == ("USD per share", -1.05)


def test_walmart_income_statement_rows(excerpts):
    parsed = excerpts["walmart_2021"]
    assert _value(_row(parsed, ["Operating income"]), "FY2021") == 22548.0
    dividends = _row(parsed, ["Dividends declared per common share"])
    assert (dividends.unit, _value(dividends, "FY2021")) == ("USD per share", 2.16)
    assert _row(parsed, ["Weighted-average common shares outstanding", "Diluted"]).unit == "shares millions"
    assert currency_unit_violations(parsed.table_rows) == []


def test_amazon_segment_table_keeps_group_labels():
    """Amazon FY2022 p.66 (Note 10, segment information): was titled "AWS" with North America rows
    read as "Aws | Operating income"."""
    raws = extract_tables(SAMPLE_FILINGS_DIR / "AMAZON_2022_10K.pdf", [66])
    rows = to_table_rows(raws[0], "AMZN-2022-10K", 0)
    assert raws[0].title != "AWS"
    na = next(r for r in rows if r.row_path == ["North America", "Operating income (loss)"])
    assert (na.statement_type, na.unit, _value(na, "FY2022")) == ("segment_note", "USD millions", -2847.0)
    aws = next(r for r in rows if r.row_path == ["AWS", "Operating income"])
    assert _value(aws, "FY2022") == 22841.0


@pytest.fixture(scope="module")
def boeing():
    return parse_filing(SAMPLE_FILINGS_DIR / "BOEING_2021_10K.pdf")


def test_boeing_percentages_and_per_share_values_carry_no_currency(boeing):
    """174 demo rows holding percentages were labelled "USD millions" (Boeing "Operating margins (4.7)%")."""
    margins = [r for r in boeing.table_rows if r.row_label.lower().startswith("operating margins")]
    assert margins and all(r.unit == "percent" for r in margins)
    assert any(c.value == -4.7 for r in margins for c in r.cells)
    per_share = [r for r in boeing.table_rows if "per share" in " ".join(r.row_path).lower()
                 and "shares" not in " ".join(r.row_path).lower()]
    assert per_share and all(r.unit == "USD per share" for r in per_share)
    assert currency_unit_violations(boeing.table_rows) == []
    # p.60 is the income statement, p.62 the balance sheet, p.63 the cash flow statement
    by_page = {(r.page_number, r.statement_type) for r in boeing.table_rows}
    assert {(60, "income_statement"), (62, "balance_sheet"), (63, "cash_flow")} <= by_page


@pytest.mark.parametrize(("label", "cells", "table_unit", "expected"), [
    ("Operating margins", ["(4.7)%", "(0.2)%"], "USD millions", "percent"),
    ("Effective tax rate", ["13.3", "24.1"], "USD millions", "percent"),
    ("Net income per share > Diluted", ["6.11", "5.61"], "USD millions", "USD per share"),
    ("Diluted earnings per share", ["6.11", "5.61"], "USD millions", "USD per share"),
    ("Weighted-average shares outstanding > Basic", ["16,325", "16,701"], "USD millions", "shares millions"),
    ("Days sales outstanding", ["42", "40"], "USD millions", "days"),
    ("Debt to equity ratio", ["1.5", "1.4"], "USD millions", "ratio"),
    ("Leverage", ["2.1x", "1.9x"], "USD millions", "ratio"),
    ("Common stock, $0.01 par value; 1,000 shares issued", ["10", "10"], "USD millions", "USD millions"),
    ("Total net sales", ["394,328", "365,817"], "USD millions", "USD millions"),
    ("Number of employees", ["154,000", "147,000"], "USD millions", None),
])
def test_row_units(label, cells, table_unit, expected):
    _, share_unit = table_units("(In millions, except per share amounts)")
    assert row_unit(label, [cell_unit(c) for c in cells], table_unit, share_unit) == expected


def test_table_units_read_the_share_scale():
    assert table_units("(In millions, except number of shares, which are reflected in thousands, and per-share "
                       "amounts)") == ("USD millions", "shares thousands")
    assert table_units("(in thousands, except per share data)") == ("USD thousands", "shares thousands")


def test_cell_units_differ_from_their_row():
    raw = RawTable(page_number=3, headers=["2022", "2021", "% Change"], unit_text="(in millions)",
                   rows=[("Net sales", ["394,328", "365,817", "8 %"])])
    (row,) = to_table_rows(raw, "X-2022-10K", 0)
    assert row.unit == "USD millions"
    assert [c.unit for c in row.cells] == [None, None, "percent"]


@pytest.mark.parametrize(("title", "labels", "section", "expected"), [
    ("CONSOLIDATED BALANCE SHEETS", ["Cash", "Total assets"], "Item 8", "balance_sheet"),
    ("Consolidated Statements of Financial Position", [], None, "balance_sheet"),
    ("CONSOLIDATED STATEMENTS OF CASH FLOWS", [], None, "cash_flow"),
    ("Consolidated Statements of Operations", [], None, "income_statement"),
    ("CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME", ["Net income", "Other comprehensive income"], None, "other"),
    ("Consolidated Statements of Shareholders' Equity", [], None, "equity"),
    (None, ["Net cash provided by operating activities", "Net cash used in investing activities",
            "Cash and cash equivalents, end of year"], "Item 8", "cash_flow"),
    (None, ["Total current assets", "Total assets", "Total current liabilities",
            "Total liabilities and shareholders' equity"], "Item 8", "balance_sheet"),
    ("In millions, except per share amounts", ["Total revenues", "Operating income", "Income before income tax "
                                               "provision", "Net income", "Basic", "Diluted"], "Item 8",
     "income_statement"),
    ("AWS", ["Net sales", "Operating income", "Net sales", "Operating income"], "Item 8", "segment_note"),
    ("Stock options outstanding", ["Granted", "Exercised"], "Item 8", "other"),
])
def test_classify_table(title, labels, section, expected):
    assert expected in STATEMENT_TYPES
    assert classify_table(title, labels, section) == expected


# ---------------------------------------------------------------- warehouse: no NaN read back


def test_nullable_fields_read_back_as_none_never_nan(tmp_path):
    from finrag_pipeline.core.catalog import load_filing, write_filing
    from finrag_pipeline.core.models import FilingMeta, TableCell, TableRow, XbrlFact
    from finrag_pipeline.core.query_understanding import CorpusCatalog
    from finrag_pipeline.core.records import load_facts, load_table_rows
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    wh = Warehouse(tmp_path / "w.duckdb")
    meta = FilingMeta(filing_id="SQUARE-INC-2017-10K", content_sha256="ab", source_path="x", original_name="x.pdf",
                      source_format="pdf", company="SQUARE, INC.", ticker=None, cik=None, form_type="10-K",
                      fiscal_year=2017, period_end_date=None, fiscal_year_end=None, n_pages=0)
    write_filing(wh, meta)
    row = TableRow(filing_id=meta.filing_id, table_id="t", row_index=0, page_number=1, section=None,
                   table_title=None, unit=None, unit_text=None, row_label="Revenue",
                   cells=[TableCell(header="", period=None, value_text="", value=None)], statement_type=None)
    wh.replace_rows("core.table_rows", rows_of([row]), where={"filing_id": meta.filing_id})
    facts = [XbrlFact(filing_id=meta.filing_id, fact_id=f"f{i}", concept="us-gaap:Revenues", value=None,
                      value_text="", unit=None, decimals=d, period_type="instant", period_start=None,
                      period_end=None, page_number=None) for i, d in enumerate((None, -6))]
    wh.replace_rows("core.xbrl_facts", rows_of(facts), where={"filing_id": meta.filing_id})

    def no_nan(obj):
        values = obj.__dict__.values() if hasattr(obj, "__dict__") else [obj]
        return not any(isinstance(v, float) and math.isnan(v) for v in values)

    back = load_filing(wh, meta.filing_id)
    assert no_nan(back)
    assert (back.ticker, back.cik, back.period_end_date, back.fiscal_year_end, back.metadata_confidence) == (
        None, None, None, None, None)
    (trow,) = load_table_rows(wh, meta.filing_id)
    assert no_nan(trow) and trow.unit is None and trow.statement_type is None and trow.row_path == ["Revenue"]
    loaded = load_facts(wh, meta.filing_id)
    assert all(no_nan(f) for f in loaded)
    assert [f.decimals for f in loaded] == [None, -6] and isinstance(loaded[1].decimals, int)
    (cat,) = CorpusCatalog.from_warehouse(wh).filings
    assert no_nan(cat) and cat.ticker is None and cat.cik is None and cat.period_end_date is None


def test_old_warehouse_gains_new_columns(tmp_path):
    import duckdb

    from finrag_pipeline.core.warehouse import Warehouse

    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA core")
        con.execute("CREATE TABLE core.table_rows (filing_id VARCHAR, table_id VARCHAR, row_index INTEGER, "
                    "page_number INTEGER, section VARCHAR, table_title VARCHAR, unit VARCHAR, unit_text VARCHAR, "
                    "row_label VARCHAR, headers VARCHAR, cells VARCHAR)")
    cols = set(Warehouse(path).query_df("DESCRIBE core.table_rows")["column_name"])
    assert {"row_path", "statement_type"} <= cols


# ---------------------------------------------------------------- the whole real corpus (extra check)

CORPUS_DIR = next((d / "shared" / "corpus" for d in REPO_ROOT.parents if (d / "shared" / "corpus").is_dir()),
                  REPO_ROOT.parent / "shared" / "corpus")
ROBUSTNESS_DIR = CORPUS_DIR / "robustness"
ROBUSTNESS2_DIR = CORPUS_DIR / "robustness2"


@pytest.mark.slow
@pytest.mark.skipif(not (ROBUSTNESS2_DIR / "manifest.jsonl").is_file(), reason="../shared/corpus/robustness2 absent")
def test_every_robustness_and_sample_filing_is_read_right():
    """Both robustness sets (36 PDFs) and the 8 samples: registered with the manifest's company and fiscal
    year, the company map's ticker where it knows the registrant, all four primary statements tagged."""
    from finrag_pipeline.core.ingest.inspect import check_against_manifest, inspect_filing, read_manifest

    expected = (read_manifest(ROBUSTNESS_DIR / "manifest.jsonl") | read_manifest(ROBUSTNESS2_DIR / "manifest.jsonl")
                | read_manifest(REPO_ROOT / "benchmarks" / "sample_manifest.jsonl"))
    files = (sorted(ROBUSTNESS_DIR.glob("*.pdf")) + sorted(ROBUSTNESS2_DIR.glob("*.pdf"))
             + sorted(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.suffix in (".pdf", ".html")))
    rows = check_against_manifest([inspect_filing(p) for p in files], expected)
    assert len(rows) == 44
    bad = [r for r in rows if not (r["registered"] and r["company_ok"] and r["fy_ok"] and r["statements_ok"]
                                   and r["equity_ok"]) or r["unit_violations"] or r["ticker_ok"] is False]
    assert bad == []
    # Foot Locker (delisted, not in the bundled map) keeps the cover's symbol and is flagged for review
    foot = [r for r in rows if r["file"].startswith("FOOTLOCKER")]
    assert [(r["ticker"], r["review"]) for r in foot] == [("FL", "not in the company map")] * 2
    tickers = {r["file"]: r["ticker"] for r in rows}
    assert (tickers["APPLE_2015_10K.pdf"], tickers["APPLE_2017_10K.pdf"], tickers["BOSTONPROPERTIES_2015_10K.pdf"]) == (
        "AAPL", "AAPL", "BXP")
    pepsico = next(r for r in rows if r["file"] == "PEPSICO_2020_10K.pdf")
    assert pepsico["pages"] == 586 and pepsico["seconds"] < 60


# ---------------------------------------------------------------- query understanding: company aliases

# (registrant name as read from the cover, ticker as registered, the name people use in a question)
CORPUS_COMPANIES = [
    ("SQUARE, INC.", "XYZ", "Block"), ("SQUARE, INC.", "XYZ", "Square"),
    ("Costco Wholesale Corporation", "COST", "Costco"), ("CVS HEALTH CORPORATION", "CVS", "CVS Health"),
    ("eBay Inc.", "EBAY", "eBay"), ("FedEx Corporation", "FDX", "FedEx"),
    ("GENERAL MILLS, INC.", "GIS", "General Mills"), ("INTEL CORPORATION", "INTC", "Intel"),
    ("The Kraft Heinz Company", "KHC", "Kraft Heinz"), ("LOCKHEED MARTIN CORPORATION", "LMT", "Lockheed Martin"),
    ("McDONALD'S CORPORATION", "MCD", "McDonalds"), ("McDONALD'S CORPORATION", "MCD", "McDonald's"),
    ("Netflix, Inc.", "NFLX", "Netflix"), ("NIKE, Inc.", "NKE", "Nike"), ("Oracle Corporation", "ORCL", "Oracle"),
    ("PepsiCo, Inc.", "PEP", "PepsiCo"), ("PG&E CORPORATION", "PCG", "PG&E Corporation"),
    ("PG&E CORPORATION", "PCG", "PG&E"), ("Salesforce, Inc.", "CRM", "Salesforce"),
    ("Verizon Communications Inc.", "VZ", "Verizon"), ("WALMART INC.", "WMT", "Walmart"),
    ("AMAZON.COM, INC.", "AMZN", "Amazon"), ("Apple Inc.", "AAPL", "Apple"), ("THE BOEING COMPANY", "BA", "Boeing"),
    ("THE BOEING COMPANY", "BA", "The Boeing Company"), ("THE BOEING COMPANY", "BA", "BA"),
    ("MICROSOFT CORPORATION", "MSFT", "Microsoft"), ("NVIDIA CORP", "NVDA", "NVIDIA"),
]


@pytest.fixture(scope="module")
def corpus_parser():
    from finrag_pipeline.core.query_understanding import CorpusCatalog, QueryParser

    filings = {(company, ticker) for company, ticker, _ in CORPUS_COMPANIES}
    # one filing without a ticker (NaN as pandas reads a NULL): must neither crash nor match the others
    catalog = CorpusCatalog([{"filing_id": f"{t}-2021-10K", "ticker": t, "company": c, "fiscal_year": 2021,
                              "period_end_date": "2021-12-31"} for c, t in sorted(filings)]
                            + [{"filing_id": "ACME-WIDGETS-2021-10K", "ticker": float("nan"),
                                "company": "Acme Widgets Holdings, Inc.", "fiscal_year": 2021,
                                "period_end_date": float("nan")}])
    return QueryParser(catalog)


@pytest.mark.parametrize(("company", "ticker", "common"), CORPUS_COMPANIES)
def test_every_corpus_company_is_found_by_its_common_name(corpus_parser, company, ticker, common):
    qu = corpus_parser.parse(f"What was {common}'s revenue in 2021?")
    assert qu.companies == [ticker]
    assert qu.filing_ids == [f"{ticker}-2021-10K"]


def test_company_without_ticker_is_keyed_by_name_and_found(corpus_parser):
    qu = corpus_parser.parse("What was Acme Widgets' revenue in 2021?")
    assert qu.companies == ["Acme Widgets Holdings, Inc."]
    assert qu.filing_ids == ["ACME-WIDGETS-2021-10K"]
    assert corpus_parser.parse("Which block of shares was repurchased in 2021?").companies == []


@pytest.mark.parametrize(("question", "key"), [
    ("SQ revenue in 2021", "XYZ"),                 # a former ticker (Square)
    ("Revenue of CIK 320193 in 2021", "AAPL"),     # the CIK, from the company map
    ("What did Wal-Mart earn in 2021?", "WMT"),    # a former/common name
    ("What was PG&E's revenue in 2021?", "PCG"),
])
def test_aliases_from_the_company_map(corpus_parser, question, key):
    assert corpus_parser.parse(question).companies == [key]


# ---------------------------------------------------------------- configuration resolver


def test_every_yaml_is_resolved_through_finrag_config_dir(tmp_path, monkeypatch):
    from finrag_pipeline.core.chunking.config import load_chunking_config
    from finrag_pipeline.core.config import ASSETS_CONFIG_DIR, config_path
    from finrag_pipeline.core.llm.registry import load_model_registry
    from finrag_pipeline.core.retrieval.config import load_retrievers

    custom = tmp_path / "cfg"
    custom.mkdir()
    (custom / "retrievers.yaml").write_text("retrievers:\n  only_bm25: {type: bm25, k: 3}\n")
    (custom / "models.yaml").write_text((ASSETS_CONFIG_DIR / "models.yaml").read_text())
    monkeypatch.setenv("FINRAG_CONFIG_DIR", str(custom))
    assert config_path("retrievers.yaml") == custom / "retrievers.yaml"
    assert config_path("ingest.yaml") == ASSETS_CONFIG_DIR / "ingest.yaml"  # not overridden: the default
    assert list(load_retrievers()) == ["only_bm25"]
    assert load_model_registry() is not None and load_chunking_config() is not None
    per_file = tmp_path / "r.yaml"
    per_file.write_text("retrievers:\n  other: {type: bm25}\n")
    monkeypatch.setenv("FINRAG_RETRIEVERS_YAML", str(per_file))
    assert list(load_retrievers()) == ["other"]


@pytest.mark.parametrize(("overrides", "message"), [
    ({"nope.k": 1}, "unknown retriever 'nope'; valid: "),
    ({"bm25.kk": 1}, "unknown field of retriever 'bm25' 'kk'; valid: "),
])
def test_unknown_set_names_list_the_valid_ones(overrides, message):
    from finrag_pipeline.core.config import ConfigError
    from finrag_pipeline.core.retrieval.config import load_retrievers

    with pytest.raises(ConfigError) as err:
        load_retrievers(overrides=overrides)
    assert message in str(err.value)
    assert "bm25" in str(err.value).split("valid: ")[1] or "k" in str(err.value).split("valid: ")[1]


def test_cli_unknown_retriever_is_a_message_not_a_traceback(tmp_path):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    result = CliRunner().invoke(main, ["--home", str(tmp_path), "search", "revenue", "--set", "nope.k=3"])
    assert result.exit_code != 0
    assert "unknown retriever 'nope'; valid:" in result.output
    assert "Traceback" not in result.output


def test_cli_inspect_json_and_refusal(tmp_path):
    import json as _json

    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    result = CliRunner().invoke(main, ["--home", str(tmp_path), "inspect", str(TEST_DATA / "pge_2020_excerpt.pdf"),
                                       "--json"])
    assert result.exit_code == 0, result.output
    report = _json.loads(result.output)
    assert report["metadata"]["company"] == "PG&E CORPORATION" and report["metadata"]["fiscal_year"] == 2020
    assert report["statements"]["income_statement"]["periods"][:2] == ["FY2020", "FY2019"]
    assert report["pages"] == 2 and report["xbrl_facts"] == 0 and report["units"]["USD millions"] > 10
    assert "pdf_tables" in report["timings"]
    junk = tmp_path / "notes.pdf"
    junk.write_bytes(b"hello")
    refused = CliRunner().invoke(main, ["--home", str(tmp_path), "inspect", str(junk)])
    assert refused.exit_code == 2 and "unsupported" in refused.output and "remedy" in refused.output


def test_question_labels_carry_the_group_heading():
    from finrag_pipeline.core.models import TableRow
    from finrag_pipeline.core.qa.model_free import row_question_label

    def row(path):
        return TableRow(filing_id="X", table_id="t", row_index=0, page_number=1, section=None, table_title=None,
                        unit=None, unit_text=None, row_label=path[-1], row_path=path)

    assert row_question_label(row(["Net loss per share attributable to common stockholders", "Diluted"])) == \
        "Net loss per share attributable to common stockholders, diluted"
    assert row_question_label(row(["North America", "Operating income (loss)"])) == \
        "North America operating income (loss)"
    assert row_question_label(row(["Total net sales"])) == "Total net sales"


def _words(line_specs):
    """Word boxes as pdfium_words gives them: (top, [(x0, text), ...]); 5 pt per character."""
    words = []
    for top, segs in line_specs:
        for x0, text in segs:
            x = x0
            for w in text.split(" "):
                words.append({"x0": x, "x1": x + 5 * len(w), "top": top, "bottom": top + 9, "text": w})
                x += 5 * len(w) + 3
    return words


def test_unit_caption_on_the_period_header_line():
    """Intel FY2020 p.76: "Years Ended (In Millions, Except Per Share Amounts)  Dec 26, 2020  Dec 28, 2019"
    is one line; it is the header (the periods are fiscal years), not only the unit caption."""
    from finrag_pipeline.core.ingest.pdf import tables_from_words

    words = _words([
        (51, [(34, "Consolidated Statements of Income")]),
        (89, [(34, "Years Ended (In Millions, Except Per Share Amounts)"), (383, "Dec 26, 2020"),
              (452, "Dec 28, 2019")]),
        (103, [(34, "Net revenue"), (411, "77,867"), (480, "71,965")]),
        (117, [(34, "Cost of sales"), (411, "34,255"), (480, "29,825")]),
        (131, [(34, "Earnings per share—diluted"), (421, "4.94"), (490, "4.71")]),
        (700, [(34, "Financial Statements"), (300, "74")]),
    ])
    (raw,) = tables_from_words(words, 76, 612.0)
    rows = to_table_rows(raw, "INTC-2020-10K", 0)
    assert raw.title == "Consolidated Statements of Income"
    assert [c.period for c in rows[0].cells] == ["FY2020", "FY2019"]
    assert [r.row_label for r in rows] == ["Net revenue", "Cost of sales", "Earnings per share—diluted"]
    assert [r.unit for r in rows] == ["USD millions", "USD millions", "USD per share"]
    assert {r.statement_type for r in rows} == {"income_statement"}


def test_every_nullable_field_of_every_record_reads_back_as_none(tmp_path):
    """Each record written with None in every optional field (and a second row with values, so that
    pandas sees a mixed column) reads back with None there: never NaN, NaT or a float for an int."""
    import dataclasses
    import typing

    from finrag_pipeline.core import models
    from finrag_pipeline.core.catalog import load_filing, write_filing
    from finrag_pipeline.core.records import (
        load_chunks,
        load_facts,
        load_pages,
        load_qa_items,
        load_table_rows,
    )
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    wh = Warehouse(tmp_path / "w.duckdb")
    fid = "ACME-2021-10K"
    required = {"filing_id": fid, "content_sha256": "ab", "source_path": "x", "original_name": "x.pdf",
                "source_format": "pdf", "company": "Acme", "form_type": "10-K", "fiscal_year": 2021,
                "table_id": "t", "row_index": 0, "page_number": 1, "row_label": "Revenue", "text": "t",
                "fact_id": "f", "concept": "us-gaap:Revenues", "value_text": "1", "period_type": "instant",
                "chunk_id": "c", "page_start": 1, "page_end": 1, "chunk_type": "prose", "qa_id": "q",
                "question": "?", "reference_answer": "a", "question_type": "factual"}

    def build(cls, filled: bool):
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):
            optional = type(None) in typing.get_args(hints[f.name])
            if f.name in required:
                kwargs[f.name] = required[f.name] if not filled or f.name != "chunk_id" else "c2"
            elif optional:
                base = [a for a in typing.get_args(hints[f.name]) if a is not type(None)][0]
                sample = {int: 7, float: 0.5, str: "s", date: date(2021, 12, 31)}.get(base)
                kwargs[f.name] = sample if filled else None
        if filled:
            kwargs.update({k: v for k, v in {"qa_id": "q2", "fact_id": "f2", "row_index": 1, "page_number": 2, "position": 1}.items()
                           if k in kwargs})
        return cls(**kwargs)

    optional_fields = {}
    for cls in (models.FilingMeta, models.Page, models.TableRow, models.XbrlFact, models.Chunk, models.QAItem):
        hints = typing.get_type_hints(cls)
        optional_fields[cls.__name__] = [f.name for f in dataclasses.fields(cls)
                                         if type(None) in typing.get_args(hints[f.name]) and f.name not in required]
    write_filing(wh, build(models.FilingMeta, False))
    for table, cls in (("core.pages", models.Page), ("core.table_rows", models.TableRow),
                       ("core.xbrl_facts", models.XbrlFact), ("core.chunks", models.Chunk), ("qa.items", models.QAItem)):
        wh.replace_rows(table, rows_of([build(cls, False), build(cls, True)]), where={"filing_id": fid})
    read = {"FilingMeta": [load_filing(wh, fid)], "Page": load_pages(wh, fid), "TableRow": load_table_rows(wh, fid),
            "XbrlFact": load_facts(wh, fid), "Chunk": load_chunks(wh, fid), "QAItem": load_qa_items(wh, fid)}
    for name, fields in optional_fields.items():
        records = read[name]
        assert records, name
        empty = records[0]
        for f in fields:
            assert getattr(empty, f) is None, f"{name}.{f} = {getattr(empty, f)!r}"
        for r in records:
            for f in dataclasses.fields(r):
                v = getattr(r, f.name)
                assert not (isinstance(v, float) and math.isnan(v)), f"{name}.{f.name} is NaN"
        filled = [r for r in records if r is not empty]
        for r in filled:  # the filled row keeps its types: an int stays an int next to a NULL
            for f in fields:
                v = getattr(r, f)
                hint = typing.get_type_hints(type(r))[f]
                if int in typing.get_args(hint):
                    assert isinstance(v, int) and not isinstance(v, bool), f"{name}.{f} = {v!r}"


def test_asset_check_fails_on_a_percentage_row_in_usd(tmp_path, excerpts):
    import types

    from finrag_pipeline.core.warehouse import rows_of
    from finrag_pipeline.defs.ingest.checks import table_row_units_are_consistent
    from finrag_pipeline.defs.resources import FinragResource

    finrag = FinragResource(home=str(tmp_path))
    rows = excerpts["walmart_2021"].table_rows
    fid = rows[0].filing_id
    finrag.warehouse.replace_rows("core.table_rows", rows_of(rows), where={"filing_id": fid})
    context = types.SimpleNamespace(partition_key=fid)  # the check reads only the partition key
    check = table_row_units_are_consistent.node_def.compute_fn.decorated_fn
    ok = check(context, finrag=finrag)
    assert ok.passed and ok.metadata["rows_with_currency_on_percent_or_per_share"].value == "0"  # per-filing counts are text (not a trend in the UI)
    # the excerpt holds the income statement only: the others are missing, with where they were looked for
    assert ok.metadata["statements_missing"].value == "balance_sheet, cash_flow, equity"
    assert ok.metadata["statements_searched"].value.startswith("balance_sheet: titles and line items of 1 table pages")
    broken = [dataclasses_replace(r, unit="USD millions") if r.unit == "USD per share" else r for r in rows]
    finrag.warehouse.replace_rows("core.table_rows", rows_of(broken), where={"filing_id": fid})
    bad = check(context, finrag=finrag)
    assert not bad.passed and bad.metadata["rows_with_currency_on_percent_or_per_share"].value == "3"


def dataclasses_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


def test_company_map_refresh_from_an_installed_edgartools(tmp_path, monkeypatch):
    import pandas as pd

    from finrag_pipeline.core.company_map import BUNDLED_MAP, load_company_map, refresh_company_map

    # edgartools ships edgar/reference/data/company_tickers.parquet (cik, ticker, exchange, name)
    data = tmp_path / "site" / "edgar" / "reference" / "data"
    data.mkdir(parents=True)
    (tmp_path / "site" / "edgar" / "__init__.py").write_text("")
    pd.DataFrame([{"cik": "0001512673", "ticker": "XYZ", "exchange": "NYSE", "name": "Block, Inc."},
                  {"cik": "0000320193", "ticker": "AAPL", "exchange": "Nasdaq", "name": "Apple Inc."},
                  {"cik": "0000320193", "ticker": "AAPL-W", "exchange": "Nasdaq", "name": "Apple Inc."}]
                 ).to_parquet(data / "company_tickers.parquet")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    assert load_company_map().source == str(BUNDLED_MAP)
    path, n = refresh_company_map("edgartools")
    assert n == 2 and path == tmp_path / "home" / "reference" / "company_map.csv.gz"
    refreshed = load_company_map()
    assert refreshed.source == str(path) and len(refreshed) == 2 + 1  # + the co-registrant from the extras
    block, how = refreshed.find(name="SQUARE, INC.")
    assert (block.cik, block.ticker, how) == ("1512673", "XYZ", "former name")   # former names survive
    assert refreshed.by_ticker("AAPL-W").cik == "320193"
    with pytest.raises(ValueError, match="valid: edgartools, edgar"):
        refresh_company_map("wikipedia")


def test_pdf_info_and_running_header_fallbacks():
    from finrag_pipeline.core.ingest.metadata import running_header

    nameless = "FORM 10-K\nFor the fiscal year ended September 24, 2022\nCommission File Number: 001-36743\n"
    by_info = parse_pdf_cover(nameless, info={"Title": "Apple Inc.", "Producer": "EDGAR PDF Generator"})
    assert (by_info.company, by_info.ticker, by_info.field_sources["company"]) == ("Apple Inc.", "AAPL", "pdf-info:title")
    assert by_info.confidence < 1.0
    # a title that is no registrant ("Document", an EDGAR file stem) is never taken as the company
    assert parse_pdf_cover(nameless, info={"Title": "Document"}).company is None
    # EDGAR renderings title the PDF with the accession number; a self-filer's CIK leads it
    by_accession = parse_pdf_cover(nameless, info={"Title": "0000320193-21-000105", "Subject": "10-K"})
    assert (by_accession.company, by_accession.cik, by_accession.field_sources["company"]) == (
        "Apple Inc.", "0000320193", "pdf-info:accession-cik")
    agent = parse_pdf_cover(nameless, info={"Title": "0001193125-21-204830"})   # a filing agent: no company
    assert agent.company is None and any("0001193125-21-204830" in n for n in agent.notes)
    pages = ["cover", "contents"] + [f"Apple Inc. | 2022 Form 10-K | {n}\nNet sales rose." for n in range(3, 9)]
    assert running_header(pages) == "Apple Inc."
    by_header = parse_pdf_cover(nameless, running_header=running_header(pages))
    assert (by_header.company, by_header.field_sources["company"]) == ("Apple Inc.", "running-header")


def test_find_the_balance_sheet_of_a_year(boeing):
    from finrag_pipeline.core.ingest.statements import find_statement

    sheet = find_statement(boeing.table_rows, "balance_sheet", "FY2021")
    assert {r.page_number for r in sheet} == {62}       # Item 8, Consolidated Statements of Financial Position
    total = next(r for r in sheet if r.row_label == "Total assets")
    assert (total.unit, _value(total, "2021-12-31"), _value(total, "2020-12-31")) == ("USD millions", 138552.0, 152136.0)
    cash = find_statement(boeing.table_rows, "cash_flow", "2021")
    assert {r.page_number for r in cash} == {63}
    assert find_statement(boeing.table_rows, "income_statement", "FY1999") == []
    with pytest.raises(ValueError, match="valid: income_statement"):
        find_statement(boeing.table_rows, "p&l")


def test_unit_caption_between_the_header_and_the_rows():
    """Netflix FY2020 p.24: years, then "(in thousands, except ...)" over the value columns, then the rows."""
    from finrag_pipeline.core.ingest.pdf import tables_from_words

    words = _words([
        (144, [(38, "The following represents our consolidated performance highlights:")]),
        (179, [(340, "2020"), (415, "2019"), (491, "2018")]),
        (190, [(351, "(in thousands, except revenue per membership and percentages)")]),
        (200, [(18, "Financial Results:")]),
        (211, [(18, "Streaming revenues"), (332, "24,756,675"), (408, "19,859,230"), (483, "15,428,752")]),
        (223, [(18, "DVD revenues"), (343, "239,381"), (419, "297,217"), (494, "365,589")]),
        (339, [(18, "Operating margin"), (363, "18%"), (439, "13%"), (514, "10%")]),
    ])
    (raw,) = tables_from_words(words, 24, 612.0)
    rows = to_table_rows(raw, "NFLX-2020-10K", 0)
    assert [c.period for c in rows[0].cells] == ["FY2020", "FY2019", "FY2018"]
    # "Financial Results:" sits at the rows' own indent: a flat heading's reach is unknown (no total
    # row ends it), so it is not put on the rows rather than put on the wrong ones
    assert rows[0].row_path == ["Streaming revenues"]
    assert (rows[0].unit, rows[0].cells[0].value) == ("USD thousands", 24756675.0)
    assert rows[-1].unit == "percent"


def test_html_group_labels_above_the_first_row_become_its_path():
    """Apple FY2024 iXBRL: "Net sales:" sits between the column headers and "Products"; "ASSETS:" and
    "Current assets:" above "Cash and cash equivalents" were glued onto the column headers."""
    from finrag_pipeline.core.ingest.statements import find_statement

    parsed = parse_filing(SAMPLE_FILINGS_DIR / "aapl-10-k-2024-11-01.html")
    income = find_statement(parsed.table_rows, "income_statement", "FY2024")
    products = next(r for r in income if r.row_label == "Products")
    assert (products.row_path, _value(products, "FY2024")) == (["Net sales", "Products"], 294866.0)
    sheet = find_statement(parsed.table_rows, "balance_sheet", "2024-09-28")
    cash = sheet[0]
    assert cash.row_path == ["Current assets", "Cash and cash equivalents"]
    assert cash.headers == ["", "September 28, 2024", "September 30, 2023"]
    eps = next(r for r in income if r.row_path == ["Earnings per share", "Diluted"])
    assert (eps.unit, _value(eps, "FY2024")) == ("USD per share", 6.08)
