"""The calculator prints exactly the decimals and the scale a question asks for (issue 26, tidy7).

Each row: a phrasing of the rounding / scale instruction, the printed figure the answer must start with, and the
reference an analyst would write. Figures read in the sample filings: MSFT_2022_10K p.57 (total revenue 198,270;
operating income 83,383; net income 72,738; diluted EPS 9.65, all in millions), APPLE_2022_10K p.34 (total current
assets 135,405; total current liabilities 153,982), BOEING_2021_10K p.64 (net cash used by operating activities
(3,416)), AMZN_2022_10K p.37 (net loss (2,722)).
"""

from __future__ import annotations

import re

import pytest
from _analyst_corpus import parsed_samples

from finrag_pipeline.core.analyst.definitions import clean_question
from finrag_pipeline.core.analyst.store import FactStore
from finrag_pipeline.core.asked import requested_units
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.evaluation.answer_decision import decide


@pytest.fixture(scope="module")
def calc():
    return calculator_answerer(FactStore.from_parsed(parsed_samples().values()))


MSFT_REV = "What was Microsoft's total revenue in fiscal 2022"
MSFT_OM = "What was Microsoft's operating margin in fiscal 2022"

# (question, the figure printed first, a reference written by an analyst)
CASES = [
    # amounts: 198,270 million
    (f"{MSFT_REV}? Answer in USD millions, rounded to one decimal place.", "$198,270.0 million —", "$198,270 million"),
    (f"{MSFT_REV}? Answer in USD millions, one decimal place.", "$198,270.0 million —", "$198,270 million"),
    (f"{MSFT_REV} in USD billions?", "$198.27 billion —", "$198.3 billion"),
    (f"{MSFT_REV} in USD billions, rounded to one decimal place?", "$198.3 billion —", "$198.3 billion"),
    (f"{MSFT_REV} in USD billions, rounded to the nearest whole number?", "$198 billion —", "$198 billion"),
    (f"{MSFT_REV} in $ thousands?", "$198,270,000 thousand —", "$198,270,000 thousand"),
    (f"{MSFT_REV}, to the nearest million?", "$198,270 million —", "$198,270 million"),
    (f"{MSFT_REV}, to the nearest billion?", "$198 billion —", "$198 billion"),
    (f"{MSFT_REV} in billions, 2 dp?", "$198.27 billion —", "$198.27 billion"),
    ("What was Microsoft's net income in fiscal 2022 in millions, rounded to two decimal places?",
     "$72,738.00 million —", "$72,738 million"),
    # a negative amount in a larger scale than printed: (3,416) and (2,722) million
    ("What was Boeing's 2021 operating cash flow in USD billions, rounded to one decimal place?",
     "-$3.4 billion —", "-$3.4 billion"),
    ("What was Amazon's net income in 2022 in USD billions to two decimals?", "-$2.72 billion —", "-$2.72 billion"),
    # percentages: 83,383 / 198,270 = 42.0553%
    (f"{MSFT_OM}, as a percentage to one decimal?", "42.1% —", "42.1%"),
    (f"{MSFT_OM}? Round your answer to 2 decimal places.", "42.06% —", "42.06%"),
    (f"{MSFT_OM}, rounded to the nearest whole number?", "42% —", "42%"),
    (f"{MSFT_OM} to the nearest tenth of a percent?", "42.1% —", "42.1%"),
    # ratios: 135,405 / 153,982 = 0.8794
    ("What was Apple's FY2022 current ratio? Answer with two decimals.", "0.88 —", "0.88"),
    ("What was Apple's FY2022 current ratio to one decimal place?", "0.9 —", "0.9"),
    # (23,646 cash + 24,658 marketable securities + 28,184 receivables) / 153,982 = 0.4967
    ("What was Apple's FY2022 quick ratio? Round to three decimal places.", "0.497 —", "0.497"),
    # percentage points: 83,383 / 198,270 - 69,916 / 168,088 (MSFT p.57) = 42.06% - 41.59%
    ("How many percentage points did Microsoft's operating margin change from fiscal 2021 to fiscal 2022? Round to "
     "two decimals.", "0.46 percentage points —", "0.46 percentage points"),
    # an average and a choice between years, in a larger scale: (168,088 + 198,270) / 2 = 183,179
    ("What was Microsoft's average total revenue over fiscal 2021 and 2022 in USD billions, one decimal place?",
     "$183.2 billion —", "$183.2 billion"),
    ("Which was higher, Microsoft's revenue in fiscal 2021 or 2022? Answer in USD billions with one decimal.",
     "FY2022 (higher): $198.3 billion in FY2022 vs $168.1 billion in FY2021 —", "FY2022"),
    # per share: 9.65
    ("What was Microsoft's diluted EPS in fiscal 2022, rounded to one decimal place?", "$9.7 per share —", "$9.65"),
    # days: 365 * average receivables / revenue; the rounding phrase is no qualifier of the line ("rounded")
    ("What was Apple's FY2022 days sales outstanding, rounded to the nearest whole number?", "25 days —", "25 days"),
    ("What was Apple's FY2022 DSO (accounts receivable / revenue * 365)? Round to two decimal places.",
     "26.09 days —", "26.09 days"),
    # 365 * average inventories (4,946; 6,580) / cost of sales 223,546 (APPLE_2022_10K p.32, p.34)
    ("What was Apple's days inventory outstanding in FY2022 to one decimal place?", "9.4 days —", "9.4 days"),
]


