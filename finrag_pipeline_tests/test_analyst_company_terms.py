"""Issue 26, sixth pass: the calculator on lines other 10-Ks print under their own names.

- gross profit for filers that print revenue and cost of sales but no gross-profit row (derived, and said so);
  cost of sales printed only as its kinds (summed); no cost of sales at all (no figure forced);
- a company's own name for an analyst's term (analyst_vocabulary.yaml ``printed_as``: Netflix's "Technology and
  development" is R&D);
- a one-word cost line asked as spending ("How much did FedEx spend on fuel");
- interest expense printed negative is a cost (the lexicon's ``expense`` flag, no special case by name).

The statements below are copied as printed from NETFLIX_2020_10K p.44 (USD thousands), VERIZON_2019_10K p.72 and
FEDEX_2023_10K p.81 (USD millions); the SYNTH filers are made up for a label only, their figures are round.
"""

from __future__ import annotations

from datetime import date

import pytest
from _statement_rows import statement_rows

from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.analyst.store import FactStore, FilingFacts
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.models import FilingMeta
from finrag_pipeline.core.question_kind import classify_question

INCOME = "Consolidated Statements of Operations"


def _meta(fid, company, ticker, fy, end):
    return FilingMeta(fid, "sha", "", f"{fid}.pdf", "pdf", company, ticker, None, "10-K", fy, end)


