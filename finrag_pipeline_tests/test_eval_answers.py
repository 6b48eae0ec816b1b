"""Answer metrics, the extractive answerer and the LLM answerer/judge (LLM mocked at litellm only)."""

from __future__ import annotations

import os

import pytest

from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer, LLMAnswerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import format_printed_figure
from finrag_pipeline.core.scoring import answer_metrics as am

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

F = "AAPL-2022-10K"
ROW = ("Apple 10-K FY2022 | Consolidated Statements of Operations | Total net sales | 2022: 394,328 | "
       "2021: 365,817 | 2020: 274,515 | USD millions")
ROW_NI = ("Apple 10-K FY2022 | Consolidated Statements of Operations | Net income | 2022: 99,803 | "
          "2021: 94,680 | 2020: 57,411 | USD millions")
TABLE = ("Apple 10-K FY2022 | Consolidated Balance Sheets | USD millions\n | September 24, 2022 | September 25, 2021\n"
         "Total current assets | 135,405 | 134,836\nTotal assets | 352,755 | 351,002")
PROSE = ("Apple 10-K FY2022. Total net sales increased 8% or $28.5 billion during 2022 compared to 2021. "
         "The Company's gross margin percentage was 43.3% in 2022.")


def hit(text, page, rank, chunk_id=None, filing=F):
    return Hit(chunk_id=chunk_id or f"c{page}-{rank}", score=1.0 / rank, rank=rank, filing_id=filing,
               page_start=page, page_end=page, chunk_type="table_row", text=text, stage="test")


def values(value, unit="USD millions", tolerance=0.0, period=None):
    from finrag_pipeline.core.scoring.answer_contract import answer_value

    return [answer_value(value, unit, period=period, tolerance=tolerance)]


def correct(answer, value, unit="USD millions", tolerance=0.0):
    return am.correctness(answer, answer_values=values(value, unit, tolerance)).correct


# ---------------------------------------------------------------------------------------------
# value matching (the full adversarial table is test_answer_scoring.py)

FIGURE_CASES = [
    ("$394.3 billion", 394328, "USD millions", 0.0, True),
    ("$394 billion", 394328, "USD millions", 0.0, True),        # rounded to whole billions
    ("$395 billion", 394328, "USD millions", 0.0, False),       # 394.328 does not round to 395
    ("394,328 million", 394328, "USD millions", 0.0, True),
    ("$394,328", 394328, "USD millions", 0.0, False),           # says dollars: the wrong scale
    ("$365.8 billion", 394328, "USD millions", 0.0, False),     # the other year's figure
    ("12.5%", 12.5, "percent", 0.0, True),
    ("12.5%", 0.125, "ratio", 0.0, True),                       # a ratio stated as a percentage
    ("13%", 12.5, "percent", 0.0, False),                       # a lookup is exact up to 0.5% rounding
    ("13%", 12.5, "percent", 0.05, True),                       # ... a computed value has its tolerance
    ("14%", 12.5, "percent", 0.05, False),
    ("$12.5 million", 12.5, "percent", 0.0, False),             # an amount is not a percentage
    ("(1,234) million", -1234, "USD millions", 0.0, True),      # accounting parentheses
    ("-$1.2 billion", -1234, "USD millions", 0.0, False),       # 1.2 is 2.8% off 1.234: not a rounding
    ("-$1.23 billion", -1234, "USD millions", 0.0, True),
    ("a loss of $1,234 million", -1234, "USD millions", 0.0, True),  # sign written as a word
    ("$1,234 million", -1234, "USD millions", 0.0, True),       # a lookup's sign is not asked (outflows)
    ("it grew by $1,234 million", -1234, "USD millions", 0.0, False),  # ... but an increase is not a decrease
    ("$4.2B", 4200, "USD millions", 0.0, True),
]


@pytest.mark.parametrize(("answer", "value", "unit", "tolerance", "ok"), FIGURE_CASES)
def test_value_match_table(answer, value, unit, tolerance, ok):
    assert correct(answer, value, unit, tolerance) == (1.0 if ok else 0.0)


def test_two_asked_values_and_nothing_to_commit_to():
    two = values(394328) + values(99803)
    assert am.correctness("$394,328 million and $99,803 million", answer_values=two).correct == 1.0
    v = am.correctness("$394,328 million", answer_values=two)
    assert v.correct == 0.0 and "99,803" in v.reason
    assert am.correctness("anything", answer_values=[]).correct is None
    assert am.correctness("no figure here", answer_values=values(394328)).non_committal


