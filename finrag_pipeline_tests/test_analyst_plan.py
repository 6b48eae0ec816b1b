"""Question -> plan (quantity, formula, years, operation, unit, rounding) and exact formula arithmetic."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from finrag_pipeline.core.analyst.definitions import statement_hints, unit_asked
from finrag_pipeline.core.analyst.formula import (
    FormulaError,
    MissingInput,
    calculate,
    evaluate,
    parse_formula,
)
from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.analyst.plan import PlanError, UnreadOperand, definition_formula, make_plan

LEX = Lexicon.load_default()

PLANS = [
    # question, years given, formula, operation, years planned, unit, decimals
    ("What was Microsoft's operating margin in fiscal 2022?", [2022],
     "operating_income / revenue", "value", [2022], "percent", None),
    ("What were Boeing's total revenues in 2021?", [2021], "revenue", "value", [2021], "USD", None),
    ("By what percentage did Amazon's operating income change from 2021 to 2022? Round to the nearest percent.",
     [2022, 2021], "operating_income", "pct_change", [2022, 2021], "percent", 0),
    ("How much did Amazon's operating income change from 2021 to 2022?", [2022, 2021],
     "operating_income", "change", [2022, 2021], "USD", None),
    ("What was Microsoft's revenue growth in fiscal 2022?", [2022], "revenue", "pct_change", [2022, 2021],
     "percent", None),
    ("What was Apple's current ratio in FY2022, to two decimal places?", [2022],
     "total_current_assets / total_current_liabilities", "value", [2022], "ratio", 2),
    ("What was Amazon's average total assets in 2022?", [2022], "avg(total_assets)", "value", [2022], "USD", None),
    ("What were Amazon's days inventory outstanding in 2022?", [2022],
     "365 * avg(inventory) / cost_of_revenue", "value", [2022], "days", None),
    ("What is Apple's FY2022 fixed asset turnover (defined as revenue / average PP&E)?", [2022],
     "revenue / avg(ppe)", "value", [2022], "ratio", None),
    ("What was Apple's R&D as a percentage of revenue in fiscal 2022?", [2022],
     "research_and_development / revenue", "value", [2022], "percent", None),
    ("What were Apple's combined R&D and SG&A expenses in fiscal 2022?", [2022],
     "research_and_development + sga", "value", [2022], "USD", None),
    ("What was Amazon's operating income per share in 2022?", [2022],
     "(operating_income) / diluted_shares", "value", [2022], "USD per share", None),
    ("What was Microsoft's capital expenditure in fiscal 2022?", [2022], "abs(capital_expenditure)", "value",
     [2022], "USD", None),
    ("What were Boeing's total revenues in 2020 and 2021 combined?", [2021, 2020], "revenue", "sum_years",
     [2021, 2020], "USD", None),
    ("Was Apple's total net sales higher in fiscal 2022 or fiscal 2021?", [2022, 2021], "revenue", "max_year",
     [2022, 2021], "USD", None),
    ("In which fiscal year from 2020 to 2022 did Amazon report its lowest operating income?", [2022, 2020],
     "operating_income", "min_year", [2022, 2021, 2020], "USD", None),
    ("What was Apple's effective tax rate in fiscal 2022, rounded to one decimal place?", [2022],
     "income_tax / income_before_taxes", "value", [2022], "percent", 1),
    # "depreciation" alone is its own line, D&A stays D&A
    ("What is Oracle's FY2019 depreciation expense in USD millions?", [2019], "depreciation", "value", [2019], "USD",
     None),
    ("What was Walmart's D&A in FY2021?", [2021], "depreciation_amortization", "value", [2021], "USD", None),
    # the extreme of a growth: the year's change (a rate when one is asked), years with a prior year only
    ("Which year from FY2013 to FY2015 saw the highest revenue growth rate for Boston Properties?", [2015, 2013],
     "change(revenue) / abs(lag(revenue, 1))", "max_year", [2015, 2014], "percent", None),
    ("In which year between FY2017 and FY2019 did Oracle's total revenues grow the most?", [2019, 2017],
     "change(revenue)", "max_year", [2019, 2018], "USD", None),
    ("In which fiscal year did Boston Properties' total revenue grow faster, FY2014 or FY2015?", [2015, 2014],
     "change(revenue) / abs(lag(revenue, 1))", "max_year", [2015, 2014], "percent", None),
    ("Which year between FY2013 and FY2015 had the lowest operating income?", [2015, 2013], "operating_income",
     "min_year", [2015, 2014, 2013], "USD", None),
    # "year over year" with an amount asked is the change in amount; with nothing asked, the percent change
    ("By how much did Walmart's operating income increase year over year in FY2021, in USD millions?", [2021],
     "operating_income", "change", [2021, 2020], "USD", None),
    ("What was Walmart's year-over-year revenue growth in FY2021?", [2021], "revenue", "pct_change", [2021, 2020],
     "percent", None),
    # "net income attributable to Walmart": the company's own name is no segment
    ("What was Walmart's net income attributable to Walmart in FY2021?", [2021], "net_income", "value", [2021], "USD",
     None),
    # "average" asked over a range wins over the "total" of a line's name (the sum rule is for "total D&A")
    ("What is the FY2019 - FY2021 average of Walmart's total revenues?", [2021, 2019], "revenue", "average_years",
     [2021, 2020, 2019], "USD", None),
    ("What is the FY2019 - FY2021 total D&A for Walmart?", [2021, 2019], "depreciation_amortization", "sum_years",
     [2021, 2020, 2019], "USD", None),
]


@pytest.mark.parametrize("question,years,formula,operation,planned,unit,decimals", PLANS)
def test_make_plan(question, years, formula, operation, planned, unit, decimals):
    plan = make_plan(question, years, LEX)
    assert (plan.formula, plan.operation, plan.years, plan.unit, plan.decimals) == (
        formula, operation, planned, unit, decimals)


def test_plan_error_names_what_it_could_not_read():
    with pytest.raises(PlanError, match="no line item"):
        make_plan("Who audits the company?", [2022], LEX)
    with pytest.raises(PlanError, match="'goodwill amortization'"):
        definition_formula("revenue / goodwill amortization", LEX)


def test_definition_words_and_numbers():
    assert definition_formula("cost of sales divided by average inventory", LEX) == "cost_of_revenue / avg(inventory)"
    assert definition_formula("365 times average accounts receivable over revenue", LEX) == \
        "365 * avg(accounts_receivable) / revenue"
    # "gross margin" inside a definition is the statement line (gross profit), not the ratio
    assert definition_formula("gross margin / net sales", LEX) == "gross_profit / revenue"


def test_formula_exact_decimals_and_average_of_two_dates():
    values = {("inventory", 2022): Decimal(34405), ("inventory", 2021): Decimal(32640),
              ("cost_of_revenue", 2022): Decimal(288831)}
    f = parse_formula("365 * avg(inventory) / cost_of_revenue")
    got = evaluate(f, 2022, lambda n, y: values[(n, y)])
    assert got == Decimal(365) * Decimal(33522.5) / Decimal(288831)
    assert str(got)[:8] == "42.36287"  # 365 x 33,522.5 / 288,831
    with pytest.raises(MissingInput) as exc:
        evaluate(f, 2023, lambda n, y: (_ for _ in ()).throw(MissingInput(n, y)))
    assert (exc.value.name, exc.value.fiscal_year) == ("inventory", 2023)


def test_calculate_is_exact_and_refuses_code():
    assert calculate("(12248 - 24879) / 24879 * 100").quantize(Decimal("0.0001")) == Decimal("-50.7697")
    assert calculate("0.1 + 0.2") == Decimal("0.3")
    for bad in ("__import__('os').system('x')", "revenue / 2", "1 / 0", "2 ** 10", "[1, 2]"):
        with pytest.raises(FormulaError):
            calculate(bad)


def test_lexicon_formulas_use_only_known_line_items():
    for concept in LEX.concepts.values():
        if concept.formula:
            names = parse_formula(concept.formula).names
            assert names, concept.key
            for name in names:
                assert name in LEX.concepts and not LEX.concepts[name].formula, (concept.key, name)
        else:
            assert concept.statement in ("income_statement", "balance_sheet", "cash_flow"), concept.key
            assert concept.line_items, concept.key
        for name in parse_formula(concept.fallback).names if concept.fallback else []:
            assert name in LEX.concepts and not LEX.concepts[name].formula, (concept.key, name)
        # a flow list split on a comma leaves a fragment ("net", "property"): never a label of its own
        assert not {"net", "property", "selling", "plant and equipment"} & set(concept.line_items + concept.aliases)


def test_lexicon_rejects_unknown_fields_and_statements(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("concepts:\n  x:\n    aliases: [x]\n    statment: balance_sheet\n")
    with pytest.raises(ValueError, match="unknown fields"):
        Lexicon.load(bad)
    bad.write_text("concepts:\n  x:\n    aliases: [x]\n    statement: notes\n")
    with pytest.raises(ValueError, match="statement"):
        Lexicon.load(bad)


# ---- definitions, arithmetic and statement hints written in the question (issue 26) ------------------
# Real analysts' phrasings (FinanceBench-style questions, the project's analysts' set) and our own
# variants; each with the plan it must produce: formula over lexicon keys, unit, decimals, statements.

WRITTEN = [
    # question, years, formula, unit, decimals, statements
    ("DPO is defined as 365 * (average accounts payable between FY2016 and FY2017) / (FY2017 COGS + change in "
     "inventory). What is Costco's FY2017 DPO? Round to two decimals.", [2017, 2016],
     "365 * (avg(accounts_payable)) / (cost_of_revenue + change(inventory))", "days", 2, []),
    ("Calculate inventory turnover ratio for FY2019 for Best Buy.", [2019],
     "cost_of_revenue / avg(inventory)", "ratio", None, []),
    ("Year end FY2019 total amount of inventories for Best Buy? Answer in USD millions. Base your judgement on the "
     "information provided primarily in the balance sheet.", [2019], "inventory", "USD", None, ["balance_sheet"]),
    ("What is Verizon's FY2021 unadjusted EBITDA less capex? Answer in USD millions.", [2021],
     "(operating_income + depreciation_amortization) - abs(capital_expenditure)", "USD", None, []),
    ("What is the FY2017 - FY2019 3 year average of capex as a % of revenue for Activision Blizzard? Answer in units "
     "of percents and round to one decimal place.", [2019, 2017],
     "mean(abs(capital_expenditure) / revenue, 3)", "percent", 1, []),
    ("Using the income statement, what was Apple's operating margin for fiscal 2022? Define operating margin as "
     "operating income divided by total revenue, in percent to one decimal.", [2022],
     "operating_income / revenue", "percent", 1, ["income_statement"]),
    ("What was Apple's fixed asset turnover in fiscal 2022, defined as FY2022 revenue divided by the average of net "
     "PP&E at the end of FY2021 and FY2022? Round to two decimals.", [2022], "revenue / avg(ppe)", "ratio", 2, []),
    ("How capital-intensive was Apple in fiscal 2022: capex as a percentage of revenue (capex = cash paid for PP&E "
     "in the cash flow statement)?", [2022], "abs(capital_expenditure) / revenue", "percent", None, ["cash_flow"]),
    ("What was Apple's free cash flow in fiscal 2022, computed as operating cash flow minus capex, in USD millions?",
     [2022], "operating_cash_flow - abs(capital_expenditure)", "USD", None, []),
    ("What was Apple's effective tax rate in fiscal 2024, i.e. income tax expense divided by pre-tax income?", [2024],
     "income_tax / income_before_taxes", "percent", None, []),
    ("What was Apple's current ratio at the end of fiscal 2024 (current assets / current liabilities)?", [2024],
     "total_current_assets / total_current_liabilities", "ratio", None, []),
    ("What were Microsoft's days sales outstanding at the end of fiscal 2022, defined as year-end receivables / "
     "FY2022 revenue x 365?", [2022], "accounts_receivable / revenue * 365", "days", None, []),
    ("What share of its fiscal 2022 revenue did Microsoft spend on capex (cash additions to PP&E)?", [2022],
     "abs(capital_expenditure) / revenue", "percent", None, []),
    ("What was Amazon's 2024 free cash flow if you define it as operating cash flow minus gross capex from the cash "
     "flow statement?", [2024], "operating_cash_flow - abs(capital_expenditure)", "USD", None, ["cash_flow"]),
    ("What was Amazon's SG&A in 2022, counting SG&A as sales and marketing plus general and administrative expense?",
     [2022], "sales_and_marketing + general_and_administrative", "USD", None, []),
    ("What was Apple's EBIT margin in fiscal 2024, taking EBIT as operating income and dividing by the top line?",
     [2024], "operating_income / revenue", "percent", None, []),
    ("What was Boeing's operating margin in 2021 (loss from operations / total revenue)?", [2021],
     "operating_income / revenue", "percent", None, []),
    ("What was NVIDIA's gross margin in fiscal 2025, computed as gross profit over revenue?", [2025],
     "gross_profit / revenue", "percent", None, []),
    ("What was Microsoft's operating margin in fiscal 2022 (operating income as a share of revenue)?", [2022],
     "operating_income / revenue", "percent", None, []),
    # our own variants of the same constructions
    ("Define return on assets as net income over average total assets. What was Microsoft's ROA in FY2022?", [2022],
     "net_income / avg(total_assets)", "percent", None, []),
    ("Based on the cash flow statement, what was Amazon's capex in 2022 as a percentage of total net sales?", [2022],
     "abs(capital_expenditure) / revenue", "percent", None, ["cash_flow"]),
    ("Calculate Apple's FY2022 cash conversion using operating cash flow divided by net income, expressed as a "
     "multiple.", [2022], "operating_cash_flow / net_income", "ratio", None, []),
    ("What is Amazon's FY2022 operating income plus D&A? Answer in USD billions.", [2022],
     "operating_income + depreciation_amortization", "USD", None, []),
    ("Days inventory outstanding is calculated as average inventory divided by COGS, times 365. What was Apple's DIO "
     "in FY2022?", [2022], "avg(inventory) / cost_of_revenue * 365", "days", None, []),
    ("What is Apple's FY2022 R&D as a % of revenue?", [2022], "research_and_development / revenue", "percent",
     None, []),
    ("What was Microsoft's FY2022 net income minus dividends paid, per the cash flow statement?", [2022],
     "net_income - abs(dividends)", "USD", None, ["cash_flow"]),
    ("Using the balance sheet, what is Boeing's working capital at year end 2021, defined as current assets less "
     "current liabilities?", [2021], "total_current_assets - total_current_liabilities", "USD", None,
     ["balance_sheet"]),
    ("What is Apple's FY2022 debt to assets, calculated as long-term debt divided by total assets? Round to two "
     "decimal places.", [2022], "long_term_debt / total_assets", "ratio", 2, []),
    ("Inventory turnover is defined as FY2022 cost of sales divided by the average of FY2021 and FY2022 inventories. "
     "What was Amazon's?", [2022], "cost_of_revenue / avg(inventory)", "ratio", None, []),
    ("What was Apple's FY2022 capex relative to prior year capex, i.e. FY2022 capex divided by FY2021 capex?", [2022],
     "abs(capital_expenditure) / lag(abs(capital_expenditure), 1)", "ratio", None, []),
    ("What is the 3-year average of Microsoft's operating cash flow from FY2020 to FY2022, in USD millions?",
     [2022, 2020], "mean(operating_cash_flow, 3)", "USD", None, []),
    ("What was Amazon's FY2022 gross profit, defined as net sales less cost of sales, from the statement of "
     "operations?", [2022], "revenue - cost_of_revenue", "USD", None, ["income_statement"]),
    ("What is Boeing's FY2021 interest coverage, calculated as operating income / interest expense, in times?",
     [2021], "operating_income / interest_expense", "ratio", None, []),
]


# our own, in the style of public FinanceBench questions: instructions around the question, "defined as:",
# "% margin", several definitions that use each other, unit parentheses
WRITTEN += [
    ("What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response to the question by "
     "relying on the details shown in the cash flow statement.", [2018], "abs(capital_expenditure)", "USD", None,
     ["cash_flow"]),
    ("Assume that you are a public equities analyst. Answer the following question by primarily using information "
     "that is shown in the balance sheet: what is the year end FY2018 net PPNE for 3M? Answer in USD billions.",
     [2018], "ppe", "USD", None, ["balance_sheet"]),
    ("What is Adobe's FY2015 operating cash flow ratio? Operating cash flow ratio is defined as: cash from operations "
     "/ total current liabilities. Round your answer to two decimal places.", [2015],
     "operating_cash_flow / total_current_liabilities", "ratio", 2, []),
    ("What is the FY2019 fixed asset turnover ratio for Activision Blizzard? Fixed asset turnover ratio is defined "
     "as: FY2019 revenue / (average PP&E between FY2018 and FY2019). Round your answer to two decimal places. Base "
     "your judgement on information provided primarily in the statement of income and the statement of financial "
     "position.", [2019, 2018], "revenue / (avg(ppe))", "ratio", 2, ["income_statement", "balance_sheet"]),
    ("What is the FY2021 unadjusted operating income % margin for AMD? Calculate what was asked by utilizing the "
     "line items clearly shown in the income statement.", [2021], "operating_income / revenue", "percent", None,
     ["income_statement"]),
    ("What is the FY2018 - FY2020 3 year average unadjusted EBITDA % margin for Lockheed Martin? Define unadjusted "
     "EBITDA as unadjusted operating income + depreciation and amortization from the cash flow statement. Answer in "
     "units of percents and round to one decimal place.", [2020, 2018],
     "mean((operating_income + depreciation_amortization) / revenue, 3)", "percent", 1, ["cash_flow"]),
    ("What is the FY2019 cash conversion cycle (CCC) for General Mills? CCC is defined as: DIO + DSO - DPO. DIO is "
     "defined as: 365 * (average inventory between FY2018 and FY2019) / (FY2019 COGS). DSO is defined as: 365 * "
     "(average accounts receivable between FY2018 and FY2019) / (FY2019 Revenue). DPO is defined as: 365 * (average "
     "accounts payable between FY2018 and FY2019) / (FY2019 COGS + change in inventory between FY2018 and FY2019). "
     "Round your answer to two decimal places.", [2019, 2018],
     "(365 * (avg(inventory)) / (cost_of_revenue)) + (365 * (avg(accounts_receivable)) / (revenue)) - "
     "(365 * (avg(accounts_payable)) / (cost_of_revenue + change(inventory)))", "days", 2, []),
    ("What is the quick ratio for Apple in FY2022? Quick ratio = (cash + short-term investments + receivables) / "
     "current liabilities", [2022], "(cash + short_term_investments + accounts_receivable) / total_current_liabilities",
     "ratio", None, []),
    ("Calculate the FY2019 days sales outstanding (DSO) using the formula 365 * average accounts receivable / revenue",
     [2019], "365 * avg(accounts_receivable) / revenue", "days", None, []),
    ("What is Amcor's year end FY2020 net AR (in USD millions)? Address the question by adopting the perspective of "
     "a financial analyst who can only use the details shown within the balance sheet.", [2020],
     "accounts_receivable", "USD", None, ["balance_sheet"]),
    ("Using the cash flow statement, answer the following question to the best of your abilities: how much did "
     "Kraft Heinz pay out in cash dividends in FY2021? Answer in USD millions.", [2021], "abs(dividends)", "USD",
     None, ["cash_flow"]),
    ("What is the FY2016 COGS % margin for Nike? Calculate what was asked by utilizing the line items clearly shown "
     "in the P&L statement.", [2016], "cost_of_revenue / revenue", "percent", None, ["income_statement"]),
    # a "... ratio" written as A / B with no percent word is the ratio as written; with one, the percent
    ("What is Oracle's FY2019 dividend payout ratio, defined as cash dividends paid / net income? Round to two "
     "decimal places.", [2019], "abs(dividends) / net_income", "ratio", 2, []),
    ("What is Oracle's FY2019 dividend payout ratio, defined as cash dividends paid / net income, as a percentage?",
     [2019], "abs(dividends) / net_income", "percent", None, []),
    ("What is Walmart's FY2021 interest coverage ratio? Interest coverage ratio is defined as operating income / net "
     "interest expense. Round to two decimal places.", [2021], "operating_income / net_interest_expense", "ratio", 2, []),
    # a lead clause's definition ends where the question begins (", does it have ...")
    ("Taking its quick ratio as cash and cash equivalents divided by total current liabilities, does Foot Locker have a "
     "quick ratio above 1.0 at the end of fiscal 2021?", [2021], "cash / total_current_liabilities", "ratio", None, []),
    ("Treating the current ratio as current assets over current liabilities, was Boeing's current ratio below 1.5 in "
     "2021?", [2021], "total_current_assets / total_current_liabilities", "ratio", None, []),
]


@pytest.mark.parametrize("question,years,formula,unit,decimals,statements", WRITTEN,
                         ids=[f"written{i:02d}" for i in range(len(WRITTEN))])
def test_written_formula_is_the_plan(question, years, formula, unit, decimals, statements):
    plan = make_plan(question, years, LEX)
    assert (plan.formula, plan.unit, plan.decimals, plan.statements) == (formula, unit, decimals, statements)
    assert plan.operation == "value" and plan.years == years[:1]


def test_at_least_thirty_written_phrasings():
    assert len(WRITTEN) >= 30


@pytest.mark.parametrize("question,operand", [
    ("What is Apple's FY2022 tangible asset turnover, defined as revenue / (total assets less deferred tax assets)?",
     "deferred tax assets"),
    ("Define revenue per employee as total revenue divided by headcount. What was Microsoft's in FY2022?",
     "headcount"),
    ("What is Amazon's 2022 operating income less stock-based compensation?", "stock-based compensation"),
])
def test_an_operand_no_line_item_names_is_named(question, operand):
    with pytest.raises(UnreadOperand) as exc:
        make_plan(question, [2022], LEX)
    assert exc.value.operand == operand


@pytest.mark.parametrize("question", [
    "Why did Apple's tax rate jump in fiscal 2024?",
    "What drove the increase in Microsoft's R&D spending in fiscal 2022?",
    "Which of Amazon's segments was profitable in 2022, and which ones lost money?",
    "Which NVIDIA segment saw operating income fall in fiscal 2025?",
])
def test_why_and_which_questions_are_no_figure(question):
    with pytest.raises(PlanError):
        make_plan(question, [2022], LEX)


@pytest.mark.parametrize("question,years,formula", [
    ("What is the 2-year revenue CAGR from FY2019 to FY2021 for Block? Answer in units of percents.", [2021, 2019],
     "cagr(revenue, 2)"),
    ("What is Microsoft's compound annual growth rate of net income between FY2020 and FY2022?", [2022, 2020],
     "cagr(net_income, 2)"),
    ("What is the three-year CAGR of Apple's operating income through FY2022?", [2022], "cagr(operating_income, 3)"),
])
def test_cagr(question, years, formula):
    plan = make_plan(question, years, LEX)
    assert (plan.formula, plan.unit, plan.years) == (formula, "percent", years[:1])
    got = evaluate(parse_formula("cagr(x, 2)"), 2022, lambda n, y: {2022: Decimal(121), 2020: Decimal(100)}[y])
    assert got == Decimal("0.1")  # (121 / 100) ** (1/2) - 1


def test_a_change_asked_in_percents_is_a_percent_change():
    plan = make_plan("What is the change in Apple's revenue from FY2021 to FY2022? Answer in units of percents and "
                     "round to one decimal place.", [2022, 2021], LEX)
    assert (plan.formula, plan.operation, plan.unit, plan.decimals) == ("revenue", "pct_change", "percent", 1)
    plan = make_plan("What is the change in Apple's revenue from FY2021 to FY2022?", [2022, 2021], LEX)
    assert (plan.operation, plan.unit) == ("change", "USD")


@pytest.mark.parametrize("question", [
    "How much total other comprehensive income/(loss) did Apple report for fiscal 2020?",
    "What was Apple's (provision)/benefit for income taxes in fiscal 2022?",
])
def test_a_slash_inside_a_label_is_no_division(question):
    try:
        plan = make_plan(question, [2022], LEX)
    except UnreadOperand as exc:  # pragma: no cover - the failure this test guards against
        raise AssertionError(f"read as arithmetic: {exc}") from exc
    except PlanError:
        return  # no lexicon line: the calculator looks for the printed row instead
    assert "/" not in plan.formula


@pytest.mark.parametrize("question,years,operation,planned", [
    ("What is the FY2020 - FY2022 average of operating margin for Apple?", [2022, 2020], "average_years",
     [2022, 2021, 2020]),
    ("What was Apple's total revenue from FY2020 to FY2022 combined?", [2022, 2020], "sum_years", [2022, 2021, 2020]),
    ("What was Apple's average revenue in FY2020 and FY2022?", [2022, 2020], "average_years", [2022, 2020]),
])
def test_a_range_of_years_covers_the_years_between(question, years, operation, planned):
    plan = make_plan(question, years, LEX)
    assert (plan.operation, plan.years) == (operation, planned)


def test_growth_verbs_are_no_segment():
    plan = make_plan("By what percentage did Microsoft's net income grow in FY2022 compared with FY2021?",
                     [2022, 2021], LEX)
    assert (plan.formula, plan.operation, plan.years) == ("net_income", "pct_change", [2022, 2021])
    assert plan.qualifier in (None, "microsoft")  # the company's name is removed per filing by the calculator


def test_statement_hints_and_units_asked():
    assert statement_hints("Base your judgement primarily on the balance sheet and the P&L") == [
        "balance_sheet", "income_statement"]
    assert statement_hints("according to the consolidated statements of cash flows") == ["cash_flow"]
    assert statement_hints("What was Apple's revenue in 2022?") == []
    assert unit_asked("Give the answer as a percentage") == "percent"
    assert unit_asked("capex as a percentage of revenue") is None  # an operator, not the unit asked
    assert unit_asked("Answer in times") == "ratio"


def test_formula_functions_change_lag_mean():
    values = {("x", 2022): Decimal(10), ("x", 2021): Decimal(4), ("x", 2020): Decimal(1)}
    at = lambda n, y: values[(n, y)]  # noqa: E731
    assert evaluate(parse_formula("change(x)"), 2022, at) == Decimal(6)
    assert evaluate(parse_formula("lag(x, 2)"), 2022, at) == Decimal(1)
    assert evaluate(parse_formula("mean(x, 3)"), 2022, at) == Decimal(5)
    for bad in ("mean(x)", "lag(x, y)", "lag(x, -1)", "change(x, 1)"):
        with pytest.raises(FormulaError):
            parse_formula(bad)


def test_query_expansions_is_the_shared_vocabulary():
    from finrag_pipeline.core.analyst.vocabulary import query_expansions

    assert query_expansions("How much did Microsoft spend on R&D in fiscal 2022?") == ["research and development"]
    assert "accounts payable" in query_expansions("What was Costco's DPO in FY2017?")
    assert query_expansions("What was research and development in 2022?") == []


@pytest.mark.parametrize("phrase,not_this", [
    ("non-operating income", "operating_income"),
    ("non-current term debt", "long_term_debt"),   # read per filing (the row after current liabilities)
    ("nonoperating income", "operating_income"),
])
def test_non_changes_the_line(phrase, not_this):
    # "non-operating income" is no "operating income": "non" changes which line it is
    from finrag_pipeline.core.analyst.definitions import resolve_operand

    concept = resolve_operand(phrase, LEX)
    assert concept is None or concept.key != not_this


@pytest.mark.parametrize("written,formula", [
    ("current and non-current term debt", "(current term debt + non-current term debt)"),
    ("current and long-term debt", "(current debt + non-current debt)"),
])
def test_current_and_noncurrent_reads_both_lines(written, formula):
    # the operands are no lexicon line: the error names the first one, read per filing as a row label
    with pytest.raises(UnreadOperand) as exc:
        definition_formula(f"commercial paper plus {written}", LEX)
    assert exc.value.operand in ("commercial paper", formula[1:].split(" + ")[0])


@pytest.mark.parametrize("question,first,second,slower", [
    ("Did Apple's Services business grow faster than its Products business in FY2021?", "Services", "Products", False),
    ("Has Microsoft's Intelligent Cloud revenue increased faster than its Productivity and Business Processes revenue "
     "in FY2022?", "Intelligent Cloud", "Productivity and Business Processes", False),
    ("Did Amazon's International segment sales grow more slowly than AWS in 2022?", "International", "AWS", True),
    ("Did Amazon's net sales grow faster than its operating income in 2022?", "net sales", "operating income", False),
    ("Did the Data Center segment's revenue rise more quickly than the Gaming segment's revenue in fiscal 2025?",
     "Data Center", "Gaming", False),
])
def test_growth_comparison_reads_both_options(question, first, second, slower):
    from finrag_pipeline.core.analyst.judgements import growth_comparison

    got = growth_comparison(question)
    assert (got.first, got.second, got.slower) == (first, second, slower)


def test_growth_comparison_needs_a_yes_no_question():
    from finrag_pipeline.core.analyst.judgements import growth_comparison

    assert growth_comparison("Which segment grew faster than the company average in 2022?") is None
    assert growth_comparison("What was Apple's revenue growth in FY2022?") is None


@pytest.mark.parametrize("question,whole,part", [
    ("What percentage of Apple's total net sales came from iPhone in FY2022?", "Apple's total net sales", "iPhone"),
    ("What share of Amazon's 2022 net sales was generated by AWS?", "Amazon's 2022 net sales", "AWS"),
    ("What proportion of Microsoft's FY2022 revenue came from the Intelligent Cloud segment?",
     "Microsoft's FY2022 revenue", "Intelligent Cloud"),
    ("Which portion of NVIDIA's fiscal 2025 revenue was attributable to Data Center?", "NVIDIA's fiscal 2025 revenue",
     "Data Center"),
])
def test_share_of_whole_reads_part_and_whole(question, whole, part):
    from finrag_pipeline.core.analyst.judgements import share_of_whole

    got = share_of_whole(question)
    assert (got.whole, got.part) == (whole, part)


def test_share_of_whole_is_not_a_ratio_of_two_lines():
    from finrag_pipeline.core.analyst.judgements import share_of_whole

    assert share_of_whole("What was Amazon's cost of sales as a percentage of total net sales in 2022?") is None
    got = share_of_whole("What was NVIDIA's Data Center revenue as a share of total revenue in fiscal 2025?")
    assert (got.part, got.whole) == ("Data Center", "total revenue")

    # "What share of its revenue did Microsoft spend on capex": a ratio of two lines (the plan reads it)
    assert share_of_whole("What share of its revenue did Microsoft spend on capex in FY2022?") is None


@pytest.mark.parametrize("question,quantity", [
    # the answer names what was asked before ", defined as ...", not the first lexicon word ("cash")
    ("Using the cash flow statement, what was Apple's FY2024 free cash flow conversion, defined as (cash generated by "
     "operating activities - payments for acquisition of property, plant and equipment) / net income?",
     "free cash flow conversion"),
    ("What was Amazon's 2024 free cash flow if you define it as operating cash flow minus gross capex?", "free cash flow"),
])
def test_quantity_named_before_its_definition(question, quantity):
    assert make_plan(question, [2024], LEX).quantity == quantity


# ---- phrasing classes of real analysts' questions over other 10-Ks (issue 26, second pass) ----------------------
# Each class written in a FinanceBench style by us (company names of filings outside the demo), with the plan it
# must produce: formula over lexicon keys, operation, years planned, unit, decimals, statements hinted.

CLASSES = [
    # arithmetic said with a verb: "by dividing A by B", "by subtracting B from A", "by adding B to A"
    ("What is Costco's FY2020 operating margin? Calculate the operating margin by dividing operating income by total "
     "revenue. Round to one decimal place.", [2020],
     "operating_income / revenue", "value", [2020], "percent", 1, []),
    ("Compute free cash flow by subtracting capital expenditures from cash from operations. What was Intel's FY2020 "
     "free cash flow? Answer in USD millions.", [2020],
     "operating_cash_flow - abs(capital_expenditure)", "value", [2020], "USD", None, []),
    ("What is Nike's FY2020 EBITDA, calculated by adding depreciation to operating income?", [2020],
     "operating_income + depreciation", "value", [2020], "USD", None, []),
    ("What is Walmart's FY2021 leverage, defined as the ratio of total liabilities to shareholders' equity?", [2021],
     "total_liabilities / shareholders_equity", "value", [2021], "ratio", None, []),
    # the inputs of a named metric listed without arithmetic: the metric's formula over them
    ("What is the FY2019 unadjusted EBITDA for Costco? Calculate unadjusted EBITDA using unadjusted operating income "
     "and D&A (from cash flow statement). Answer in USD millions.", [2019],
     "operating_income + depreciation_amortization", "value", [2019], "USD", None, ["cash_flow"]),
    ("Using the P&L statement, what is Intel's FY2020 unadjusted EBITDA % margin? Calculate unadjusted EBITDA using "
     "unadjusted operating income and D&A (from cash flow statement).", [2020],
     "(operating_income + depreciation_amortization) / revenue", "value", [2020], "percent", None,
     ["income_statement", "cash_flow"]),
    # an amount over a range of years, "total": their sum
    ("What is the FY2019 - FY2020 total D&A (from the cash flow statement) for Costco? Answer in USD millions.",
     [2020, 2019], "depreciation_amortization", "sum_years", [2020, 2019], "USD", None, ["cash_flow"]),
    # metrics of the formula table that other 10-K questions name without defining them
    ("We want to calculate a financial metric. Please help us compute it by basing your answers off of the cash flow "
     "statement and the balance sheet. Here's the question: what is the FY2020 operating cash flow ratio for Intel?",
     [2020], "operating_cash_flow / total_current_liabilities", "value", [2020], "ratio", None,
     ["cash_flow", "balance_sheet"]),
    ("What is Adobe's FY2022 free cashflow conversion? Round to the nearest percent.", [2022],
     "(operating_cash_flow - abs(capital_expenditure)) / net_income", "value", [2022], "percent", 0, []),
    ("What was Microsoft's total debt at the end of FY2022? Answer in USD millions.", [2022],
     "total_debt", "value", [2022], "USD", None, []),
    # "(as a %)" and a 3 year average of a named metric
    ("What is the FY2018 - FY2020 3 year average net profit margin (as a %) for Nike? Answer in units of percents and "
     "round to one decimal place.", [2020, 2018], "mean((net_income / revenue), 3)", "value", [2020], "percent", 1, []),
    # a lead-in sentence, two statements named with "within" and "and the statement of", "(D&A ...) % margin"
    ("Answer the following question as if you are an equity research analyst and have lost internet connection so you "
     "do not have access to financial metric providers. According to the details clearly outlined within the P&L "
     "statement and the statement of cash flows, what is the FY2015 depreciation and amortization (D&A from cash flow "
     "statement) % margin for AMD?", [2015], "depreciation_amortization / revenue", "value", [2015], "percent", None,
     ["income_statement", "cash_flow"]),
    # an abbreviation of the balance sheet ("net AR", "PPNE"), the scale asked in a parenthesis
    ("What is Amcor's year end FY2020 net AR (in USD millions)? Address the question by adopting the perspective of a "
     "financial analyst who can only use the details shown within the balance sheet.", [2020],
     "accounts_receivable", "value", [2020], "USD", None, ["balance_sheet"]),
    # "year-over-year change ... in units of percents": a percent change
    ("What is Costco's year-over-year change in unadjusted operating income from FY2019 to FY2020 (in units of "
     "percents and round to one decimal place)? Give a solution to the question by using the income statement.",
     [2020, 2019], "operating_income", "pct_change", [2020, 2019], "percent", 1, ["income_statement"]),
    # the change of a written ratio ("change in EBITDA % margin"): the ratio changes, in percentage points
    ("What is the FY2019 - FY2020 change in Costco's unadjusted EBITDA % margin? Use unadjusted operating income and "
     "D&A from the cash flow statement.", [2020, 2019], "(operating_income + depreciation_amortization) / revenue",
     "change", [2020, 2019], "percentage points", None, ["cash_flow"]),
    # an instruction sentence after the question names no segment ("Use unadjusted operating income.")
    ("What is Intel's FY2020 unadjusted EBIT margin? Use unadjusted operating income.", [2020],
     "operating_income / revenue", "value", [2020], "percent", None, []),
    # "A / B ratio": the word "ratio" after the written arithmetic is no operand
    ("What is the FY2022 cash from operations / net income ratio for Apple? Round to two decimal places.", [2022],
     "operating_cash_flow / net_income", "value", [2022], "ratio", 2, []),
    # metrics analysts name without defining them
    ("What is Intel's FY2020 free cash flow margin? Round to one decimal place.", [2020],
     "(operating_cash_flow - abs(capital_expenditure)) / revenue", "value", [2020], "percent", 1, []),
    ("What is Boeing's FY2021 total debt to EBITDA?", [2021],
     "total_debt / (operating_income + depreciation_amortization)", "value", [2021], "ratio", None, []),
    ("What was Apple's FY2022 net interest expense? Answer in USD millions.", [2022], "net_interest_expense", "value",
     [2022], "USD", None, []),
    # the owners named after a line are the company's own: no segment
    ("What is Costco's FY2020 net income attributable to shareholders? Answer in USD millions.", [2020],
     "net_income", "value", [2020], "USD", None, []),
    # "basing your answers off of the cash flow statement"
    ("Basing your answer off of the cash flow statement, how much did Apple return to shareholders in FY2022?",
     [2022], "abs(dividends) + abs(share_repurchases)", "value", [2022], "USD", None, ["cash_flow"]),
    # dividends "using total cash dividends paid and net income attributable to shareholders" (a parenthesis of words)
    ("What is the FY2020 dividend payout ratio (using total cash dividends paid and net income attributable to "
     "shareholders) for Costco? Round answer to two decimal places.", [2020],
     "abs(dividends) / net_income", "value", [2020], "percent", 2, []),
]


@pytest.mark.parametrize("question,years,formula,operation,planned,unit,decimals,statements", CLASSES,
                         ids=[f"class{i:02d}" for i in range(len(CLASSES))])
def test_phrasing_classes_of_other_10ks(question, years, formula, operation, planned, unit, decimals, statements):
    plan = make_plan(question, years, LEX)
    assert (plan.formula, plan.operation, plan.years, plan.unit, plan.decimals, plan.statements) == (
        formula, operation, planned, unit, decimals, statements)


@pytest.mark.parametrize("label,concept", [
    # statement labels of other 10-Ks that name a lexicon line (assets_config/lexicon.yaml line_items)
    ("Merchandise costs", "cost_of_revenue"), ("Cost of products sold", "cost_of_revenue"),
    ("Net operating revenues", "revenue"), ("Total operating revenues", "revenue"),
    ("Additions to property, plant and equipment", "capital_expenditure"), ("Capital expenditures", "capital_expenditure"),
    ("Purchases of land, buildings and equipment", "capital_expenditure"),
    ("Net property and equipment", "ppe"), ("Merchandise inventories", "inventory"), ("Receivables, net", "accounts_receivable"),
    ("Cash dividends paid", "dividends"), ("Current portion of long-term debt", "short_term_debt"),
    ("Common stock dividends", "dividends"), ("Treasury stock purchases", "share_repurchases"),
    ("Treasury stock acquired", "share_repurchases"), ("Purchases of common stock", "share_repurchases"),
    ("Interest paid", "interest_paid"), ("Cash paid for interest, net of amounts capitalized", "interest_paid"),
    ("Income taxes paid, net of refunds", "income_taxes_paid"), ("Cash paid for income taxes", "income_taxes_paid"),
])
def test_labels_of_other_10ks_are_lexicon_lines(label, concept):
    from finrag_pipeline.core.analyst.labels import normalize_label

    c = LEX.concepts[concept]
    assert normalize_label(label) in {normalize_label(x) for x in c.line_items}


def test_d_and_a_printed_as_two_lines_is_their_sum():
    # Intel and Nike print "Depreciation" and "Amortization of intangibles" apart: the fallback adds them
    c = LEX.concepts["depreciation_amortization"]
    assert set(parse_formula(c.fallback).names) == {"depreciation", "amortization_of_intangibles"}
    # the parts have no alias: a question naming "depreciation and amortization" asks D&A itself
    assert [m.concept.key for m in LEX.match("depreciation and amortization")] == ["depreciation_amortization"]


def test_lines_some_balance_sheets_do_not_print_have_a_fallback():
    # Intel prints no "Total liabilities" line (INTEL_2020_10K p.78): assets less equity; most print no total debt
    assert LEX.concepts["total_liabilities"].fallback == "total_assets - shareholders_equity"
    assert set(parse_formula(LEX.concepts["total_debt"].fallback).names) == {"short_term_debt", "long_term_debt"}


def test_the_balance_sheet_total_is_no_total_liabilities():
    from finrag_pipeline.core.analyst.store import FilingFacts
    from finrag_pipeline.core.models import FilingMeta

    meta = FilingMeta(filing_id="X-2020-10K", content_sha256="0" * 64, source_path="x.pdf", original_name="x.pdf",
                      source_format="pdf", company="X", ticker=None, cik=None, form_type="10-K", fiscal_year=2020,
                      period_end_date=None)
    facts = FilingFacts(meta, [], [], LEX)
    score, _ = facts._label_score("total liabilities, temporary equity, and stockholders equity",
                                  LEX.concepts["total_liabilities"])
    assert score == 0
    assert facts._label_score("total liabilities", LEX.concepts["total_liabilities"])[0] >= 10


def test_a_label_with_the_companys_own_name_is_the_parents_line():
    # "Total Costco stockholders' equity" (COSTCO_2020_10K p.37: 18,284) is stockholders' equity before
    # noncontrolling interests ("Total equity" 18,705); "Net income attributable to Costco" is the net income line
    from finrag_pipeline.core.analyst.store import FilingFacts
    from finrag_pipeline.core.models import FilingMeta

    meta = FilingMeta(filing_id="COST-2020-10K", content_sha256="0" * 64, source_path="x.pdf", original_name="x.pdf",
                      source_format="pdf", company="Costco Wholesale Corporation", ticker="COST", cik=None,
                      form_type="10-K", fiscal_year=2020, period_end_date=None)
    facts = FilingFacts(meta, [], [], LEX)
    assert facts._without_own_name("total costco stockholders equity") == "total stockholders equity"
    assert facts._without_own_name("net income attributable to costco") == "net income attributable"
    assert facts._without_own_name("total equity") == "total equity"
    oracle = FilingFacts(meta.model_copy(update={"company": "Oracle Corporation"}) if hasattr(meta, "model_copy")
                         else __import__("dataclasses").replace(meta, company="Oracle Corporation"), [], [], LEX)
    # the whole printed name goes, not its first word alone (ORACLE_2019_10K p.69)
    assert oracle._without_own_name("total oracle corporation stockholders equity") == "total stockholders equity"


@pytest.mark.parametrize("question,formula", [
    # "how much cash did X spend on Y": "cash" is the amount's word; Y (with "its") is the line
    ("How much cash did Oracle spend on repurchases of its common stock in FY2019?", "abs(share_repurchases)"),
    ("How much cash did Walmart spend on capital expenditures in FY2021?", "abs(capital_expenditure)"),
    ("How much did Apple spend on buybacks of their own shares in FY2022?", "abs(share_repurchases)"),
])
def test_cash_spent_on_is_the_line_spent_on(question, formula):
    from finrag_pipeline.core.analyst.definitions import plain_wording

    plan = make_plan(plain_wording(question), [2022], LEX)
    assert plan.formula == formula


def test_cash_paid_for_stays_the_supplemental_row_wording():
    from finrag_pipeline.core.analyst.definitions import plain_wording

    # the calculator finds the printed row "Cash paid for interest" under these words
    assert plain_wording("How much cash did Apple pay for interest in FY2022?").startswith(
        "how much cash paid for interest in FY2022 did Apple")


# ---- calc4: phrasing classes read on the second held-out set (now development data), each with phrasings
# written for the tests (other metrics, other words for the same pattern) ---------------------------------------

STATED = [
    # question, years, formula, unit, decimals
    # "Name (ABBR) = formula": the abbreviation in parentheses is the name's, not a qualifier
    ("Days sales outstanding (DSO) = 365 x average receivables / revenue. What was Apple's DSO in FY2022?", [2022],
     "365 * avg(accounts_receivable) / revenue", "days", None),
    ("Days payable outstanding (DPO) = 365 * average accounts payable / cost of sales. Compute Nike's FY2020 DPO.",
     [2020], "365 * avg(accounts_payable) / cost_of_revenue", "days", None),
    ("Return on assets (ROA) is defined as net income / average total assets. What was Intel's ROA in FY2020?",
     [2020], "net_income / avg(total_assets)", "percent", None),
    # a sentence that states the metric: "X is A divided by B", "X equals ...", "X means ..."
    ("Return on equity is net income divided by average shareholders' equity. What was Apple's ROE in FY2022? "
     "Answer as a percentage rounded to one decimal place.", [2022], "net_income / avg(shareholders_equity)", "percent", 1),
    ("Asset turnover equals revenue divided by average total assets. What was Costco's asset turnover in FY2020? "
     "Round to two decimals.", [2020], "revenue / avg(total_assets)", "ratio", 2),
    ("Operating margin is operating income over revenue. What was Oracle's operating margin in FY2019?", [2019],
     "operating_income / revenue", "percent", None),
    # a parenthesis that says which balances the average takes: the years, no arithmetic
    ("DIO = 365 * average inventory (FY2019 and FY2020 year-end balances) / FY2020 cost of sales. What is Nike's FY2020 "
     "DIO?", [2020, 2019], "365 * avg(inventory) / cost_of_revenue", "days", None),
    ("Define ROE as net income / average shareholders' equity (beginning and end of year). What was Oracle's ROE in "
     "FY2019?", [2019], "net_income / avg(shareholders_equity)", "percent", None),
    ("DSO = 365 * average accounts receivable (FY2020 and FY2021 year-ends) / FY2021 revenue. What is Walmart's DSO for "
     "fiscal 2021?", [2021, 2020], "365 * avg(accounts_receivable) / revenue", "days", None),
    # "computed as ... as reported in the cash flow statement": the hint is no definition of its own
    ("What was Intel's FY2020 EBITDA, computed as operating income plus depreciation and amortization as reported in the "
     "cash flow statement?", [2020], "operating_income + depreciation_amortization", "USD", None),
    ("What was Nike's EBITDA in FY2020, calculated as operating income plus D&A as shown in the cash flow statement?",
     [2020], "operating_income + depreciation_amortization", "USD", None),
    # "net of" joins its two amounts before "less" takes them away
    ("What was Amazon's FY2022 free cash flow, defined as operating cash flow less capex net of proceeds from property "
     "and equipment sales and incentives?", [2022], None, "USD", None),
    ("Define FCF as cash from operations minus capital expenditures net of depreciation. What was Intel's FCF in FY2020?",
     [2020], "operating_cash_flow - (abs(capital_expenditure) - depreciation)", "USD", None),
    ("What is Nike's FY2020 net debt, defined as long-term debt net of cash and equivalents?", [2020],
     "(long_term_debt - cash)", "USD", None),
    # "A relative to B" is a ratio; "relative to the prior year" compares years
    ("How much did Apple spend on R&D in fiscal 2022 relative to its net sales? Answer as a percentage of total net "
     "sales.", [2022], "research_and_development / revenue", "percent", None),
    ("What was Oracle's SG&A relative to revenue in FY2019, as a percentage?", [2019], "sga / revenue", "percent", None),
    ("How large was Intel's capex relative to its operating cash flow in FY2020? Round to two decimals.", [2020],
     "abs(capital_expenditure) / operating_cash_flow", "ratio", 2),
    # an "average A as a % of B" over a range of years: the mean of the yearly ratios
    ("What is Walmart's average capex as a percentage of revenue over FY2019 to FY2021?", [2021, 2019],
     "mean(abs(capital_expenditure) / revenue, 3)", "percent", None),
    ("What was Nike's average operating income as a % of revenue from FY2019 to FY2020?", [2020, 2019],
     "mean(operating_income / revenue, 2)", "percent", None),
    ("Take the simple average of the yearly ratios: what was Costco's average R&D / revenue for FY2018 - FY2020?",
     [2020, 2018], "mean(research_and_development / revenue, 3)", "ratio", None),
]


@pytest.mark.parametrize("question,years,formula,unit,decimals", STATED, ids=[f"stated{i:02d}" for i in range(len(STATED))])
def test_stated_definitions_and_their_periods(question, years, formula, unit, decimals):
    try:
        plan = make_plan(question, years, LEX)
    except UnreadOperand as exc:
        # an operand that is no lexicon line is read as the filing's row by the calculator: the plan names it
        assert formula is None and exc.operand == "proceeds from property and equipment sales and incentives"
        return
    assert (plan.formula, plan.unit, plan.decimals) == (formula, unit, decimals)
    assert plan.qualifier is None  # "(DSO)", "365 x ..." and the period words qualify no segment
    assert plan.definition_given or "mean(" in plan.formula or " / " in plan.formula


@pytest.mark.parametrize("question,operation", [
    # "relative to" a year is a comparison of years, never a division by a line
    ("How did Apple's revenue in FY2022 change relative to the prior year?", "change"),
    ("By what percentage did Nike's revenue grow in FY2020 relative to FY2019?", "pct_change"),
])
def test_relative_to_a_year_is_no_ratio(question, operation):
    plan = make_plan(question, [2022] if "Apple" in question else [2020, 2019], LEX)
    assert plan.formula == "revenue" and plan.operation == operation


@pytest.mark.parametrize("question", [
    # a statement that names no arithmetic ("X is large", "there are ...") is no definition
    "Apple's revenue is large. What was Apple's revenue in FY2022?",
    "Operating income is the line most analysts read. What was Apple's operating income in FY2022?",
])
def test_a_sentence_without_arithmetic_defines_nothing(question):
    plan = make_plan(question, [2022], LEX)
    assert not plan.definition_given and plan.formula in ("revenue", "operating_income")


@pytest.mark.parametrize("question,years,formula,unit", [
    # a one-time amount the question states, taken out of the figure: a charge makes a cost smaller and a profit larger
    ("Excluding the one-time $10.2 billion State Aid tax charge, what would Apple's FY2024 effective tax rate have been?",
     [2024], "(income_tax - 10200000000) / income_before_taxes", "percent"),
    ("What was Boeing's 2021 operating margin excluding the $1.5 billion 777X charge?", [2021],
     "(operating_income + 1500000000) / revenue", "percent"),
    ("Adjusted for a $250 million impairment charge, what was Nike's FY2020 operating income?", [2020],
     "(operating_income + 250000000)", "USD"),
    # a gain the reverse
    ("What was Apple's FY2022 net income, ignoring a $500 million gain on the sale of investments?", [2022],
     "(net_income - 500000000)", "USD"),
    ("Setting aside the $1.2 billion tax benefit, what was Intel's FY2020 effective tax rate?", [2020],
     "(income_tax + 1200000000) / income_before_taxes", "percent"),
    # which lines are costs is the lexicon's `expense` / `outflow` flag, never words of the concept's key: pre-tax
    # income is a profit (its key says "taxes"), interest expense and operating expenses are costs
    ("What was Intel's FY2020 income before income taxes, excluding a $1 billion impairment charge?", [2020],
     "(income_before_taxes + 1000000000)", "USD"),
    ("Ignoring a $50 million debt extinguishment charge, what was FedEx's FY2023 interest expense?", [2023],
     "(interest_expense - 50000000)", "USD"),
    ("Excluding a $300 million restructuring charge, what were Nike's FY2020 total operating expenses?", [2020],
     "(total_operating_expenses - 300000000)", "USD"),
])
def test_a_stated_one_time_amount_is_taken_out(question, years, formula, unit):
    plan = make_plan(question, years, LEX)
    assert (plan.formula, plan.unit, plan.operation) == (formula, unit, "value")
    assert plan.qualifier is None


def test_an_exclusion_that_fits_no_single_line_abstains():
    # where the amount would go in an average of balances is a guess: no plan, an abstention naming the clause
    with pytest.raises(PlanError, match="write-down"):
        make_plan("What was Apple's FY2022 average inventory excluding the $2 billion write-down?", [2022], LEX)


@pytest.mark.parametrize("label,concept", [
    # label wordings of the same lines on other 10-Ks (the plural "costs", segment headings with a slash)
    ("Costs of revenue", "cost_of_revenue"), ("Costs of sales", "cost_of_revenue"), ("Costs of goods sold", "cost_of_revenue"),
    ("Cost of goods sold", "cost_of_revenue"), ("Cost of products sold", "cost_of_revenue"),
    ("Operating profit", "operating_income"), ("Earnings/(loss) from operations", "operating_income"),
    ("Income (loss) from operations", "operating_income"),
    ("Earnings (loss) before income taxes", "income_before_taxes"),
    ("Income from continuing operations before income taxes", "income_before_taxes"),
    ("Short-term and other investments", "short_term_investments"), ("Marketable securities, current", "short_term_investments"),
])
def test_more_label_wordings_are_lexicon_lines(label, concept):
    from finrag_pipeline.core.analyst.labels import normalize_label

    assert normalize_label(label) in {normalize_label(x) for x in LEX.concepts[concept].line_items}
    # and no other concept claims the same label
    assert not [c.key for c in LEX.concepts.values() if c.key != concept
                and normalize_label(label) in {normalize_label(x) for x in c.line_items}]


@pytest.mark.parametrize("question,kind", [
    # a line of a year asked by its name is a figure, even naming a segment (the calculator answers it)
    ("What were the revenues of Boeing's Global Services segment in 2021?", "metric"),
    ("What was the operating income of Amazon's AWS segment in 2022?", "metric"),
    ("What were the net sales of Apple's Services business in fiscal 2022?", "metric"),
    # open questions about segments stay qualitative
    ("What were the main segments of Boeing in 2021?", "qualitative"),
    ("Which segments does Amazon report?", "qualitative"),
    ("What were the revenue drivers of Boeing's Global Services segment in 2021?", "qualitative"),
])
def test_a_line_of_a_year_asked_by_name_is_a_figure_question(question, kind):
    from finrag_pipeline.core.question_kind import classify_question

    assert classify_question(question).kind == kind


# A company's abbreviation ("Inc.", "Corp.", "Co.", "Ltd.") inside a definition does not end it; a full stop does.
@pytest.mark.parametrize("question,body", [
    ("What was Foot Locker's ROA for fiscal 2021, defined as net income attributable to Foot Locker, Inc. divided by "
     "the average of total assets? One decimal.",
     "net income attributable to Foot Locker, Inc. divided by the average of total assets"),
    ("Payout ratio, defined as dividends paid by Acme Corp. divided by net income. Round to one decimal.",
     "dividends paid by Acme Corp. divided by net income"),
    ("Margin, defined as operating income of Ford Motor Co. over revenue?", "operating income of Ford Motor Co. over revenue"),
    ("Leverage defined as total debt of Shell plc. divided by EBITDA.", "total debt of Shell plc. divided by EBITDA"),
    # a sentence's full stop still ends the definition
    ("ROA is defined as net income divided by total assets. Answer as a percentage.", "net income divided by total assets"),
])
def test_company_abbreviation_does_not_end_a_definition(question, body):
    from finrag_pipeline.core.analyst.definitions import find_definitions

    assert find_definitions(question)[0].body == body


# A parenthesis naming a statement is no operand; "attributable to <the company>" is the parent's own row
@pytest.mark.parametrize("definition, formula", [
    ("common stock dividends paid (cash flow statement) divided by net income", "abs(dividends) / net_income"),
    ("dividends paid (from the cash flow statement) divided by net income", "abs(dividends) / net_income"),
    ("total debt (balance sheet) divided by total assets", "total_debt / total_assets"),
    ("operating income (income statement) / revenue", "operating_income / revenue"),
    ("net income attributable to shareholders / revenue", "net_income / revenue"),
])
def test_statement_parenthesis_in_a_definition(definition, formula):
    assert definition_formula(definition, LEX, 2022) == formula


@pytest.mark.parametrize("phrase, concept", [
    ("net income attributable to verizon", None), ("net income attributable to foot locker, inc.", None),
    ("net income attributable to the company", "net_income"), ("net income attributable to shareholders", "net_income"),
    ("net income attributable to common stockholders", "net_income"),
])
def test_net_income_attributable_to_a_named_parent_is_its_row(phrase, concept):
    from finrag_pipeline.core.analyst.definitions import resolve_operand

    found = resolve_operand(phrase, LEX)
    assert (found.key if found else None) == concept


# "<Company> defines X as D" states a definition; a label's sign words "(used in)" are no operand
@pytest.mark.parametrize("question, formula", [
    ("Netflix defines free cash flow as net cash provided by (used in) operating activities less purchases of property "
     "and equipment. What was it in FY2020?", "operating_cash_flow - abs(capital_expenditure)"),
    ("The company defines EBITDA as operating income plus depreciation and amortization. What was EBITDA in FY2020?",
     "operating_income + depreciation_amortization"),
    ("Acme counts net debt as long-term debt minus cash and cash equivalents. What was net debt in FY2020?",
     "long_term_debt - cash"),
    ("What was the margin in FY2020, defined as net income (loss) divided by revenue?", "net_income / revenue"),
])
def test_company_defines_and_sign_words(question, formula):
    plan = make_plan(question, [2020], LEX)
    assert plan.definition_given and plan.formula.replace("(", "").replace(")", "") == formula.replace("(", "").replace(")", "")


# A name followed by the arithmetic that defines it is that arithmetic; a statement hint closing the parenthesis ends
# no definition
@pytest.mark.parametrize("question, formula", [
    ("What was leverage in FY2019, measured as total debt (short-term debt plus long-term debt, from the balance "
     "sheet) divided by FY2019 unadjusted EBITDA (operating income plus depreciation and amortization)? Two decimals.",
     "(short_term_debt + long_term_debt) / (operating_income + depreciation_amortization)"),
    ("What was net debt to EBITDA in FY2019, defined as net debt (long-term debt minus cash and cash equivalents) "
     "divided by EBITDA (operating income plus depreciation and amortization)?",
     "(long_term_debt - cash) / (operating_income + depreciation_amortization)"),
    ("Compute coverage as EBIT (operating income) divided by interest expense in FY2019.",
     "operating_income / interest_expense"),
    # a plain parenthesis stays as it was
    ("What was DIO in FY2019, defined as 365 * (average inventory) / (cost of sales)?",
     "365 * avg(inventory) / cost_of_revenue"),
])
def test_named_arithmetic_in_a_definition(question, formula):
    plan = make_plan(question, [2019], LEX)
    norm = lambda f: re.sub(r"[()\s]", "", f)  # noqa: E731
    assert plan.definition_given and norm(plan.formula) == norm(formula)