@pytest.fixture(scope="module")
def calc():
    nflx = statement_rows("NFLX-2020-10K", 44, INCOME, "thousands", (2020, 2019, 2018), [
        ("Revenues", "24,996,056", "20,156,447", "15,794,341"),
        ("Cost of revenues", "15,276,319", "12,440,213", "9,967,538"),
        ("Marketing", "2,228,362", "2,652,462", "2,369,469"),
        ("Technology and development", "1,829,600", "1,545,149", "1,221,814"),
        ("General and administrative", "1,076,486", "914,369", "630,294"),
        ("Operating income", "4,585,289", "2,604,254", "1,605,226"),
        ("Interest expense", "(767,499)", "(626,023)", "(420,493)"),
        ("Income before income taxes", "3,199,349", "2,062,231", "1,226,458"),
        ("Provision for income taxes", "(437,954)", "(195,315)", "(15,216)"),
        ("Net income", "2,761,395", "1,866,916", "1,211,242")])
    nflx += statement_rows("NFLX-2020-10K", 46, "Consolidated Statements of Cash Flows", "thousands", (2020,), [
        ("Net cash provided by (used in) operating activities", "2,427,077"),
        ("Purchases of property and equipment", "(497,923)"), ("Change in other assets", "(7,431)"),
        ("Debt issuance costs", "(7,559)"), ("Proceeds from issuance of common stock", "235,406")])
    vz = statement_rows("VZ-2019-10K", 72, INCOME, "millions", (2019, 2018, 2017), [
        ("Service revenues and other", "110,305", "108,605", "107,145"),
        ("Wireless equipment revenues", "21,563", "22,258", "18,889"),
        ("Total Operating Revenues", "131,868", "130,863", "126,034"),
        ("Cost of services (exclusive of items shown below)", "31,772", "32,185", "30,916"),
        ("Cost of wireless equipment", "22,954", "23,323", "22,147"),
        ("Selling, general and administrative expense", "29,896", "31,083", "28,592"),
        ("Depreciation and amortization expense", "16,682", "17,403", "16,954"),
        ("Total Operating Expenses", "101,490", "108,585", "98,609"),
        ("Operating Income", "30,378", "22,278", "27,425"),
        ("Net Income", "19,788", "16,039", "30,550")])
    fdx = statement_rows("FDX-2023-10K", 81, INCOME, "millions", (2023, 2022, 2021), [
        ("REVENUE", "90,155", "93,512", "83,959"),
        ("Salaries and employee benefits", "31,019", "32,058", "30,173"),
        ("Purchased transportation", "21,790", "24,118", "21,674"),
        ("Rentals and landing fees", "4,738", "4,712", "4,155"),
        ("Depreciation and amortization", "4,176", "3,970", "3,793"),
        ("Fuel", "5,909", "5,115", "2,882"),
        ("Maintenance and repairs", "3,357", "3,372", "3,328"),
        ("Other", "13,828", "13,644", "11,981"),
        ("TOTAL OPERATING EXPENSES", "85,243", "87,267", "78,102"),
        ("OPERATING INCOME", "4,912", "6,245", "5,857"),
        ("Interest expense", "(694)", "(689)", "(793)"),
        ("NET INCOME", "3,972", "3,826", "5,231")])
    # made-up filers, one per company label of the vocabulary's printed_as (round figures)
    pharma = statement_rows("SYNP-2022-10K", 50, INCOME, "millions", (2022, 2021), [
        ("Revenues", "10,000", "9,000"), ("Cost of sales", "4,000", "3,600"), ("Gross profit", "6,000", "5,400"),
        ("Selling, informational and administrative expenses", "2,500", "2,400"),
        ("Research and development expenses", "1,500", "1,400"), ("Operating income", "2,000", "1,600")])
    equip = statement_rows("SYNE-2022-10K", 50, INCOME, "millions", (2022, 2021), [
        ("Net sales", "8,000", "7,000"), ("Cost of products sold", "4,800", "4,300"),
        ("Research, development and engineering", "1,200", "1,100"),
        ("Marketing, selling and administrative", "900", "850"), ("Operating income", "1,100", "750")])
    market = statement_rows("SYNM-2022-10K", 50, INCOME, "millions", (2022, 2021), [
        ("Net revenues", "5,000", "4,000"), ("Cost of net revenues", "1,400", "1,100"),
        ("Sales and marketing", "1,300", "1,200"), ("Product development", "700", "600"),
        ("General and administrative", "500", "450"), ("Operating income", "1,100", "650")])
    # General Mills FY2021: the income statement (p.46) prints no gross margin; the quarterly data (p.91, first
    # quarter columns as parsed under the fiscal years) prints "Gross margin" of a quarter
    quarter = statement_rows("GIS-2021-10K", 91, "In Millions, Except Per", "millions", (2021, 2020), [
        ("Net sales", "4,364.0", "4,002.5"), ("Gross margin", "1,590.4", "1,389.5"),
        ("Net earnings attributable to General Mills", "638.9", "520.6"), ("Basic", "1.04", "0.86"),
        ("Diluted", "1.03", "0.85")])
    for row in quarter[3:]:
        row.unit = "USD per share"   # with its per-share rows the table reads as an income statement, as parsed
    gis = statement_rows("GIS-2021-10K", 46, "Consolidated Statements of Earnings", "millions", (2021, 2020, 2019), [
        ("Net sales", "18,127.0", "17,626.6", "16,865.2"), ("Cost of sales", "11,678.7", "11,496.7", "11,108.4")]) + quarter
    # Apple FY2024: MD&A p.25 "Products and Services Performance" (net sales by category) and the statement's total
    aapl = statement_rows("AAPL-2024-10K", 28, "CONSOLIDATED STATEMENTS OF OPERATIONS", "millions", (2024, 2023), [
        ("Total net sales", "391,035", "383,285"), ("Operating income", "123,216", "114,301")])
    performance = statement_rows("AAPL-2024-10K", 25, "Products and Services Performance", "millions", (2024, 2023), [
        ("iPhone", "201,183", "200,583"), ("Mac", "29,984", "29,357"), ("iPad", "26,694", "28,300"),
        ("Wearables, Home and Accessories", "37,005", "39,845"), ("Services", "96,169", "85,200"),
        ("Total net sales", "391,035", "383,285")])
    for row in performance:
        row.section, row.row_path = "Item 7", ["Products and Services Performance", row.row_label]
    bank = statement_rows("SYNB-2022-10K", 60, INCOME, "millions", (2022, 2021), [
        ("Total net revenue", "12,000", "11,000"), ("Provision for credit losses", "500", "300"),
        ("Total noninterest expense", "7,000", "6,500"), ("Income before income tax expense", "4,500", "4,200")])
    lost = statement_rows("SYNX-2022-10K", 40, "Consolidated Balance Sheets", "millions", (2022, 2021), [
        ("Total current assets", "3,000", "2,800"), ("Total assets", "9,000", "8,500")])
    store = FactStore([
        FilingFacts(_meta("SYNB-2022-10K", "Synthbank Corp.", "SYNB", 2022, date(2022, 12, 31)), bank, []),
        FilingFacts(_meta("SYNX-2022-10K", "Synthparse Inc.", "SYNX", 2022, date(2022, 12, 31)), lost, []),
        FilingFacts(_meta("AAPL-2024-10K", "Apple Inc.", "AAPL", 2024, date(2024, 9, 28)), aapl + performance, []),
        FilingFacts(_meta("GIS-2021-10K", "General Mills, Inc.", "GIS", 2021, date(2021, 5, 30)), gis, []),
        FilingFacts(_meta("NFLX-2020-10K", "Netflix, Inc.", "NFLX", 2020, date(2020, 12, 31)), nflx, []),
        FilingFacts(_meta("VZ-2019-10K", "Verizon Communications Inc.", "VZ", 2019, date(2019, 12, 31)), vz, []),
        FilingFacts(_meta("FDX-2023-10K", "FedEx Corporation", "FDX", 2023, date(2023, 5, 31)), fdx, []),
        FilingFacts(_meta("SYNP-2022-10K", "Synthpharma Inc.", "SYNP", 2022, date(2022, 12, 31)), pharma, []),
        FilingFacts(_meta("SYNE-2022-10K", "Synthequip Corp.", "SYNE", 2022, date(2022, 12, 31)), equip, []),
        FilingFacts(_meta("SYNM-2022-10K", "Synthmarket Inc.", "SYNM", 2022, date(2022, 12, 31)), market, [])])
    return calculator_answerer(store)