def test_years_and_citation_markers_are_not_figures():
    figs = am.parse_figures("In fiscal 2022 (page 40, Item 7) net sales were $394.3 billion")
    assert [f.text for f in figs] == ["$394.3 billion"]


# ---------------------------------------------------------------------------------------------
# grounding, period, citations


def test_grounding():
    assert am.grounding("Total net sales were $394.3 billion in 2022.", [ROW])[0] == 1.0
    score, why = am.grounding("Total net sales were $400 billion, up 8%.", [ROW])
    assert score == 0.0 and "$400 billion" in why and "8%" in why
    assert am.grounding("Net sales grew 8%.", [PROSE])[0] == 1.0
    assert am.grounding("Sales grew.", [ROW])[0] is None


def test_period_check():
    assert am.period_check("In fiscal 2022 sales were $394.3 billion", ["FY2022"], [ROW])[0] == 1.0
    assert am.period_check("In fiscal 2022 sales were $365.8 billion", ["FY2022"], [ROW])[0] == 0.0
    assert am.period_check("Sales were $394.3 billion", ["FY2022"], [])[0] == 0.0
    assert am.period_check("$394,328 million and $365,817 million", ["FY2022", "FY2021"], [ROW])[0] == 1.0
    assert am.period_check("$351,002 million", ["FY2021"], [TABLE])[0] == 1.0   # header line of dates
    assert am.period_check("$352,755 million", ["FY2021"], [TABLE])[0] == 0.0
    assert am.period_check("x", [])[0] is None


def test_citation_precision_recall():
    gold = [[(F, 40), (F, 28)], [(F, 60)]]
    (p, _), (r, _) = am.citation_scores([(F, 40), (F, 99)], gold)
    assert (p, r) == (0.5, 0.5)
    (p, _), (r, _) = am.citation_scores([(F, 28), (F, 60)], gold)
    assert (p, r) == (1.0, 1.0)
    (p, _), (r, _) = am.citation_scores([], gold)
    assert p is None and r == 0.0
    (p, _), (r, _) = am.citation_scores([(F, 1)], [])
    assert p is None and r is None


def test_score_answer_state_policy():
    key = am.AnswerKey(answer_values=values(394328, period="FY2022"), asked_periods=["FY2022"],
                       gold_page_groups=[[(F, 40)]], gold_block_groups=[["c40"]])
    for state in ("backend_error", "invalid_output", "abstained", "insufficient_context", "no_evidence"):
        metrics, notes = am.score_answer(answer="", response_state=state, citations=[], cited_texts=[], key=key)
        assert all(v == 0.0 for m, v in metrics.items()
                   if m not in (*am.RATE_METRICS, *am.JUDGE_METRICS, "key_fact_recall")), state
        assert metrics["non_committal"] is None and metrics["abstention_correct"] is None
        # the reference has no key facts: recall is not computable, for a failure as for an answer
        assert metrics["key_fact_recall"] is None and notes["key_fact_recall"] == am.NO_KEY_FACTS
        with_facts = am.AnswerKey(**{**key.__dict__, "key_facts": ["iPhone"]})
        assert am.score_answer(answer="", response_state=state, citations=[], cited_texts=[],
                               key=with_facts)[0]["key_fact_recall"] == 0.0
        assert all(metrics[m] is None for m in am.JUDGE_METRICS)   # no judge: not computed
        assert state in notes["correctness"]
    # an unanswerable question: abstaining is right, other metrics have nothing to compare to
    unanswerable = am.AnswerKey(asked_periods=["FY2022"])
    metrics, _ = am.score_answer(answer="", response_state="abstained", citations=[], cited_texts=[],
                                 key=unanswerable)
    assert metrics["state_correct"] == 1.0 and metrics["abstention_correct"] == 1.0
    assert metrics["correctness"] is None
    metrics, _ = am.score_answer(answer="", response_state="backend_error", citations=[], cited_texts=[],
                                 key=unanswerable)
    assert metrics["state_correct"] == 0.0 and metrics["abstention_correct"] == 0.0
    with pytest.raises(ValueError):
        am.score_answer(answer="", response_state="weird", citations=[], cited_texts=[], key=unanswerable)


# ---------------------------------------------------------------------------------------------
# extractive answerer


def test_extractive_answers_table_row_with_unit_and_page():
    hits = [hit(ROW_NI, 28, 1), hit(ROW, 28, 2, chunk_id="sales")]
    res = ExtractiveAnswerer().answer("What were Apple's total net sales in fiscal 2022?", hits, periods=["FY2022"])
    assert res.response_state == "answered"
    assert "$394,328 million" in res.text and "2022" in res.text
    assert res.citations == [(F, 28, "sales")]
    assert correct(res.text, 394328) == 1.0
    assert am.grounding(res.text, [ROW])[0] == 1.0


