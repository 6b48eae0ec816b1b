"""Terms analysts use without a definition, read through the lexicon / vocabulary YAML (issue 26, tidy7): "R&D
intensity" is R&D as a % of revenue; "marketing" asked of a filer that prints only "Sales and marketing" reads that
line and the answer names it.

Figures read in the sample filings: MSFT_2022_10K p.57 (research and development 24,512; sales and marketing 21,825;
total revenue 198,270), APPLE_2022_10K p.32 (research and development 26,251; total net sales 394,328),
BOEING_2021_10K p.64 (research and development (2,249); total revenues 62,286), AMZN_2022_10K p.37 ("Sales and
marketing" 42,238).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from _analyst_corpus import parsed_samples

from finrag_pipeline.core.analyst.calculator import combined_line_note, explanation_lines
from finrag_pipeline.core.analyst.store import FactStore
from finrag_pipeline.core.analyst.vocabulary import query_expansions
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.evaluation.answer_decision import decide


@pytest.fixture(scope="module")
def calc():
    return calculator_answerer(FactStore.from_parsed(parsed_samples().values()))


@pytest.mark.parametrize("question,printed,reference", [
    # 24,512 / 198,270 = 12.36%; 26,251 / 394,328 = 6.66%; 2,249 / 62,286 = 3.61% (Boeing prints the cost in
    # parentheses: the share is positive)
    ("What was Microsoft's R&D intensity in fiscal 2022?", "12.4% —", "12.4%"),
    ("What was Microsoft's research and development intensity in fiscal 2022?", "12.4% —", "12.36%"),
    ("What was Apple's R&D intensity in FY2022?", "6.7% —", "6.7%"),
    ("What was Boeing's R&D intensity in 2021, to two decimal places?", "3.61% —", "3.6%"),
])
def test_rd_intensity_without_a_definition_is_rd_over_revenue(calc, question, printed, reference):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(printed), r.text
    assert "research_and_development / revenue" in r.details["formula"]
    assert decide(r.text, question, reference).correct is True
    assert decide("R&D is an important investment for the company.", question, reference).correct is not True


@pytest.mark.parametrize("question,printed", [
    ("What was Microsoft's marketing expense in fiscal 2022?", "$21,825 million —"),
    ("How much did Microsoft spend on marketing in fiscal 2022?", "$21,825 million —"),
    ("What was Amazon's marketing expense in 2022?", "$42,238 million —"),
])
def test_marketing_of_a_filer_printing_sales_and_marketing_names_the_line_read(calc, question, printed):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(printed), r.text
    assert 'read from the line "Sales and marketing"' in r.text
    assert r.details["line_read"].startswith('read from the line "Sales and marketing"')
    # `finrag ask --explain` (and the explorer) show it beside the plan
    assert [line for line in explanation_lines(r.details) if line.startswith("  line read: ")] == [
        f"  line read: {r.details['line_read']}"]


def test_the_line_asked_by_its_own_name_has_no_note(calc):
    r = calc.answer("What was Microsoft's sales and marketing expense in fiscal 2022?", [])
    assert r.text.startswith("$21,825 million —") and "read from the line" not in r.text
    r = calc.answer("What was Microsoft's total revenue in fiscal 2022?", [])
    assert r.text.startswith("$198,270 million —") and "read from the line" not in r.text
    assert not [line for line in explanation_lines(r.details) if "line read" in line]


def _fact(label: str):
    return SimpleNamespace(label=label, source=SimpleNamespace(row_label=label), corroborated_by=[])


@pytest.mark.parametrize("asked,label,note", [
    ("marketing expense", "Sales and marketing", True),
    ("marketing", "Selling and marketing expenses", True),
    ("depreciation", "Depreciation, amortization, and other", True),
    ("marketing", "Marketing", False),
    ("revenue", "Total revenue", False),
    ("r&d", "Research and development", False),
    ("research and development", "Research and development", False),
    ("general and administrative", "Selling, general and administrative", False),
])
def test_combined_line_note(asked, label, note):
    got = combined_line_note(asked, _fact(label))
    assert (got is not None) == note, got
    if note:
        assert f'"{label}"' in got


@pytest.mark.parametrize("query,expansion", [
    ("What was Microsoft's R&D intensity in 2022?", "research and development"),
    ("How much did Microsoft spend on marketing in fiscal 2022?", "sales and marketing"),
    ("What was Netflix's marketing expense in 2020?", "sales and marketing"),
])
def test_retrieval_expands_the_terms(query, expansion):
    assert expansion in query_expansions(query)