# ---- 1. gross profit where no gross-profit row is printed ------------------------------------------------------

@pytest.mark.parametrize("question,start,derived", [
    # Netflix: 24,996,056 - 15,276,319 = 9,719,737; / 24,996,056 = 38.9%
    ("What was Netflix's gross profit in FY2020?", "$9,719,737 thousand", ["gross profit derived as"]),
    ("What was Netflix's gross margin in FY2020?", "38.9%", ["gross profit derived as"]),
    ("What was Netflix's gross profit margin in 2019?", "38.3%", ["gross profit derived as"]),   # 7,716,234 / 20,156,447
    ("What was Netflix's gross margin percentage for fiscal year 2020?", "38.9%", ["gross profit derived as"]),
    # Verizon prints two cost-of lines and no total: 131,868 - 31,772 - 22,954 = 77,142 (58.5% of revenue)
    ("What was Verizon's gross profit in FY2019?", "$77,142 million",
     ["gross profit derived as", 'cost of revenue derived as the sum of "cost of services', '"cost of wireless equipment"']),
    ("What was Verizon's gross margin in FY2019?", "58.5%", ["cost of revenue derived as the sum"]),
    ("What was Verizon's cost of revenue in FY2018?", "$55,508 million", ["cost of revenue derived as the sum"]),
    # a filer that prints its gross profit: the printed row, nothing derived
    ("What was Synthpharma's gross margin in FY2022?", "60.0%", []),
])
def test_gross_profit_is_derived_where_it_is_not_printed(calc, question, start, derived):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text
    for words in derived:
        assert words in r.text
    assert bool(r.details.get("derived")) == bool(derived)
    if derived:   # the derivation is in the plan as `finrag ask --explain` prints it
        assert any("derived as" in n for n in r.details["plan"]["notes"])
    # each line it was derived from is cited
    assert len(r.citations) >= (3 if "Verizon" in question and "cost of revenue" not in question else 2)


def test_a_gross_margin_of_another_table_yields_to_the_statement(calc):
    # the quarterly table's "Gross margin" (1,590.4: 8.8% of the year's sales) is no line of the income statement,
    # which prints net sales and cost of sales: (18,127.0 - 11,678.7) / 18,127.0 = 35.6%
    assert calc.store.filing("GIS-2021-10K").statement_of["GIS-2021-10K:p91:t0"] == "income_statement"
    r = calc.answer("What was General Mills' gross margin in fiscal 2021?", [])
    assert r.text.startswith("35.6%") and "p.91" not in r.text, r.text
    r = calc.answer("Does General Mills have an improving gross margin profile as of fiscal 2021? Use fiscal 2019 to "
                    "fiscal 2021.", [])
    assert r.text.startswith("Yes") and "34.1%" in r.text and "35.6%" in r.text and "8.8%" not in r.text, r.text


def test_a_gross_margin_judgement_uses_the_derived_series(calc):
    # 36.9% (FY2018) -> 38.3% -> 38.9% (FY2020): the last move, +0.6 points, reaches the 0.5-point margin
    r = calc.answer("Does Netflix have an improving gross margin profile as of FY2020?", [])
    assert r.text.startswith("Yes, because") and "36.9%" in r.text and "38.9%" in r.text
    assert "gross profit derived as revenue - cost_of_revenue" in r.text


