"""The judgement rules of assets_config/judgements.yaml on hand-computed series, both directions each.

Series are the companies' income-statement figures (USD millions, fiscal years as labelled); Microsoft's and
Amazon's checked in the demo PDFs (MICROSOFT_2022_10K p.57, AMAZON_2022_10K p.37), Adobe's from its FY2022 10-K
(not in the corpus); Nike's in the robustness PDF:
- Adobe operating margin FY2020-FY2022: 4,237 / 12,868 = 32.9%, 5,802 / 15,785 = 36.8%, 6,098 / 17,606 = 34.6%
  (risen over three years, fallen in the asked year: not "improving as of FY2022").
- Microsoft operating margin FY2020-FY2022: 52,959 / 143,015 = 37.0%, 69,916 / 168,088 = 41.6%,
  83,383 / 198,270 = 42.1% (the last step +0.47 points: below the margin, not a reversal).
- Amazon operating margin 2020-2022: 22,899 / 386,064 = 5.9%, 24,879 / 469,822 = 5.3%, 12,248 / 513,983 = 2.4%.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from finrag_pipeline.core.analyst.judgements import (
    JudgementConfig,
    TrendRule,
    decide_trend,
    load_judgement_config,
    read_judgement,
    stated_strictly,
)
from finrag_pipeline.core.analyst.lexicon import Lexicon

LEX = Lexicon.load_default()
MARGIN = LEX.concepts["operating_margin"]


def _series(*pairs):
    return [(y, Decimal(n) / Decimal(d)) for y, n, d in pairs]


ADOBE = _series((2020, 4237, 12868), (2021, 5802, 15785), (2022, 6098, 17606))
MSFT = _series((2020, 52959, 143015), (2021, 69916, 168088), (2022, 83383, 198270))
AMZN = _series((2020, 22899, 386064), (2021, 24879, 469822), (2022, 12248, 513983))
# Nike gross margin FY2018-FY2020 (NIKE_2020_10K p.58): 15,956 / 36,397 = 43.8%, 17,474 / 39,117 = 44.7%,
# 16,241 / 37,403 = 43.4%: little changed over three years, down 1.2 points in the asked year
NKE_GM = _series((2018, 15956, 36397), (2019, 17474, 39117), (2020, 16241, 37403))
GM = LEX.concepts["gross_margin_pct"]


@pytest.mark.parametrize("series,direction,answer", [
    (ADOBE, "better", "No"),    # up over three years, down in the asked year
    (MSFT, "better", "Yes"),    # up, the last step small but not back
    (AMZN, "better", "No"),
    (AMZN, "down", "Yes"),      # "is operating margin declining"
    (MSFT, "down", "No"),
    # Apple free cash flow conversion FY2020-FY2022: (80,674 - 7,309) / 57,411 = 1.28, (104,038 - 11,085) / 94,680 =
    # 0.98, (122,151 - 10,708) / 99,803 = 1.12 (APPLE_2022_10K p.32, p.36): below FY2020, up in the asked year
    (_series((2020, 73365, 57411), (2021, 92953, 94680), (2022, 111443, 99803)), "better", "Yes"),
])
def test_improving_profile_both_directions(series, direction, answer):
    d = decide_trend(series, MARGIN, direction, "percent", TrendRule(), lambda v: f"{v * 100:.1f}%")
    assert d.answer == answer
    assert "FY2020" in d.reason and "FY2022" in d.reason  # the series it rests on is said


@pytest.mark.parametrize("direction,answer", [("down", "Yes"), ("better", "No"), ("worse", "Yes"), ("up", "No")])
def test_the_asked_year_decides_a_flat_series(direction, answer):
    d = decide_trend(NKE_GM, GM, direction, "percent", TrendRule(), lambda v: f"{v * 100:.1f}%")
    assert d.answer == answer and "FY2019" in d.reason


def test_the_reversal_rule_is_configuration():
    d = decide_trend(ADOBE, MARGIN, "better", "percent", TrendRule(latest_year_decides=False), str)
    assert d.answer == "Yes"  # without the rule: the first year against the last only
    assert load_judgement_config().trend.latest_year_decides is True
    with pytest.raises(ValueError):
        JudgementConfig.model_validate({"trend": {"latest_year_decide": True}})


def test_a_plain_did_it_rise_is_year_on_year_without_margin():
    d = decide_trend(MSFT[1:], MARGIN, "up", "percent", TrendRule(), str, material=False)
    assert d.answer == "Yes"


@pytest.mark.parametrize("question,kind,metric", [
    ("Does Adobe have an improving Free cashflow conversion as of FY2022?", "trend", "fcf_conversion"),
    ("Does Intel have an improving gross margin profile as of FY2020? If gross margin is not a useful metric for a "
     "company like this, then state that and explain why.", "trend", "gross_margin_pct"),
    ("Is Intel a capital-intensive business based on FY2020 data?", "capital_intensive", None),
    ("Does Nike have positive working capital based on FY2020 data?", "sign", "working_capital"),
    ("Does Costco have a reasonably healthy liquidity profile based on its quick ratio for FY2020?", "liquidity",
     "quick_ratio"),
    ("Is Nike a high-growth company as of FY2020?", "high_growth", None),
    ("Has Microsoft's total debt increased between FY2021 and FY2022?", "trend", "total_debt"),
])
def test_judgement_questions_read_their_rule(question, kind, metric):
    j = read_judgement(question, LEX)
    assert j is not None and j.kind == kind
    assert (j.metric.key if j.metric else None) == metric


@pytest.mark.parametrize("question,metric,threshold,scale,direction", [
    # the quantity compared is the one named in the comparison's own clause, not the last operand of a definition
    # before it, nor a parenthesised formula's
    ("Taking its quick ratio as cash and cash equivalents divided by total current liabilities, does Foot Locker have "
     "a quick ratio above 1.0 at the end of fiscal 2021?", "quick_ratio", Decimal("1.0"), None, "up"),
    ("Was Apple's operating margin (operating income / revenue) above 30% in FY2022?", "operating_margin",
     Decimal("0.30"), None, "up"),
    ("Was Apple's current ratio, as of FY2022, above 1.0?", "current_ratio", Decimal("1.0"), None, "up"),
    ("Defining free cash flow as cash from operations minus capital expenditures, was Apple's free cash flow above "
     "$100 billion in FY2022?", "free_cash_flow", Decimal("100"), 10**9, "up"),
    ("Treating the current ratio as current assets over current liabilities, was Boeing's current ratio below 1.5 in "
     "2021?", "current_ratio", Decimal("1.5"), None, "down"),
])
def test_a_threshold_compares_the_quantity_of_its_own_clause(question, metric, threshold, scale, direction):
    j = read_judgement(question, LEX)
    assert (j.kind, j.metric.key, j.threshold, j.threshold_scale, j.direction) == (
        "threshold", metric, threshold, scale, direction)


@pytest.mark.parametrize("question,kind", [
    # two years offered: one of them is the answer (a choice, answered by the calculator's comparison)
    ("Did Oracle's net income grow more in FY2018 or FY2019?", None),
    ("Was Boston Properties' operating margin higher in fiscal 2014 or fiscal 2015?", None),
    ("Did Walmart's revenue grow faster in 2020, or in 2021?", None),
    # one year asked: the yes/no judgement stays
    ("Did Oracle's net income grow in FY2019?", "trend"),
    ("Does Walmart have positive working capital based on FY2021 data?", "sign"),
    ("Is Boston Properties a capital-intensive business based on FY2015 data?", "capital_intensive"),
])
def test_a_choice_between_two_years_is_no_yes_no(question, kind):
    j = read_judgement(question, LEX)
    assert (j.kind if j else None) == kind


@pytest.mark.parametrize("question,kind,threshold,strict", [
    # a lead clause that sets the terms comes before the yes/no verb; a threshold the question states is the rule's
    ("Treating annual revenue growth above 15% as high growth, was Microsoft a high-growth company in fiscal 2022?",
     "high_growth", Decimal("0.15"), True),
    ("Assuming revenue growth of at least 20% makes a company high growth, is Nike a high-growth company in FY2020?",
     "high_growth", Decimal("0.20"), False),
    ("Considering revenue growth over 10% as fast, was Oracle a high-growth business in FY2019?",
     "high_growth", Decimal("0.10"), True),
    ("Is Intel a high-growth company as of FY2020?", "high_growth", None, False),  # the configured 15%
    ("Using the balance sheet, does Apple have a healthy liquidity profile at the end of FY2022?", "liquidity", None, False),
    ("Given its FY2020 statements, is Costco a capital-intensive business?", "capital_intensive", None, False),
    ("Base the answer on the balance sheet. Is Boeing liquid at the end of 2021?", "liquidity", None, False),
])
def test_a_lead_clause_and_a_stated_threshold(question, kind, threshold, strict):
    j = read_judgement(question, LEX)
    assert j is not None and j.kind == kind and j.threshold == threshold
    assert j.strict is strict   # a typed field of the judgement, never a word in its notes


@pytest.mark.parametrize("question", [
    # no yes/no question after the lead clause: a figure is asked
    "Treating capex as purchases of property and equipment, what was Apple's capex in FY2022?",
    "Using the balance sheet, what was Apple's current ratio at the end of FY2022?",
])
def test_a_lead_clause_before_a_figure_question_is_no_judgement(question):
    assert read_judgement(question, LEX) is None


@pytest.mark.parametrize("question,metric,threshold,strict", [
    # a liquidity floor the question states is the rule's, for the ratio it names; "above" passes it strictly
    ("Treating a current ratio of at least 1.2 as healthy, does Walmart have a healthy liquidity profile at the end of "
     "FY2021?", "current_ratio", Decimal("1.2"), False),
    ("Does Apple have a healthy liquidity profile based on its quick ratio at the end of FY2022? Treat 1.0 or more as "
     "healthy.", "quick_ratio", Decimal("1.0"), False),
    ("Considering a quick ratio of 0.8 or higher as adequate, is Costco's liquidity healthy in FY2020?", "quick_ratio",
     Decimal("0.8"), False),
    ("Does Apple have a healthy liquidity profile based on its quick ratio at the end of FY2022? Take a value above 1.0 "
     "as healthy.", "quick_ratio", Decimal("1.0"), True),
    ("Is Costco liquid at the end of FY2020? A current ratio over 1.1 counts as healthy.", "current_ratio",
     Decimal("1.1"), True),
    ("Does Apple have a healthy liquidity profile at the end of FY2022?", "current_ratio", None, False),  # the configured floor
])
def test_a_stated_liquidity_floor(question, metric, threshold, strict):
    j = read_judgement(question, LEX)
    assert j is not None and j.kind == "liquidity" and j.metric.key == metric and j.threshold == threshold
    assert j.strict is strict


@pytest.mark.parametrize("words,strict", [
    ("growth above", True), ("growth over", True), ("growth of more than", True), ("growth exceeding", True),
    ("ratio > 1.0", True), ("growth of at least", False), ("growth of", False), ("1.0 or more", False),
    ("ratio >= 1.0", False), ("a ratio over 1.2 or higher", False),
])
def test_stated_strictly(words, strict):
    assert stated_strictly(words) is strict
