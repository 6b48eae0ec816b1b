"""Issue 28: every 10-K read right on filings nobody tuned to.

- Layout variants of the sample filings' real covers (names, file numbers and years as printed on the
  covers of data/sample_filings): letter-spaced names, small caps split into runs, one word per line, the
  name only in the running header, two registrants on one cover, no trading symbol. Each variant must
  give the same registrant, ticker (the company map's) and fiscal year.
- A registrant the company map does not know registers from a generated PDF cover, flagged for review.
- The catalog over the cover: "LLC" (from "The NASDAQ Stock Market LLC", Apple FY2015's cover) is never a
  ticker; a cover symbol the map does not hold for the registrant is a recorded disagreement.
- A refused file: `finrag inspect` shows the candidates, the cover as read and the sidecar that fixes it,
  and that sidecar does fix it.
- Tables: titles, units and group labels (Microsoft FY2022 p.44, Boeing FY2021 p.33, named rows).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from finrag_pipeline.core.ingest import parse_filing
from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.metadata import (
    auditor_report_name,
    join_spaced_letters,
    parse_pdf_cover,
    signature_name,
    statement_heading_name,
)
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR

sys.path.insert(0, str(REPO_ROOT / "finrag_pipeline_tests" / "data"))
from make_hostile_files import text_pdf  # noqa: E402  (the hand-written PDF generator of the test data)

# (name as printed on the cover, commission file number, state, IRS number, period end, ticker, CIK, FY)
SAMPLE_COVERS = [
    ("Apple Inc.", "001-36743", "California", "94-2404110", "September 24, 2022", "AAPL", "0000320193", 2022),
    ("THE BOEING COMPANY", "1-442", "Delaware", "91-0425694", "December 31, 2021", "BA", "0000012927", 2021),
    ("MICROSOFT CORPORATION", "001-37845", "Washington", "91-1144442", "June 30, 2022", "MSFT", "0000789019", 2022),
    ("AMAZON.COM, INC.", "000-22513", "Delaware", "91-1646860", "December 31, 2022", "AMZN", "0001018724", 2022),
]


def cover(name: str, file_no: str, state: str, irs: str, period: str, ticker: str | None,
          extra_registrant: str | None = None) -> str:
    lines = ["UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549", "FORM 10-K",
             "(Mark One)", "☒ ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
             f"For the fiscal year ended {period}", "or",
             "☐ TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
             "For the transition period from to", f"Commission File Number: {file_no}", name,
             "(Exact name of Registrant as specified in its charter)", f"{state} {irs}",
             "(State or other jurisdiction of incorporation or organization) (I.R.S. Employer Identification No.)"]
    if extra_registrant:
        lines[11:14] = ["Commission File Exact Name of Registrant as specified in its charter, State IRS Employer",
                        f"{file_no} {name} {state} {irs}", f"1-2348 {extra_registrant} {state} 94-0742640"]
    lines += ["Securities registered pursuant to Section 12(b) of the Act:",
              "Title of each class Trading symbol(s) Name of each exchange on which registered"]
    if ticker:
        lines.append(f"Common Stock, $0.01 par value per share {ticker} The Nasdaq Stock Market LLC")
    else:
        lines += ["Common Stock, $0.01 par value per share", "The Nasdaq Stock Market LLC"]
    lines.append("Securities registered pursuant to Section 12(g) of the Act: None")
    return "\n".join(lines)


def letter_spaced(name: str) -> str:
    return "  ".join(" ".join(word) for word in name.split())


def small_caps(name: str) -> str:
    """"THE BOEING COMPANY" as a renderer sets small caps: "T HE B OEING C OMPANY"."""
    return " ".join(f"{w[0]} {w[1:].upper()}" if len(w) > 2 else w.upper() for w in name.split())


VARIANTS = {
    "as printed": lambda c: cover(*c),
    "letter-spaced name": lambda c: cover(letter_spaced(c[0]), *c[1:]),
    "small caps split": lambda c: cover(small_caps(c[0]), *c[1:]),
    "one word per line": lambda c: "\n".join(cover(*c).split()),
    "small caps one word per line": lambda c: "\n".join(cover(small_caps(c[0]), *c[1:]).split()),
    "no trading symbol": lambda c: cover(*c[:5], None),
    "two registrants": lambda c: cover(*c, extra_registrant="A SUBSIDIARY FINANCE CORPORATION"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("sample", SAMPLE_COVERS, ids=[c[5] for c in SAMPLE_COVERS])
def test_every_layout_variant_reads_the_same_registrant(sample, variant):
    name, _file_no, _state, _irs, period, ticker, cik, fy = sample
    info = parse_pdf_cover(VARIANTS[variant](sample[:6]))   # name, file no., state, IRS no., period, ticker
    assert (info.ticker, info.cik, info.fiscal_year) == (ticker, cik, fy)
    assert info.company.replace(" ", "").upper() == name.replace(" ", "").upper()
    assert info.review_reasons == [] and info.in_company_map is True
    if variant == "two registrants":
        assert info.co_registrants == ["A SUBSIDIARY FINANCE CORPORATION"]


@pytest.mark.parametrize(("printed", "joined"), [
    ("M GM R ESORTS I NTERNATIONAL", "MGM RESORTS INTERNATIONAL"),   # issue 28's filing id MGM-R-ESORTS-...
    ("A P P L E  I N C .", "APPLE INC."),
    ("PART I ITEM 1 Business", "PART I ITEM 1 Business"),           # one lone capital is ordinary text
    ("CLASS A COMMON STOCK", "CLASS A COMMON STOCK"),
    ("Item 1A. Risk Factors", "Item 1A. Risk Factors"),
])
def test_letter_spacing_is_undone_and_ordinary_text_is_not(printed, joined):
    assert join_spaced_letters(printed) == joined


def test_the_name_only_in_the_running_header_of_a_pdf(tmp_path):
    """A cover whose name is a logo (no text): the running header of the body pages names the registrant."""
    nameless = cover("", "001-36743", "California", "94-2404110", "September 24, 2022", "AAPL")
    body = [f"Apple Inc. | 2022 Form 10-K | {n}\nThe Company designs, manufactures and markets smartphones.\n"
            + "\n".join(f"Line {k} of the business description of the Company." for k in range(20)) for n in range(1, 7)]
    path = tmp_path / "nameless.pdf"
    text_pdf(path, [nameless, "Table of Contents\nPart I", *body])
    meta = parse_filing(path).meta
    assert (meta.company, meta.ticker, meta.fiscal_year, meta.filing_id) == ("Apple Inc.", "AAPL", 2022, "AAPL-2022-10K")
    assert meta.field_sources["company"] == "running-header"


def test_an_unknown_registrant_registers_from_its_pdf_cover_flagged(tmp_path):
    from finrag_pipeline.core.catalog import register_file
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse

    textbook = cover("Readable Text Corp", "001-99999", "Delaware", "12-3456789", "December 31, 2024", None)
    body = "\n".join(f"Readable Text Corp sells readable text to readers, line {i}." for i in range(30))
    path = tmp_path / "readable_text_10k.pdf"
    text_pdf(path, [textbook, body, body])
    meta = parse_filing(path).meta
    assert (meta.company, meta.fiscal_year, meta.ticker, meta.cik) == ("Readable Text Corp", 2024, None, None)
    assert meta.filing_id == "READABLE-TEXT-CORP-2024-10K"
    assert meta.review_reasons == ["not in the company map"]
    assert meta.field_sources["company"] == "cover:exact-name" and meta.field_confidence["company"] >= 0.9
    paths = FinragPaths.from_env(str(tmp_path / "home")).ensure()
    wh = Warehouse(paths.warehouse)
    reg = register_file(path, paths, wh)
    assert (reg.status, reg.filing_id) == ("registered", "READABLE-TEXT-CORP-2024-10K")
    row = wh.query_df("SELECT company, review_reasons FROM core.filings").iloc[0]
    assert row["company"] == "Readable Text Corp" and "not in the company map" in row["review_reasons"]
    log = wh.query_df("SELECT status, message FROM core.ingest_log").to_dict("records")
    assert sorted((r["status"], r["message"]) for r in log) == [
        ("registered", "Readable Text Corp 10-K FY2024; in the review queue: not in the company map"),
        ("review", "not in the company map")]


def test_a_logo_cover_falls_back_to_the_signature_page_and_the_auditors_report():
    """Foot Locker FY2022's cover prints its name only as an image; its signature page (p.86) and auditor's
    report (p.39) print "FOOT LOCKER, INC." / "Foot Locker, Inc.:" (text as extracted from the filing)."""
    signature = ("2021 Form 10-K Page 83\nSIGNATURES\nPursuant to the requirements of Section 13 or 15(d) of the "
                 "Securities Exchange Act of 1934, the Company has duly\ncaused this report to be signed on its "
                 "behalf by the undersigned, thereunto duly authorized.\nFOOT LOCKER, INC.\nBy: /s/ RICHARD A. "
                 "JOHNSON\nRichard A. Johnson")
    auditor = ("Report of Independent Registered Public Accounting Firm\nTo the Shareholders and Board of Directors"
               "\nFoot Locker, Inc.:\nOpinion on the Consolidated Financial Statements")
    assert signature_name(["Item 1", signature]) == "FOOT LOCKER, INC."
    assert auditor_report_name([auditor]) == "Foot Locker, Inc."
    assert auditor_report_name(["To the Board of Directors and Stockholders of eBay Inc.\nOpinion on ..."]) == "eBay Inc."
    heading = "THE COCA-COLA COMPANY AND SUBSIDIARIES\nCONSOLIDATED BALANCE SHEETS\n(In millions)"
    assert statement_heading_name(["intro", heading, heading]) == "THE COCA-COLA COMPANY"
    logo_cover = ("FORM 10-K\nFor the fiscal year ended January 29, 2022\nCommission File No. 1-10299\n"
                  "(Exact name of registrant as specified in its charter)\nNew York 13-3513936\n"
                  "Common Stock, par value $0.01 FL New York Stock Exchange")
    info = parse_pdf_cover(logo_cover, page_texts=["x", auditor, signature], file_name="FOOTLOCKER_2022_10K.pdf")
    assert (info.company, info.field_sources["company"], info.fiscal_year) == ("FOOT LOCKER, INC.", "signature-page", 2022)
    considered = {c.source: c for c in info.candidates if c.field == "company"}
    assert considered["auditor-report"].accepted is False and "stronger source" in considered["auditor-report"].reason
    assert considered["file-name"].value == "FOOTLOCKER"


def test_the_file_name_is_the_last_resort_and_always_flagged():
    bare = "FORM 10-K\nANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)\nsome text without a name or a date"
    info = parse_pdf_cover(bare, file_name="ACME_WIDGETS_2023_10K.pdf")
    assert (info.company, info.fiscal_year) == ("ACME WIDGETS", 2023)
    assert info.field_sources == {"fiscal_year": "file-name", "company": "file-name"}
    assert any(r.startswith("company from file-name") for r in info.review_reasons)
    assert any(r.startswith("fiscal_year from file-name") for r in info.review_reasons)
    # a file name the company map knows still gives a flagged filing (the map's name and ticker)
    known = parse_pdf_cover(bare, file_name="APPLE_2022_10K.pdf")
    assert (known.company, known.ticker, known.fiscal_year) == ("Apple Inc.", "AAPL", 2022)
    assert "company from the file name (then company-map:name)" in known.review_reasons


def test_the_company_maps_ticker_wins_over_the_cover():
    # Apple FY2015's cover (p.1): no trading symbol column; exchanges end in "LLC"
    apple_2015 = ("FORM 10-K\nFor the fiscal year ended September 26, 2015\nCommission File Number: 001-36743\n"
                  "Apple Inc.\n(Exact name of registrant as specified in its charter)\nCalifornia 94-2404110\n"
                  "Securities registered pursuant to Section 12(b) of the Act:\nCommon Stock, $0.00001 par value per "
                  "share\n1.000% Notes due 2022\nThe NASDAQ Stock Market LLC\nNew York Stock Exchange LLC\n"
                  "(Title of class) (Name of exchange on which registered)\n"
                  "Securities registered pursuant to Section 12(g) of the Act: None")
    info = parse_pdf_cover(apple_2015)
    assert (info.ticker, info.trading_symbols, info.field_sources["ticker"]) == ("AAPL", [], "company-map:name")
    # a symbol the map does not hold for the registrant: the map's is used and the disagreement recorded
    wrong = apple_2015.replace("Common Stock, $0.00001 par value per share", "Common Stock APPL NASDAQ")
    info = parse_pdf_cover(wrong)
    assert info.ticker == "AAPL" and info.trading_symbols == ["APPL"]
    assert any("APPL disagrees with the company map's ticker AAPL" in n for n in info.notes)
    assert "the cover's trading symbol disagrees with the company map" in info.review_reasons


def test_inspect_on_a_refused_file_shows_candidates_cover_and_the_fixing_sidecar(tmp_path):
    import json

    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    # a 10-K body without its cover: no form marker, so refused; the statement headings name the registrant
    page = ("ZENITH GADGETS, INC. AND SUBSIDIARIES\nCONSOLIDATED BALANCE SHEETS\n(In thousands)\n"
            + "\n".join(f"Line item {i} {i * 10} {i * 9}" for i in range(25)))
    path = tmp_path / "statements_only.pdf"
    text_pdf(path, [page, page])
    with pytest.raises(IngestError):
        parse_filing(path)
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "inspect", str(path), "--json"])
    report = json.loads(result.output)
    assert report["status"] == "not_a_filing"
    company = [c for c in report["candidates"] if c["field"] == "company"]
    assert company[0] == {"field": "company", "value": "ZENITH GADGETS, INC.", "source": "statement-heading",
                          "confidence": 0.7, "accepted": True, "reason": "taken"}
    assert report["cover_lines"][:2] == ["ZENITH GADGETS, INC. AND SUBSIDIARIES", "CONSOLIDATED BALANCE SHEETS"]
    assert report["sidecar_path"] == str(path) + ".yaml"
    assert report["sidecar"].startswith('company: "ZENITH GADGETS, INC."\nfiscal_year: YYYY')
    text = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "inspect", str(path)]).output
    assert "candidates considered:" in text and "the cover as read" in text and "this sidecar would register it" in text
    # the sidecar as printed, with the year filled in, registers the file
    Path(report["sidecar_path"]).write_text(report["sidecar"].replace("YYYY  # the year the fiscal year ends in",
                                                                      "2024"))
    meta = parse_filing(path).meta
    assert (meta.company, meta.fiscal_year, meta.filing_id) == ("ZENITH GADGETS, INC.", 2024, "ZENITH-GADGETS-INC-2024-10K")


def test_label_and_figures_a_little_apart_are_one_line():
    """Apple FY2019's cash-flow statement (p.36) sets each row's figures 2.7 pt below its label (8.3 pt text)."""
    from finrag_pipeline.core.ingest.pdf import words_to_lines

    def w(x0, x1, top, text):
        return {"x0": x0, "x1": x1, "top": top, "bottom": top + 8.3, "text": text}

    words = [w(26, 63, 135.3, "Net"), w(66, 90, 135.3, "income"), w(397, 420, 138.0, "55,256"),
             w(481, 504, 138.0, "59,531"), w(26, 80, 148.8, "Adjustments")]
    lines = words_to_lines(words)
    assert [ln.text for ln in lines] == ["Net income 55,256 59,531", "Adjustments"]


# ---------------------------------------------------------------- tables: titles, units, group labels


@pytest.fixture(scope="module")
def microsoft():
    return parse_filing(SAMPLE_FILINGS_DIR / "MICROSOFT_2022_10K.pdf")


@pytest.fixture(scope="module")
def boeing():
    return parse_filing(SAMPLE_FILINGS_DIR / "BOEING_2021_10K.pdf")


def _rows(parsed, page):
    return [r for r in parsed.table_rows if r.page_number == page]


def test_microsoft_segment_rows_keep_their_parent(microsoft):
    """MSFT FY2022 p.44 "SEGMENT RESULTS OF OPERATIONS (In millions, except percentages)": Revenue and
    Operating Income, each over the three segments and a Total, all at one indent."""
    rows = {(tuple(r.row_path), r.cells[0].value) for r in _rows(microsoft, 44)}
    assert (("Revenue", "Intelligent Cloud"), 75251.0) in rows
    assert (("Operating Income", "Intelligent Cloud"), 32721.0) in rows
    assert (("Revenue", "Total"), 198270.0) in rows and (("Operating Income", "Total"), 83383.0) in rows
    first = _rows(microsoft, 44)[0]
    assert (first.table_title, first.unit) == ("SEGMENT RESULTS OF OPERATIONS", "USD millions")
    assert first.headers == ["", "2022", "2021", "Percentage Change"]


def test_boeing_backlog_rows_carry_their_backlog_group(boeing):
    """BA FY2021 p.33 "Backlog ... (Dollars in millions)": Commercial Airplanes $296,882 (2021)."""
    rows = _rows(boeing, 33)
    bca = next(r for r in rows if r.row_label == "Commercial Airplanes")
    assert (bca.row_path, bca.cells[0].value, bca.unit, bca.table_title) == (
        ["Backlog", "Commercial Airplanes"], 296882.0, "USD millions", "Backlog")
    assert all(r.row_path[0] == "Backlog" for r in rows)


def test_boeing_note_tables_take_the_notes_unit_caption(boeing):
    """BA FY2021 p.83 "Note 4 – Income Taxes": "The components of Loss before income taxes were:" U.S.
    ($5,475) in 2021; the notes open (p.67) with "(Dollars in millions, except otherwise stated)"."""
    us = next(r for r in _rows(boeing, 83) if r.row_label == "U.S.")
    assert (us.cells[0].value, us.unit) == (-5475.0, "USD millions")
    assert us.table_title == "Note 4 – Income Taxes"


@pytest.mark.slow
def test_demo_numeric_rows_carry_a_unit_and_a_title():
    """At least 95% of the numeric table rows of the 8 sample filings carry a unit and a table title."""
    numeric = with_unit = with_title = 0
    for path in sorted(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.suffix in (".pdf", ".html")):
        rows = [r for r in parse_filing(path).table_rows if any(c.value is not None for c in r.cells)]
        numeric += len(rows)
        with_unit += sum(1 for r in rows if r.unit)
        with_title += sum(1 for r in rows if r.table_title)
    assert numeric > 3000
    assert with_unit / numeric >= 0.95 and with_title / numeric >= 0.95


def test_inspect_tables_prints_what_was_read_per_row(tmp_path):
    import json

    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    result = CliRunner().invoke(main, ["--home", str(tmp_path), "inspect", str(SAMPLE_FILINGS_DIR / "BOEING_2021_10K.pdf"),
                                       "--tables", "33", "--json"])
    report = json.loads(result.output)
    rows = report["table_rows_on_page"]
    assert report["tables_page"] == 33 and len(rows) == 8
    assert rows[0]["title"] == "Backlog" and rows[0]["unit"] == "USD millions"
    assert rows[0]["row_path"] == ["Backlog", "Commercial Airplanes"]
    assert [(c["period"], c["value"]) for c in rows[0]["cells"]] == [("FY2021", "296,882"), ("FY2020", "281,588")]
    text = CliRunner().invoke(main, ["--home", str(tmp_path), "inspect", str(SAMPLE_FILINGS_DIR / "BOEING_2021_10K.pdf"),
                                     "--tables", "33"]).output
    assert "Backlog > Commercial Airplanes  [USD millions]  FY2021=296,882  FY2020=281,588" in text


@pytest.mark.parametrize(("text", "company", "source"), [
    # the name on a line of its own under the commission file number, no "(Exact name ...)" caption
    ("FORM 10-K\nFor the fiscal year ended December 31, 2019\nCommission file number 1-4423\nZEBRA WIDGET HOLDINGS "
     "INC.\nDelaware\n94-1081436\n(State or other jurisdiction of incorporation)", "ZEBRA WIDGET HOLDINGS INC.",
     "cover:registrant-row"),
    ("FORM 10-K\nFor the fiscal year ended December 31, 2019\nCommission file number 001-34567\nZebra Widget Holdings\n"
     "(State or other jurisdiction)", "Zebra Widget Holdings", "cover:after-file-number"),
])
def test_a_name_under_the_file_number_of_an_unknown_registrant(text, company, source):
    info = parse_pdf_cover(text)
    assert (info.company, info.fiscal_year, info.field_sources["company"]) == (company, 2019, source)
    assert info.review_reasons == ["not in the company map"]


def test_a_statement_broken_over_a_page_keeps_title_unit_and_open_groups():
    """Hand-made: a balance sheet whose "Current assets:" group runs onto the next page (no header there)."""
    from finrag_pipeline.core.ingest.parse import _table_rows
    from finrag_pipeline.core.ingest.tables import RawTable
    from finrag_pipeline.core.models import Page

    pages = [Page("X-2024-10K", 1, "CONSOLIDATED BALANCE SHEETS\n(In millions)\nCurrent assets:\nCash 5 4", "Item 8", None),
             Page("X-2024-10K", 2, "Prepaid expenses 1 1\nTotal current assets 9 7\nGoodwill 2 2", "Item 8", None),
             Page("X-2024-10K", 3, "Other table\nBeginning balance 1 2", "Item 8", None)]
    first = RawTable(1, ["December 31, 2024", "December 31, 2023"],
                     [("Current assets:", ["", ""]), ("Cash", ["5", "4"]), ("Inventories", ["3", "2"])],
                     title="CONSOLIDATED BALANCE SHEETS", unit_text="(In millions)", extra={"indents": [10, 20, 20]})
    second = RawTable(2, ["", ""], [("Prepaid expenses", ["1", "1"]), ("Total current assets", ["9", "7"]),
                                    ("Goodwill", ["2", "2"])], extra={"indents": [20, 20, 10]})
    third = RawTable(3, ["", ""], [("Beginning balance", ["1", "2"])], extra={"indents": [10]})
    rows = {r.row_label: r for r in _table_rows([first, second, third], "X-2024-10K", pages)}
    prepaid = rows["Prepaid expenses"]
    assert (prepaid.table_title, prepaid.unit, prepaid.row_path) == (
        "CONSOLIDATED BALANCE SHEETS", "USD millions", ["Current assets", "Prepaid expenses"])
    assert rows["Goodwill"].row_path == ["Goodwill"]          # back at the group's own indent: outside it
    # after "Goodwill" (not a total) page 3's table has the same columns: it continues, yet its row sits at
    # the top level, so it joins no group
    assert rows["Beginning balance"].row_path == ["Beginning balance"]