def test_a_derived_gross_margin_is_said_not_useful_when_the_question_allows_it(calc):
    # the question allows the metric to be unsuitable and the company prints no gross profit: said first, the
    # mechanical figure after (the style of the analysts' reference for Amazon)
    r = calc.answer("What was Netflix's gross margin in FY2020? If gross margin is not a useful metric for a company "
                    "like this, state that and explain why.", [])
    assert r.text.startswith("Gross margin is not a useful metric for Netflix") and "38.9%" in r.text
    r = calc.answer("Does Netflix have an improving gross margin profile as of FY2020? If gross margin is not a useful "
                    "metric for a company like this, state that and explain why.", [])
    assert r.text.startswith("Gross margin is not a useful metric for Netflix") and "Mechanically" in r.text


@pytest.mark.parametrize("question,start", [
    ("What was FedEx's gross margin in FY2023?", "Gross margin is not a useful metric for FedEx"),
    ("What was FedEx's gross profit in FY2023?", "Gross profit is not a useful metric for FedEx"),
    ("Does FedEx have an improving gross margin profile as of FY2023?", "Gross margin percentage is not a useful metric"),
    ("What was Synthbank's gross margin in 2022?", "Gross margin is not a useful metric for Synthbank"),
])
def test_no_cost_of_sales_forces_no_gross_margin(calc, question, start):
    # FedEx reports operating expenses by nature (salaries, purchased transportation, fuel ...), a bank interest and
    # noninterest expense: no cost of sales, so no gross profit is derived; said, naming the line, never a figure
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text
    assert "cost of sales" in r.text and not any(ch.isdigit() for ch in r.text.split("(")[0])
    assert not r.citations


def test_a_lost_income_statement_is_no_verdict_on_the_business(calc):
    # the filing's income statement was not read (no revenue found): an abstention, never "not a useful metric"
    r = calc.answer("What was Synthparse's gross margin in 2022?", [])
    assert r.response_state == "abstained" and "not a useful metric" not in r.text, r.text


def test_no_cost_of_sales_with_the_clause_is_not_a_useful_metric(calc):
    r = calc.answer("What was FedEx's gross margin in FY2023? If gross margin is not a useful metric for a company "
                    "like this, state that and explain why.", [])
    assert r.response_state == "answered" and r.text.startswith("Gross margin is not a useful metric for FedEx")
    assert "%" not in r.text


# ---- 2. a company's own name for an analyst's term -------------------------------------------------------------

@pytest.mark.parametrize("question,start", [
    ("Netflix reports its R&D spending as technology and development. What was its R&D spend as a percentage of "
     "revenues in FY2020? Round to one decimal place.", "7.3%"),                       # 1,829,600 / 24,996,056
    ("How much did Netflix spend on R&D in FY2020?", "$1,829,600 thousand"),
    ("What was Netflix's research and development expense in 2019?", "$1,545,149 thousand"),
    ("What was Netflix's R&D as a percentage of revenue in FY2018?", "7.7%"),          # 1,221,814 / 15,794,341
    ("How much did Synthequip spend on research and development in FY2022?", "$1,200 million"),
    ("What was Synthequip's R&D as a percentage of net sales in FY2022?", "15.0%"),
    ("What was Synthmarket's R&D expense in FY2021?", "$600 million"),                   # "Product development"
    ("What was Synthpharma's SG&A in FY2022?", "$2,500 million"),   # "Selling, informational and administrative"
    ("What was Synthequip's SG&A as a percentage of net sales in FY2022?", "11.3%"),   # 900 / 8,000
    # Netflix's only selling line is "Marketing": its sales and marketing expense
    ("What was Netflix's sales and marketing expense in FY2020?", "$2,228,362 thousand"),
])
def test_a_company_name_for_an_analyst_term(calc, question, start):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text


def test_company_names_live_in_the_vocabulary_and_reach_the_lexicon():
    from pydantic import ValidationError

    from finrag_pipeline.core.analyst.vocabulary import VocabularyTerm, company_labels

    labels = company_labels()
    assert "technology and development" in labels["research_and_development"]
    rnd = Lexicon.load_default().concepts["research_and_development"]
    # the company's own names come after the standard labels (a filer printing both reads the standard one)
    assert rnd.line_items.index("research and development") < rnd.line_items.index("technology and development")
    assert "technology and development" not in Lexicon.load().concepts.get("research_and_development", rnd).aliases
    with pytest.raises(ValidationError):   # company labels name the concept they are lines of
        VocabularyTerm(terms=["r&d"], expansions=["research and development"], printed_as=["product development"])


# ---- 3. a one-word cost line asked as spending -------------------------------------------------------------------

