"""`finrag ask ... --model calculator` over a FINRAG_HOME holding Microsoft FY2022 (PDF) and Apple
FY2024 (inline XBRL): the answer, the formula, every input with its page and row (or XBRL fact), and
timings; the calculator reads its facts from the warehouse (core.table_rows, core.xbrl_facts)."""

from __future__ import annotations

import json

import pytest
from _analyst_corpus import APPLE_2024, MSFT, parsed_samples, store_parsed
from click.testing import CliRunner

from finrag_pipeline.cli import main


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("analyst-home")
    store_parsed(home, [parsed_samples()[name] for name in (MSFT, APPLE_2024)])
    return home


def _ask(home, *args):
    result = CliRunner().invoke(main, ["--home", str(home), "ask", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ask_calculator_prints_answer_formula_inputs_and_timings(home):
    out = _ask(home, "What was Microsoft's operating margin in fiscal 2022?", "-r", "bm25", "--model", "calculator")
    assert out.startswith("42.1%")
    assert "formula: operating_income / revenue" in out
    # p.57 Income Statements, rows and column as printed
    assert 'input operating_income FY2022: 83383 million USD <- MSFT-2022-10K p.57 row "Operating income"' in out
    assert 'input revenue FY2022: 198270 million USD <- MSFT-2022-10K p.57 row "Total revenue"' in out
    assert "citations: MSFT-2022-10K p.57; MSFT-2022-10K p.57" in out
    assert "timings: retrieval" in out and "answer" in out and "plan" in out


def test_ask_calculator_json_and_xbrl_inputs(home):
    data = json.loads(_ask(home, "What was Apple's operating margin in fiscal 2024?", "-r", "bm25", "--json"))
    assert data["response_state"] == "answered" and data["answer"].startswith("31.5%")  # default model: calculator
    assert {i["source"]["kind"] for i in data["details"]["inputs"]} == {"xbrl_fact"}
    assert all(c[0] == "AAPL-2024-10K" and c[2] for c in data["citations"])


def test_ask_calculator_abstains_naming_the_missing_input(home):
    out = _ask(home, "What was Microsoft's operating income in fiscal 2015?", "-r", "bm25")
    assert "state: abstained" in out and "operating income for FY2015" in out


def test_ask_explain_prints_the_plan_and_every_operand_row(home):
    out = _ask(home, "DPO is defined as 365 * (average accounts payable between FY2021 and FY2022) / (FY2022 COGS + "
                     "change in inventory). What is Microsoft's FY2022 DPO?", "-r", "bm25", "--explain")
    assert "plan:" in out and "formula: 365 * (avg(accounts_payable)) / (cost_of_revenue + change(inventory))" in out
    assert "written in the question: 365 * (average accounts payable between FY2021 and FY2022)" in out
    # MICROSOFT_2022_10K.pdf p.59 Balance Sheets: Accounts payable 19,000 (FY2022) and 15,163 (FY2021)
    assert 'accounts_payable FY2022 = 19000 million USD <- MSFT-2022-10K p.59 "Accounts payable"' in out
    assert 'accounts_payable FY2021 = 15163 million USD <- MSFT-2022-10K p.59 "Accounts payable"' in out
    data = json.loads(_ask(home, "Is Microsoft a capital-intensive business based on FY2022 data?", "-r", "bm25",
                           "--json", "--explain"))
    assert data["answer"].startswith("Yes, because capex / revenue 12.0%")
    assert ("judgement", "capital_intensive") in [tuple(p) for p in data["explain"]["plan"]]
    assert {o["label"] for o in data["explain"]["operands"]} >= {"Additions to property and equipment", "Total revenue"}


def test_facts_command_lists_lookups_and_disagreements(home):
    result = CliRunner().invoke(main, ["--home", str(home), "facts", "AAPL-2024-10K", "--item", "net income",
                                       "--item", "operating income", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    got = {r["line_item"]: r["value"] for r in data["lookups"]}
    assert got == {"net_income": "93736", "operating_income": "123216"}
    assert data["disagreements"] == []  # every tagged line agrees with its statement row
    bad = CliRunner().invoke(main, ["--home", str(home), "facts", "NOPE-2020-10K"])
    assert bad.exit_code != 0 and "not in the warehouse" in bad.output
