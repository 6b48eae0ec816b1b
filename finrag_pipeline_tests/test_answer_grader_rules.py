"""What a careful grader does with answers in the styles real RAG systems write (issue 25, second pass).

One table per rule, both ways: the right answer in that style scores 1; a lazy, knows-nothing or wrong
answer in the same style scores 0. Figures are Apple's FY2022 10-K (total net sales 394,328 / 365,817
USD millions for fiscal 2022 / 2021, net income 99,803; cash flow statement: operating cash flow
122,151, payments for PP&E 10,708; net PP&E 42,117 / 39,440 at the ends of fiscal 2022 / 2021) and
the contracts of test_answer_scoring.py. docs/METRICS.md "Correctness" has each rule with an example.
"""

from __future__ import annotations

import pytest
from test_answer_scoring import EXTREME, HIGHER, LOOKUP, PP

from finrag_pipeline.core.asked import requested_units
from finrag_pipeline.core.evaluation.answer_decision import decide
from finrag_pipeline.core.numbers import parse_figures
from finrag_pipeline.core.scoring import answer_metrics as am
from finrag_pipeline.core.scoring.answer_contract import answer_value, contract_from_text, sentence_contract


def _score(key: dict, answer: str) -> am.Verdict:
    return am.correctness(answer, **key)


# ---------------------------------------------------------------------------------------------
# 1. A choice stated first, then every option's figure as support

CHOICE_LEAD = [
    # (key, answer, correct, non_committal)
    (EXTREME, "Fiscal 2022. The figures: fiscal 2020: $274,515 million; fiscal 2021: $365,817 million; "
              "fiscal 2022: $394,328 million.", 1.0, False),
    (EXTREME, "**FY2022** FY2020: $274,515 million; FY2021: $365,817 million; FY2022: $394,328 million", 1.0, False),
    (HIGHER, "Fiscal 2022.\n\n- fiscal 2021: $365,817 million\n- fiscal 2022: $394,328 million", 1.0, False),
    (HIGHER, "Fiscal 2021. The figures: fiscal 2022: $394,328 million; fiscal 2021: $365,817 million.", 0.0, False),
    (EXTREME, "Fiscal 2020: $274,515 million. Fiscal 2021: $365,817 million. Fiscal 2022: $394,328 million.",
     0.0, True),
    (EXTREME, "Fiscal 2021 or fiscal 2022. The figures: fiscal 2021: $365,817 million; fiscal 2022: "
              "$394,328 million.", 0.0, True),
    # an option alone before a comma leads too; a list of options does not
    (HIGHER, "Fiscal 2022, at $394.3 billion compared to $365.8 billion in fiscal 2021.", 1.0, False),
    (HIGHER, "Fiscal 2021, at $365.8 billion compared to $394.3 billion in fiscal 2022.", 0.0, False),
    (EXTREME, "Fiscal 2020, fiscal 2021 and fiscal 2022 all had sales above $270 billion.", 0.0, True),
]


@pytest.mark.parametrize("key,answer,correct,non_committal", CHOICE_LEAD, ids=[c[1][:50] for c in CHOICE_LEAD])
def test_a_choice_stated_first_then_the_figures_of_every_option(key, answer, correct, non_committal):
    v = _score(key, answer)
    assert (v.correct, v.non_committal) == (correct, non_committal), v


# ---------------------------------------------------------------------------------------------
# 2. Shown working: intermediate results and the inputs named in words are not candidates

TURNOVER_Q = ("What was Apple's fixed asset turnover in fiscal 2022, defined as revenue divided by the average "
              "of net PP&E at the end of FY2021 and FY2022? Round to two decimals.")
FCF_Q = "What was Apple's free cash flow in fiscal 2022, computed as operating cash flow minus capex, in USD millions?"
CURRENT_Q = "What was Apple's current ratio at the end of fiscal 2022 (current assets / current liabilities)?"

