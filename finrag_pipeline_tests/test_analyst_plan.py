"""Question -> plan (quantity, formula, years, operation, unit, rounding) and exact formula arithmetic."""

from __future__ import annotations

from decimal import Decimal

import pytest

from finrag_pipeline.core.facts.formula import FormulaError, MissingInput, calculate, evaluate, parse_formula
from finrag_pipeline.core.facts.plan import PlanError, definition_formula, make_plan
from finrag_pipeline.core.retrieval.lexicon import Lexicon

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


def test_lexicon_rejects_unknown_fields_and_statements(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("concepts:\n  x:\n    aliases: [x]\n    statment: balance_sheet\n")
    with pytest.raises(ValueError, match="unknown fields"):
        Lexicon.load(bad)
    bad.write_text("concepts:\n  x:\n    aliases: [x]\n    statement: notes\n")
    with pytest.raises(ValueError, match="statement"):
        Lexicon.load(bad)