def test_extractive_reads_whole_table_columns_and_prior_year():
    res = ExtractiveAnswerer().answer("What were total assets as of fiscal year end 2021?", [hit(TABLE, 30, 1)])
    assert res.response_state == "answered" and "$351,002 million" in res.text


def test_extractive_comparative_two_periods():
    res = ExtractiveAnswerer().answer("Total net sales in 2022 and 2021?", [hit(ROW, 28, 1)])
    assert "$394,328 million" in res.text and "$365,817 million" in res.text


def test_extractive_prose_sentence():
    res = ExtractiveAnswerer().answer("What was the gross margin percentage in 2022?", [hit(PROSE, 25, 1)])
    assert res.response_state == "answered" and "43.3%" in res.text


def test_extractive_states():
    ex = ExtractiveAnswerer()
    assert ex.answer("Total net sales in 2022?", []).response_state == "no_evidence"
    res = ex.answer("What were total net sales in fiscal 2019?", [hit(ROW, 28, 1)])
    assert res.response_state == "insufficient_context" and res.details["missing_years"] == [2019]
    assert ex.answer("Who is the CEO's favourite auditor in 2022?", [hit(ROW, 28, 1)]).response_state == "abstained"


def test_format_printed_figure():
    assert format_printed_figure("394,328", "USD millions") == "$394,328 million"
    assert format_printed_figure("43.3", "percent") == "43.3%"
    assert format_printed_figure("15,943", "shares thousands") == "15,943 thousand shares"


# ---------------------------------------------------------------------------------------------
# LLM answerer and judge, mocked at the litellm edge only (mock_response)


def _client(mock: str):
    from finrag_pipeline.core.llm.client import LLMClient

    return LLMClient("openai/gpt-4o-mini", use_cache=False, mock_response=mock, name="mock")


def test_llm_answerer_states():
    hits = [hit(ROW, 28, 1, chunk_id="sales")]
    q = "What were total net sales in fiscal 2022?"
    ok = LLMAnswerer(_client('{"answer": "Total net sales were $394,328 million in fiscal 2022.", '
                             '"citations": [28], "abstain": false}'), prompt_type="few_shot")
    res = ok.answer(q, hits, ["FY2022"])
    assert res.response_state == "answered" and res.citations == [(F, 28, "sales")]
    assert res.prompt_tokens > 0
    bad_page = LLMAnswerer(_client('{"answer": "x $1", "citations": [99], "abstain": false}'))
    assert bad_page.answer(q, hits).response_state == "invalid_output"
    abstain = LLMAnswerer(_client('{"answer": "", "citations": [], "abstain": true}'), prompt_type="chain_of_thought")
    assert abstain.answer(q, hits).response_state == "abstained"
    not_json = LLMAnswerer(_client("I think it is about 394 billion"), prompt_type="persona_risk_analyst")
    assert not_json.answer(q, hits).response_state == "invalid_output"
    assert ok.answer(q, []).response_state == "no_evidence"
    with pytest.raises(ValueError):
        LLMAnswerer(_client("{}"), prompt_type="nope")


def test_llm_answerer_backend_error():
    from finrag_pipeline.core.llm.client import LLMClient

    dead = LLMClient("openai/x", use_cache=False, api_base="http://127.0.0.1:9/v1", api_key="x",
                     max_retries=0, timeout_s=5)
    res = LLMAnswerer(dead).answer("Total net sales in 2022?", [hit(ROW, 28, 1)])
    assert res.response_state == "backend_error" and res.error


def test_judge_faithfulness_and_relevancy():
    judge = am.LLMJudge(_client('{"claims": [{"claim": "sales $394.3B in 2022", "supported": true, "reason": "row"},'
                                '{"claim": "up 20%", "supported": false, "reason": "not in evidence"}],'
                                '"score": 0.9, "reason": "on topic"}'))
    score, verdicts = judge.faithfulness("q", "a", [ROW])
    assert score == 0.5 and verdicts[1]["reason"] == "not in evidence"
    assert judge.relevancy("q", "a") == (0.9, "on topic")
    broken = am.LLMJudge(_client("not json at all"))
    score, why = broken.faithfulness("q", "a", [ROW])
    assert score is None and "invalid_output" in why
    assert am.LLMJudge(_client('{"claims": []}')).faithfulness("q", "a", [ROW])[0] is None