WORKING = [
    # (question, reference, answer, correct)
    (TURNOVER_Q, "9.67x", "Average net PP&E = (42,117 + 39,440) / 2 = 40,778.5; 394,328 / 40,778.5 = 9.67.", True),
    (TURNOVER_Q, "9.67x", "Net sales were $394,328 million and average net PP&E $40,778.5 million, so turnover = "
                          "394,328 / 40,778.5 \u2248 9.67x.", True),
    (TURNOVER_Q, "9.67x", "**9.67x**\n- Net sales: $394,328 million\n- Average net PP&E: $40,778.5 million\n"
                          "- Calculation: (42,117 + 39,440) / 2 = 40,778.5; 394,328 / 40,778.5 = 9.67", True),
    (TURNOVER_Q, "9.67x", "(42,117 + 39,440) / 2 = 40,778.5; 394,328 / 40,778.5 = 9.76", False),
    (TURNOVER_Q, "9.67x", "Average net PP&E = (42,117 + 39,440) / 2 = 40,778.5", False),
    (TURNOVER_Q, "9.67x", "394,328 / 40,778.5", False),
    (FCF_Q, "$111,443 million", "Operating cash flow was $122,151 million and capex was $10,708 million. Free cash "
                                "flow = 122,151 - 10,708 \u2248 111,443.", True),
    (FCF_Q, "$111,443 million", "Free cash flow = 122,151 - 10,708 = $111,443 million (operating cash flow "
                                "$122,151 million less capex $10,708 million).", True),
    (FCF_Q, "$111,443 million", "Operating cash flow was $122,151 million and capex was $10,708 million. Free cash "
                                "flow = 122,151 - 10,708 \u2248 112,443.", False),
    (FCF_Q, "$111,443 million", "Operating cash flow was $122,151 million and capex was $10,708 million.", False),
    (FCF_Q, "$111,443 million", "FCF = 122,151 - 10,708 = 111,443 in fiscal 2021.", False),   # another year's
    (CURRENT_Q, "0.88", "Current ratio = 135,405 / 153,982 = 0.879, so 0.88.", True),
    (CURRENT_Q, "0.88", "Current ratio = 135,405 / 153,982 = 0.879, so 0.87.", False),
]