@pytest.mark.parametrize("question,printed,reference", CASES)
def test_the_answer_prints_the_decimals_and_scale_asked(calc, question, printed, reference):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and r.text.startswith(printed), r.text
    # the scorer still reads the printed figure right, and an answer that knows nothing scores 0
    assert decide(r.text, question, reference).correct is True, r.text
    assert decide("I don't know; the filing does not say.", question, reference).correct is not True
    # a wrong figure in the same style is wrong (its leading digit moved by 3)
    wrong = re.sub(r"\d", lambda m: str((int(m.group()) + 3) % 10), printed, count=1)
    assert decide(wrong, question, reference).correct is False, wrong


@pytest.mark.parametrize("question,decimals,scale", [
    ("Answer in USD millions, one decimal place.", 1, 1e6),
    ("Answer in USD millions with one decimal.", 1, 1e6),
    ("What was it, to the nearest million?", 0, 1e6),
    ("What was it in $ thousands?", None, 1e3),
    ("Round your answer to 2 decimal places.", 2, None),
    ("as a percentage, two decimals", 2, None),
    ("to the nearest whole number", 0, None),
    ("in USD billions, rounded to the nearest billion", 0, 1e9),
    ("What was revenue in FY2022?", None, None),
])
def test_requested_units_reads_the_rounding_and_scale(question, decimals, scale):
    asked = requested_units(question)
    assert (asked.decimals, asked.scale) == (decimals, scale)


@pytest.mark.parametrize("question,cleaned", [
    ("What was Apple's FY2022 current ratio to one decimal place?", "What was Apple's FY2022 current ratio?"),
    ("What was Apple's FY2022 DSO, rounded to the nearest whole number?", "What was Apple's FY2022 DSO?"),
    ("What was Microsoft's FY2022 gross margin as a percentage with two decimals?",
     "What was Microsoft's FY2022 gross margin as a percentage?"),
])
def test_the_rounding_phrase_is_no_part_of_the_line_asked(question, cleaned):
    assert clean_question(question) == cleaned


# yes/no judgements: the ratio or percentage the verdict rests on is shown at the rounding asked; amounts keep their
# printed form. Apple 135,405 / 153,982 = 0.87935 (p.34); Microsoft 83,383 / 198,270 = 42.055% (p.57)
JUDGED = [
    ("Was Apple's current ratio above 1.0 at the end of FY2022? Round to three decimal places.",
     "current ratio was 0.879 in FY2022, below 1.000", "No. The current ratio was 0.879."),
    ("Was Apple's current ratio above 1.0 at the end of FY2022?", "current ratio was 0.88 in FY2022, below 1.00",
     "No, 0.88."),
    ("Did Microsoft's operating margin exceed 40% in fiscal 2022? Answer with two decimals.",
     "operating margin was 42.06% in FY2022, above 40.00%", "Yes: 42.06%"),
    ("Did Microsoft's operating margin exceed 40% in fiscal 2022?", "operating margin was 42.1% in FY2022, above 40.0%",
     "Yes"),
    ("Did Microsoft's revenue exceed $150 billion in fiscal 2022? Round to one decimal place.",
     "revenue was $198,270 million in FY2022, above $150,000 million", "Yes, $198.3 billion"),
]


@pytest.mark.parametrize("question,reason,reference", JUDGED)
def test_a_judgement_shows_its_figures_at_the_rounding_asked(calc, question, reason, reference):
    r = calc.answer(question, [])
    assert r.response_state == "answered" and reason in r.text, r.text
    assert decide(r.text, question, reference).correct is True, r.text
    verdict = reference.split(maxsplit=1)[0].strip(",.:")
    wrong = "No." if verdict == "Yes" else "Yes."
    assert decide(wrong, question, reference).correct is False
