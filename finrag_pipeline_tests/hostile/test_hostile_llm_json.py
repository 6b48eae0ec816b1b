"""LLM replies cut off mid-JSON: repaired JSON is trusted only when the fields an answer needs were
complete before the cut; a truncated answer is invalid_output and never scores as correct."""

from __future__ import annotations

import pytest

from finrag_pipeline.core.llm.json_extract import extract_json_checked

FULL = '{"answer": "Total net sales were $394.3 billion.", "citations": [28], "abstain": false}'
TAIL_CUT = '{"answer": "Total net sales were $394.3 billion.", "citations": [28], "reasoning": "the table on pa'


@pytest.mark.parametrize("text, truncated, complete", [
    (FULL, False, True),
    ('Sure! ```json\n' + FULL + '\n```', False, True),
    (FULL[:-1], True, True),                                   # only the closing brace is missing
    (TAIL_CUT, True, True),                                     # cut inside an extra field
    ('{"answer": "Total net sales were $394', True, False),     # cut inside the answer
    ('{"answer": "394.3", "citations": [28, 2', True, False),   # cut inside the citations
    ('{"answer": "394.3", "citations": [2', True, False),
    ('{"answer": "394.3"', True, False),                        # citations never started
])
def test_truncation_is_detected_and_only_complete_fields_are_trusted(text, truncated, complete):
    got = extract_json_checked(text)
    assert got.truncated is truncated
    assert got.complete(("answer", "citations")) is complete


def test_a_cut_literal_is_not_complete():
    got = extract_json_checked('{"citations": [28], "answer": 394')   # 394 of 394.3?
    assert got.truncated and "citations" in got.complete_keys and "answer" not in got.complete_keys


# ---------------------------------------------------------------------------------------------
# Through the answerer: litellm's mock_response is the model's reply (the real client path).


def _answer(reply: str):
    pytest.importorskip("litellm")
    from finrag_pipeline.core.evaluation.answerers import LLMAnswerer
    from finrag_pipeline.core.llm.client import LLMClient
    from finrag_pipeline.core.models import Hit

    hits = [Hit("sales", 1.0, 1, "AAPL-2022-10K", 28, 28, "table_row",
                "Total net sales 394,328 365,817 274,515", "bm25")]
    client = LLMClient("openai/gpt-4o-mini", use_cache=False, mock_response=reply, name="mock")
    return LLMAnswerer(client).answer("What were total net sales in fiscal 2022?", hits)


def test_truncated_answers_are_invalid_output_and_complete_ones_are_answered():
    assert _answer(FULL).response_state == "answered"
    cut = _answer('{"answer": "Total net sales were $394.3 billion.", "citations": [2')
    assert cut.response_state == "invalid_output" and "truncated" in cut.error and cut.citations == []
    cut_answer = _answer('{"answer": "Total net sales were $39')
    assert cut_answer.response_state == "invalid_output"
    # cut after every needed field ended: the answer stands
    tail_cut = _answer(TAIL_CUT)
    assert tail_cut.response_state == "answered" and tail_cut.citations == [("AAPL-2022-10K", 28, "sales")]


def test_a_truncated_judge_verdict_is_no_verdict():
    pytest.importorskip("litellm")
    from finrag_pipeline.core.llm.client import LLMClient
    from finrag_pipeline.core.scoring.answer_metrics import LLMJudge

    def judge(reply: str) -> LLMJudge:
        return LLMJudge(LLMClient("openai/gpt-4o-mini", use_cache=False, mock_response=reply, name="mock"))

    claims = '{"claims": [{"claim": "Net sales were $394.3B", "supported": true}, {"claim": "They fell", "supp'
    score, reason = judge(claims).faithfulness("Net sales?", "Net sales were $394.3B; they fell.", ["394,328"])
    assert score is None and "truncated" in reason
    whole = claims[:claims.index(', {"claim": "They')] + "]}"
    assert judge(whole).faithfulness("Net sales?", "Net sales were $394.3B.", ["394,328"])[0] == 1.0
    assert judge('{"score": 0.9, "reason": "it answers the que').relevancy("Net sales?", "394.3B") == (
        0.9, "it answers the que")                       # the score ended before the cut: it stands
    assert judge('{"reason": "ok", "score": 0.').relevancy("Net sales?", "394.3B")[0] is None