@pytest.mark.parametrize("question,start", [
    ("How much did FedEx spend on fuel in FY2023 (year ended May 31, 2023)? Answer in USD millions.", "$5,909 million"),
    ("What were FedEx's fuel costs in FY2022?", "$5,115 million"),
    ("What was FedEx's fuel expense in FY2021?", "$2,882 million"),
    ("What was FedEx's fuel expense as a percentage of revenue in FY2023?", "6.6%"),     # 5,909 / 90,155
])
def test_a_one_word_cost_line_asked_as_spending(calc, question, start):
    assert classify_question(question).kind == "metric"   # "fuel" is no cause word ("what fueled ..." is)
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text
    assert 'row "Fuel"' in r.text


@pytest.mark.parametrize("question", [
    "How much did FedEx spend on unicorns in FY2023?",     # no such line: nothing read
    "How much did FedEx spend on other in FY2023?",        # a vague one-word row ("Other") is no cost asked
])
def test_a_one_word_line_not_printed_is_no_answer(calc, question):
    r = calc.answer(question, [])
    assert r.response_state != "answered" or "$" not in r.text, r.text


def test_fueled_is_still_a_cause():
    assert classify_question("What fueled FedEx's revenue decline in FY2023?").kind == "qualitative"


# ---- 4. interest expense printed negative is a cost (lexicon flag) -------------------------------------------------

@pytest.mark.parametrize("question,start", [
    ("What is Netflix's FY2020 interest coverage ratio?", "5.97"),   # 4,585,289 / 767,499, printed (767,499)
    ("What is FedEx's FY2023 interest coverage ratio?", "7.08"),     # 4,912 / 694, printed (694)
    ("How much interest expense did FedEx report in FY2022?", "$689 million"),
])
def test_interest_expense_printed_negative_is_a_cost(calc, question, start):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text


# ---- 5. a segment asked is never the total of a table headed by several categories ----------------------------------

@pytest.mark.parametrize("question,start", [
    # (96,169 - 85,200) / 85,200 = 12.9%; the table's "Total net sales" grew 2.0%
    ("By what percentage did Apple's Services net sales grow in fiscal 2024? Round to one decimal place.", "12.9%"),
    ("What were Apple's Services net sales in fiscal 2024?", "$96,169 million"),
    ("What were Apple's iPhone net sales in fiscal 2023?", "$200,583 million"),
])
def test_a_segment_under_a_heading_of_several_categories(calc, question, start):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text
    assert "Total net sales" not in r.text


# ---- 6. "A less B and C": the lines a subtraction lists, each read or named ----------------------------------------

@pytest.mark.parametrize("question,start", [
    # Netflix's own definition (NFLX p.46): 2,427,077 - 497,923 - 7,431 = 1,921,723; the cash-flow rows it subtracts
    # are amounts paid whatever their printed sign
    ("Netflix defines free cash flow as net cash provided by (used in) operating activities less purchases of property "
     "and equipment and change in other assets. Using the cash flow statement, what was Netflix's free cash flow in "
     "FY2020? Answer in USD millions, one decimal place.", "$1,921.7"),
    ("What was Netflix's FY2020 free cash flow, defined as operating cash flow minus capex minus debt issuance costs?",
     "$1,921,595 thousand"),                                          # 2,427,077 - 497,923 - 7,559
])
def test_a_subtraction_lists_its_lines(calc, question, start):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(start), r.text


@pytest.mark.parametrize("question", [
    "What was Netflix's FY2020 operating cash flow less capex and unicorn reserves?",
    "What was Netflix's FY2020 operating cash flow less purchases of property and equipment and unicorn reserves?",
])
def test_a_listed_line_no_row_names_is_never_dropped(calc, question):
    # it was read as capex "qualified" by the rest, the unread line dropped: $1,929,154 thousand
    r = calc.answer(question, [])
    assert r.response_state == "abstained" and "unicorn reserves" in r.text, r.text


@pytest.mark.parametrize("question,expected", [
    # the "and" of the years of an average joins no second line
    ("What was Netflix's return on assets for FY2020, defined as net income divided by the average of total assets at "
     "the FY2019 and FY2020 year ends?", "avg(total_assets)"),
    ("What is the FY2020 ROA, defined as net income over average total assets between FY2019 and FY2020?",
     "avg(total_assets)"),
    # a second line after "and" is a list: capex and another line, each read
    ("What was FY2020 operating cash flow less capex and dividends?", "abs(capital_expenditure) + abs(dividends)"),
])
def test_and_between_years_is_no_list_of_lines(question, expected):
    from finrag_pipeline.core.analyst.plan import make_plan

    assert expected in make_plan(question, [2020], Lexicon.load_default()).formula