@pytest.mark.parametrize("question,reference,answer,correct", WORKING, ids=[w[2][:50] for w in WORKING])
def test_shown_working_intermediates_and_named_inputs(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


def test_a_subtraction_is_no_range():
    assert am.hedge_of("Free cash flow = 122,151 - 10,708 \u2248 111,443.") is None
    assert am.hedge_of("394,328 - 365,817 gives 28,511") is None
    assert am.hedge_of("7-8%") and am.hedge_of("It was 10 - 20% higher.")


# ---------------------------------------------------------------------------------------------
# 3. A year in brackets is a year, not an accounting negative

YEAR_IN_BRACKETS = [
    (LOOKUP, "$394,328 million (2022)", 1.0),
    (LOOKUP, "**Total net sales (2022): $394,328 million** - Source: Apple's 2022 annual report", 1.0),
    (LOOKUP, "$365,817 million (2021)", 0.0),
    (LOOKUP, "**Total net sales (2022): $365,817 million**", 0.0),
]


@pytest.mark.parametrize("key,answer,correct", YEAR_IN_BRACKETS, ids=[y[1][:50] for y in YEAR_IN_BRACKETS])
def test_a_year_in_brackets(key, answer, correct):
    assert _score(key, answer).correct == correct


def test_the_parser_reads_a_bracketed_year_as_a_year():
    assert [f.text for f in parse_figures("$2,144 million (2021)")] == ["$2,144 million"]
    assert parse_figures("(2,021)")[0].value == -2021       # an accounting negative keeps its comma
    assert parse_figures("(2021)", keep_years=True)[0].is_year


# ---------------------------------------------------------------------------------------------
# 4. A line marked as the answer, under a table of both periods

TABLE = "| | fiscal 2022 | fiscal 2021 |\n|---|---|---|\n| Net sales | $394,328 million | $365,817 million |"
MARKED = [
    (LOOKUP, TABLE + "\n\n**Answer:** $394,328 million", 1.0, False),
    (LOOKUP, TABLE + "\n\nFinal answer: $394.3 billion", 1.0, False),
    (LOOKUP, TABLE + "\n\n**Answer:** $365,817 million", 0.0, False),
    (LOOKUP, TABLE, 0.0, True),
    (LOOKUP, "Answer: FY2022: $394,328 million; FY2021: $365,817 million", 0.0, True),
]


@pytest.mark.parametrize("key,answer,correct,non_committal", MARKED, ids=[m[1][-40:] for m in MARKED])
def test_a_marked_answer_line(key, answer, correct, non_committal):
    v = _score(key, answer)
    assert (v.correct, v.non_committal) == (correct, non_committal), v


# ---------------------------------------------------------------------------------------------
# 5. Rounding: lower precision matches when the reference rounds to it, at two significant figures or more

CAPEX_Q = "What was 3M's capital expenditure in FY2018?"
ROUNDING = [
    # (question, reference, answer, correct)
    (CAPEX_Q, "$1,577 million", "approximately $1.6 billion", True),
    (CAPEX_Q, "$1,577 million", "$1.58 billion", True),
    (CAPEX_Q, "$1,577 million", "$2 billion", False),           # one significant figure
    (CAPEX_Q, "$1,577 million", "$1.5 billion", False),         # rounded the wrong way
    ("What was the segment's operating income in FY2022?", "$11,104 million", "$11 billion", True),
    ("What was the segment's operating income in FY2022?", "$11,104 million", "$10 billion", False),
    ("What were Apple's total net sales in fiscal 2022?", "$394,328 million", "$394 billion", True),
    ("What were Apple's total net sales in fiscal 2022?", "$394,328 million", "$390 billion", False),
    ("What were Apple's total net sales in fiscal 2022?", "$394,328 million", "$0.4 trillion", False),
    ("What were Apple's total net sales in fiscal 2022?", "$394,328 million", "$0 trillion", False),
    # asked precision wins: two decimals asked, one given
    (TURNOVER_Q, "9.67x", "9.7x", False),
    (TURNOVER_Q, "9.67x", "9.67x", True),
]


@pytest.mark.parametrize("question,reference,answer,correct", ROUNDING, ids=[f"{r[1]}->{r[2]}" for r in ROUNDING])
def test_rounding_to_the_answers_precision(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


def test_significant_figures():
    assert [am.significant_figures(parse_figures(t)[0]) for t in ("$11 billion", "$1.6 billion", "$0.4 trillion",
                                                                  "394,328", "$0 billion")] == [2, 2, 1, 6, 0]


# ---------------------------------------------------------------------------------------------
# 6. Units the contract reads: ratios, bare numbers in the asked percent, "points", levels after "to"

CAPEX_PCT_Q = ("What was Apple's capex intensity in fiscal 2021, defined as capital expenditures divided by "
               "sales? Give it as a percentage rounded to one decimal place.")
UNITS = [
    (CURRENT_Q, "0.88", "Current ratio fell to 0.88 in fiscal 2022 from 1.07 in fiscal 2021.", True),
    (CURRENT_Q, "0.88", "The current ratio was 0.88 (current assets $135,405 million / current liabilities "
                        "$153,982 million).", True),
    (CURRENT_Q, "0.88", "Current ratio rose to 1.07 from 0.88.", False),
    (CURRENT_Q, "0.88", "Current assets were $135,405 million and current liabilities $153,982 million.", False),
    (CAPEX_PCT_Q, "3.0%", "3.0", True),
    (CAPEX_PCT_Q, "3.0%", "3.0%", True),
    (CAPEX_PCT_Q, "3.0%", "0.030", True),
    (CAPEX_PCT_Q, "3.0%", "3.5", False),
    (CAPEX_PCT_Q, "3.0%", "30", False),
]


EPS_Q = "What was Apple's diluted earnings per share in fiscal 2022?"   # 10-K p.32: diluted $6.11, basic $6.15
DPS_Q = "What were Apple's cash dividends declared per share in fiscal 2022?"   # p.35: $0.90 (declared per share or RSU)
UNITS += [
    # a per-share reference written as a bare dollar amount: the answer may say "per share" or not
    (EPS_Q, "$6.11", "Diluted EPS was $6.11 per share.", True),
    (EPS_Q, "$6.11", "$6.11", True),
    (EPS_Q, "6.11", "Apple earned $6.11 per diluted share in fiscal 2022.", True),
    (DPS_Q, "$0.90", "Dividends declared were $0.90 per share.", True),
    (EPS_Q, "$6.11", "Basic EPS was $6.15 per share.", False),
    (EPS_Q, "$6.11", "Net income was $99,803 million.", False),
    (EPS_Q, "$6.11", "Apple reports earnings per share in its income statement.", False),
]


@pytest.mark.parametrize("question,reference,answer,correct", UNITS, ids=[u[2][:50] for u in UNITS])
def test_units_the_question_asks_for(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


def test_per_share_questions_ask_for_usd_per_share():
    assert requested_units(EPS_Q).unit == "USD per share"
    assert requested_units("What was diluted EPS growth as a percentage?").unit == "percent"
    assert requested_units("What were total dividends (in USD millions) and dividends per share?").unit == "USD"
    assert contract_from_text(EPS_Q, "$6.11").values[0]["unit"] == "USD per share"


def test_named_ratios_are_multiples():
    assert requested_units(CURRENT_Q).unit == "ratio"
    assert requested_units("What was the debt-to-equity ratio in 2022?").unit == "ratio"
    assert requested_units("What was the payout ratio as a percentage?").unit == "percent"
    assert contract_from_text(CURRENT_Q, "0.88").values[0]["unit"] == "ratio"


@pytest.mark.parametrize("answer,correct", [
    ("Gross margin rose 1.5 points.", 1.0), ("up 1.5 pts", 0.0), ("Gross margin rose 1.5%.", 0.0),
    ("Gross margin fell 1.5 points.", 0.0)])
def test_points_are_percentage_points(answer, correct):
    assert _score(PP, answer).correct == correct


# ---------------------------------------------------------------------------------------------
# 7. Two asked values stated under each other's labels

TWO = dict(question="What were Apple's total net sales and net income in fiscal 2022?",
           answer_values=[answer_value(394328, "USD millions", period="FY2022", value_text="394,328"),
                          answer_value(99803, "USD millions", period="FY2022", value_text="99,803")],
           inputs=[{"label": "Total net sales", "value": 394328, "unit": "USD millions", "period": "FY2022",
                    "text": "394,328", "role": "source"},
                   {"label": "Net income", "value": 99803, "unit": "USD millions", "period": "FY2022",
                    "text": "99,803", "role": "source"}])


@pytest.mark.parametrize("answer,correct", [
    ("Total net sales were $394,328 million and net income was $99,803 million.", 1.0),
    ("Net income was $99.8 billion on total net sales of $394.3 billion.", 1.0),
    ("Total net sales were $99,803 million and net income was $394,328 million.", 0.0),
    ("Net income: $394,328 million; total net sales: $99,803 million.", 0.0)])
def test_two_values_under_their_own_labels(answer, correct):
    assert _score(TWO, answer).correct == correct


# ---------------------------------------------------------------------------------------------
# 8. Contracts: a two-part question, a change whose reference states its levels, a direction affirmed

def test_which_and_why_leaves_the_decision_to_the_judge():
    q = "Which Boeing segment lost the most money in 2021, and why did the company's operating loss shrink?"
    ref = "Commercial Airplanes (loss of $6,475 million); the loss shrank mainly due to lower losses at BCA."
    c = sentence_contract(ref, q)
    assert not c.derived and "narrative" in c.reason and c.key_facts
    assert decide("Commercial Airplanes, with a loss of $6,475 million.", q, ref).decided is False


TAX_Q = "How much has the effective tax rate of American Express changed between FY2021 and FY2022?"
TAX_REF = "The effective tax rate for American Express has changed/dropped from 24.6% in FY 2021 to 21.6% in FY 2022."
LEVELS = [
    (TAX_Q, TAX_REF, "From 24.6% to 21.6%.", True),
    (TAX_Q, TAX_REF, "It went from 24.6% in FY2021 to 21.6% in FY2022.", True),
    (TAX_Q, TAX_REF, "It dropped 3 points.", True),
    (TAX_Q, TAX_REF, "From 21.6% to 24.6%.", False),
    (TAX_Q, TAX_REF, "From 24.6% to 22.6%.", False),
    (TAX_Q, TAX_REF, "24.6%; 21.6%", False),
    # the reference states the change itself: the levels alone answer only part
    ("By how much did 3M's capex change from FY2017 to FY2018 (in USD millions)?", "204",
     "From $1,373 million in FY2017 to $1,577 million in FY2018.", False),
]


@pytest.mark.parametrize("question,reference,answer,correct", LEVELS, ids=[x[2][:50] for x in LEVELS])
def test_a_change_answered_with_the_levels_the_reference_states(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


GREW_Q = "Did Apple's total net sales increase in fiscal 2022 compared with fiscal 2021?"
GREW_REF = "Yes. Total net sales rose to $394,328 million from $365,817 million."
AFFIRMED = [
    (GREW_Q, GREW_REF, "Net sales rose 7.8% to $394.3 billion in fiscal 2022.", True),
    (GREW_Q, GREW_REF, "Total net sales increased by $28.5 billion year over year.", True),
    (GREW_Q, GREW_REF, "Net sales fell to $365.8 billion.", False),
    (GREW_Q, GREW_REF, "Net sales were $394.3 billion.", False),               # states no direction
    (GREW_Q, GREW_REF, "Apple's total net sales increased in fiscal 2022 compared with fiscal 2021.", False),  # echo
    # the same words after a yes or no commit: right when the verdict is, wrong when it is not
    (GREW_Q, GREW_REF, "Yes, Apple's total net sales increased in fiscal 2022 compared with fiscal 2021.", True),
    (GREW_Q, GREW_REF, "No, Apple's total net sales did not increase in fiscal 2022 compared with fiscal 2021.", False),
    (GREW_Q, GREW_REF, "Did Apple's total net sales increase in fiscal 2022 compared with fiscal 2021? Yes or no.",
     False),                                                                   # echo with its options
    (GREW_Q, GREW_REF, "Net sales may have increased.", False),                # a hedge
    (GREW_Q, "No. Net sales fell.", "Net sales fell 3% in fiscal 2022.", True),
]


@pytest.mark.parametrize("question,reference,answer,correct", AFFIRMED, ids=[x[2][:50] for x in AFFIRMED])
def test_a_direction_affirmed_without_yes(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


def test_coarse_rounding_is_capped_at_two_percent():
    ref = [answer_value(-1234, "USD millions")]
    assert am.correctness("-$1.23 billion", answer_values=ref).correct == 1.0
    assert am.correctness("-$1.2 billion", answer_values=ref).correct == 0.0     # 2.8% off: another value


# ---------------------------------------------------------------------------------------------
# 9. Working written in LaTeX, parts of a stated total, inputs after "less"

GM_Q = "What was Apple's gross margin percentage in fiscal 2022?"
AVG_Q = "What was Apple's average net PP&E over fiscal 2021 and fiscal 2022?"
REV_Q = "What were Apple's total net sales in fiscal 2022?"
WRITTEN = [
    (CURRENT_Q, "0.88", "\\[ \\text{Current Ratio} = \\frac{\\text{Current Assets}}{\\text{Current Liabilities}} = "
                        "\\frac{135,405}{153,982} \\approx 0.88 \\]\n\nSo the current ratio was about 0.88.", True),
    (CURRENT_Q, "0.88", "\\[ \\frac{135,405}{153,982} \\approx 0.93 \\]", False),
    (GM_Q, "43.3%", "\\[ \\frac{170{,}782}{394{,}328} \\times 100 \\approx 43.3\\% \\]", True),
    (GM_Q, "43.3%", "\\[ \\frac{170{,}782}{394{,}328} \\times 100 \\approx 41.8\\% \\]", False),
    (REV_Q, "$394,328 million", "Total net sales:\n- Products: $316,199 million\n- Services: $78,129 million\n"
                                "- **Total: $394,328 million**", True),
    (REV_Q, "$394,328 million", "- Products: $316,199 million\n- Services: $78,129 million", False),
    (REV_Q, "$394,328 million", "- Products: $316,199 million\n- Services: $78,129 million\n- iPhone: $205,489 "
                                "million", False),
    (FCF_Q, "$111,443 million", "**Free cash flow: $111,443 million**\n\n| Item | Amount |\n|---|---|\n"
                                "| Operating cash flow | $122,151 million |\n| Capex | ($10,708 million) |", True),
    (FCF_Q, "$111,443 million", "Free cash flow was about $111.4 billion ($122.2 billion of operating cash flow "
                                "less $10.7 billion of capex).", True),
    (FCF_Q, "$111,443 million", "Free cash flow was about $122.2 billion ($111.4 billion of operating cash flow "
                                "plus $10.7 billion of capex).", False),
    (AVG_Q, "$40,778.5 million", "Average net PP&E was $40,778.5 million (FY2022: $42,117 million; FY2021: "
                                 "$39,440 million).", True),
    (AVG_Q, "$40,778.5 million", "FY2022: $42,117 million; FY2021: $39,440 million.", False),
    # a verbless list whose last figure is the sum of the others, unlabelled: still a list
    (REV_Q, "$394,328 million", "$316,199 million; $78,129 million; $394,328 million", False),
]


@pytest.mark.parametrize("question,reference,answer,correct", WRITTEN, ids=[w[2][:50] for w in WRITTEN])
def test_latex_totals_and_word_operators(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


# ---------------------------------------------------------------------------------------------
# 10. Contracts from the reference alone (an imported set: question and reference, nothing else)

EXT_Q = "In which fiscal year from 2020 to 2022 did Apple report its highest total net sales?"
HIGHER_Q = "Was Apple's total net sales higher in fiscal 2022 or in fiscal 2021?"
RISE_Q = "Did Boeing's revenue rise or fall in fiscal 2021 compared with fiscal 2020?"
RISE_REF = "It rose (higher in fiscal 2021): $62,286 million in fiscal 2021 vs $58,158 million in fiscal 2020."
BOTH_Q = "What were Nvidia's revenue and its CFO in fiscal 2025?"
BOTH_REF = "Total revenue: $130,497 million; Net cash provided by operating activities: $64,089 million."
FROM_REFERENCE = [
    # a year asked: the year decides, whatever figure the reference adds
    (EXT_Q, "Fiscal 2022, with $394,328 million.", "Fiscal 2022.", True),
    (EXT_Q, "Fiscal 2022, with $394,328 million.", "| Fiscal year | Net sales |\n|---|---|\n| 2020 | $274,515M |\n"
                                                  "| 2021 | $365,817M |\n| 2022 | $394,328M |\n\nThe highest was fiscal 2022.",
     True),
    (EXT_Q, "Fiscal 2022, with $394,328 million.", "Fiscal 2021.", False),
    (EXT_Q, "Fiscal 2022, with $394,328 million.", "FY2020: $274.5B; FY2021: $365.8B; FY2022: $394.3B", False),
    (HIGHER_Q, "Higher in fiscal 2022: $394,328 million in fiscal 2022 vs $365,817 million in fiscal 2021.",
     "They were lower in fiscal 2021.", True),
    (HIGHER_Q, "Higher in fiscal 2022: $394,328 million in fiscal 2022 vs $365,817 million in fiscal 2021.",
     "Fiscal 2021.", False),
    ("In which year did Apple report total net sales of $394,328 million?", "2022", "In fiscal 2022.", True),
    ("In which year did Apple report total net sales of $394,328 million?", "2022", "In fiscal 2021.", False),
    # a direction asked: the reference's lead decides
    (RISE_Q, RISE_REF, "Higher.", True),
    (RISE_Q, RISE_REF, "Higher. The figures: fiscal 2021: $62,286 million; fiscal 2020: $58,158 million.", True),
    (RISE_Q, RISE_REF, "It fell.", False),
    (RISE_Q, RISE_REF, "It rose or fell slightly.", False),
    # two quantities asked, each under its label in the reference
    (BOTH_Q, BOTH_REF, "Total revenue was $130,497 million and net cash provided by operating activities was "
                       "$64,089 million.", True),
    (BOTH_Q, BOTH_REF, "Total revenue was $64,089 million and net cash provided by operating activities was "
                       "$130,497 million.", False),
    (BOTH_Q, BOTH_REF, "Total revenue was $130,497 million.", False),
    # a reference whose working is nested in brackets is still one figure
    (CAPEX_PCT_Q, "3.0% (capital expenditures FY2021 = (11,085); sales FY2021 = 365,817).", "3.0", True),
    (CAPEX_PCT_Q, "3.0% (capital expenditures FY2021 = (11,085); sales FY2021 = 365,817).", "0.030% in fiscal 2021.",
     False),
]


@pytest.mark.parametrize("question,reference,answer,correct", FROM_REFERENCE, ids=[x[2][:50] for x in FROM_REFERENCE])
def test_contracts_from_the_reference_alone(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


DEBT_Q = "How much did PepsiCo raise in debt in FY2023?"
DEBT_REF = "PepsiCo raised $2.5 billion in 2023 through issuance of 5.25% Senior Notes due 2033."
LIABILITY_Q = "What was the largest liability in American Express's balance sheet in 2022?"
OF_KIND = [
    # an amount asked: a percentage or a per-share figure of the reference does not compete
    (DEBT_Q, DEBT_REF, "About $2.5 billion, through 5.25% senior notes.", True),
    (DEBT_Q, DEBT_REF, "It raised $3.0 billion.", False),
    ("What was the amount of total dividends paid by Coca-Cola in FY2022?",
     "Coca-Cola paid total dividends of $7,616 million in 2022, or $1.76 per share.", "$7.6 billion", True),
    ("What was the amount of total dividends paid by Coca-Cola in FY2022?",
     "Coca-Cola paid total dividends of $7,616 million in 2022, or $1.76 per share.", "$1.76 per share", False),
    # a reference that is a name
    (LIABILITY_Q, "Customer deposits", "Customer deposits, at $110.2 billion.", True),
    (LIABILITY_Q, "Customer deposits", "Long-term debt was the largest liability.", False),
]


@pytest.mark.parametrize("question,reference,answer,correct", OF_KIND, ids=[x[2][:50] for x in OF_KIND])
def test_reference_figures_of_the_asked_kind_and_names(question, reference, answer, correct):
    d = decide(answer, question, reference)
    assert d.decided and d.correct is correct, d


def test_by_how_much_may_be_an_amount_or_a_percentage():
    c = contract_from_text("By how much did Pfizer's total revenues change between 2021 and 2022?",
                           "Pfizer's total revenues increased by $19.3 billion, or 23%, from $81.3 billion in 2021 "
                           "to $100.3 billion in 2022.")
    assert not c.derived and "competing" in c.reason


def test_a_threshold_question_is_not_a_direction():
    q = "Did Apple's operating expenses exceed $50 billion in fiscal 2022?"
    d = decide("Operating expenses rose to $51.3 billion.", q, "Yes. Operating expenses were $51,345 million.")
    assert d.decided and d.correct is False and d.non_committal, d   # rising is not exceeding: no commitment


def test_a_year_asked_with_a_second_part_is_no_year_choice():
    from finrag_pipeline.core.scoring.answer_contract import year_choice_contract

    q = "Which year, 2021 or 2022, had the higher gross margin, and by how much?"
    assert year_choice_contract(q, "2022, by 1.5 percentage points.") is None
    assert year_choice_contract(EXT_Q, "Fiscal 2022, with $394,328 million.").choice == "FY2022"


# A cause question's reference figures support the explanation; they are never the asked value.
@pytest.mark.parametrize("question", [
    "What was the main driver of Amazon's other income (expense), net of $(16.8) billion in 2022?",
    "What was the biggest factor behind Boeing's 2021 operating loss?",
    "What drove the $2.2 billion increase in Microsoft's research and development expense?",
])
def test_a_cause_question_gets_key_facts_not_a_value(question):
    from finrag_pipeline.core.scoring.answer_contract import contract_from_text

    contract = contract_from_text(question, "A $12.7 billion valuation loss on its investment in Rivian.")
    assert contract.values == [] and contract.choice is None
    assert "12.7" in " ".join(contract.key_facts)
