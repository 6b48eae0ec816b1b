"""The rubric judge (core/evaluation/judge.py) through litellm's mock_response: its verdicts, their
names, the disk cache, the seed, the cost meter, failures as None, and agreement with the scorer."""

import json

import pytest

from finrag_pipeline.core.evaluation import human_agreement as ha
from finrag_pipeline.core.evaluation.judge import RUBRIC, RubricJudge
from finrag_pipeline.core.llm.client import LLMClient
from finrag_pipeline.core.paths import REPO_ROOT

GUIDE = REPO_ROOT / "data" / "labelled_answers" / "LABELLING_GUIDE.md"


def _client(tmp_path, reply, **kw):
    return LLMClient("openai/mock-model", name="mock-judge", cache_dir=tmp_path / "cache", max_retries=0,
                     mock_response=reply, **kw)


def _ask(judge, answer="$394.3 billion"):
    return judge.judge(question="What were Apple's total net sales in fiscal 2022?",
                       reference="$394,328 million", answer=answer)


@pytest.mark.parametrize(("reply", "label", "score"), [
    ('{"label": "Correct", "reason": "same value in billions"}', "Correct", 1.0),
    ('{"label": "incorrect", "reason": "prior year"}', "Incorrect", 0.0),
    ('```json\n{"label": "Refusal", "reason": "declines",}\n```', "Refusal", 0.0),   # fenced, trailing comma
])
def test_a_verdict_is_a_label_a_score_and_the_judges_name(tmp_path, reply, label, score):
    v = _ask(RubricJudge(_client(tmp_path, reply)))
    assert (v.label, v.correctness, v.judge) == (label, score, "rubric-v2@mock-judge")
    assert v.reason


@pytest.mark.parametrize(("reply", "why"), [
    ("I think it is right.", "judge invalid_output"),
    ('{"label": "Mostly right"}', "no label of Correct/Incorrect/Refusal"),
    ("", "judge empty"),
])
def test_no_verdict_is_none_with_the_reason(tmp_path, reply, why):
    v = _ask(RubricJudge(_client(tmp_path, reply)))
    assert v.label is None and v.correctness is None and why in v.reason
    assert v.judge == "rubric-v2@mock-judge"


def test_verdicts_are_cached_and_seeded(tmp_path):
    client = _client(tmp_path, '{"label": "Correct", "reason": "ok"}')
    judge = RubricJudge(client, seed=3)
    first, second = _ask(judge), _ask(judge)
    assert client.calls == 1 and (first.cached, second.cached) == (False, True)
    assert judge.meter()["verdicts"] == 2 and judge.meter()["cached"] == 1
    other_seed = RubricJudge(client, seed=4)
    _ask(other_seed)
    assert client.calls == 2          # the seed is part of the call, so of the cache key
    assert judge.params["seed"] == 3 and judge.params["temperature"] == 0.0


def test_cost_is_metered_from_the_models_price(tmp_path):
    client = _client(tmp_path, '{"label": "Correct", "reason": "ok"}', cost_per_1k_prompt=1.0,
                     cost_per_1k_completion=2.0)
    judge = RubricJudge(client)
    v = _ask(judge)
    assert v.prompt_tokens > 0
    assert v.cost_usd == pytest.approx(v.prompt_tokens / 1000 * 1.0 + v.completion_tokens / 1000 * 2.0)
    assert judge.meter()["cost_usd"] == pytest.approx(v.cost_usd, abs=1e-6)
    assert _ask(judge).cost_usd == 0.0    # a cached verdict costs nothing


def test_any_models_yaml_name_builds_a_judge_without_calling_it():
    for name in ("local-0.5b", "gpt-4o-mini", "mock-json"):
        assert RubricJudge.from_model(name).name == f"rubric-v2@{name}"


def test_the_rubric_is_the_labelling_guides_rules_word_for_word():
    guide = " ".join(GUIDE.read_text(encoding="utf-8").split())
    for line in RUBRIC:
        assert line in guide, line


def test_judge_and_scorer_agreement_where_both_decide(tmp_path):
    # the judge says Correct to everything: it agrees with the scorer on the accepted answer only
    judge = RubricJudge(_client(tmp_path, '{"label": "Correct", "reason": "ok"}'))
    q = "What were Apple's total net sales in fiscal 2022?"
    rows = [ha.LabelledAnswer(answer=a, label=lab, question=q, reference="$394,328 million", answer_id=str(i),
                              system=s)
            for i, (a, lab, s) in enumerate([("$394,328 million", "Correct", "x"), ("$365,817 million", "Incorrect", "x"),
                                             ("Higher demand.", "Incorrect", "y")])]
    verdicts = ha.score_labelled_answers(rows, set_name="t", judge=judge)
    assert {v["judge_name"] for v in verdicts} == {"rubric-v2@mock-judge"}
    summ = ha.agreement_summary(verdicts)["judge"]
    assert summ["name"] == ["rubric-v2@mock-judge"]
    # the scorer decides all three (the third states no figure: rejected); the judge accepts all three
    assert summ["vs_scorer"]["n_decided"] == 3 and summ["vs_scorer"]["agreement"] == pytest.approx(1 / 3)
    assert summ["vs_people"]["false_accepts"] == 2
    assert "rubric-v2@mock-judge" in ha.judge_markdown(ha.agreement_summary(verdicts))
    json.dumps(summ)   # serialisable for --json


def test_cli_judges_with_a_models_yaml_name_and_stores_the_judges_name(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.warehouse import Warehouse

    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    q = "What were Apple's total net sales in fiscal 2022?"
    lines = [{"question": q, "reference": "$394,328 million", "answer": a, "label": lab, "system": s}
             for a, lab, s in [("$394,328 million", "Correct", "x"), ("$365,817 million", "Incorrect", "y")]]
    p = tmp_path / "judged.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["score", "agreement", str(p), "--judge", "mock-judge", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["judge"]["judge"] == "rubric-v2@mock-judge" and out["judge"]["verdicts"] == 2
    judge = out["summaries"][0]["judge"]
    # the mock says Correct to both: right on the first, a false accept on the second; the scorer rejects
    # the second, so judge and scorer agree on one of the two they both decide
    assert judge["vs_people"]["false_accepts"] == 1 and judge["vs_scorer"]["agreement"] == 0.5
    names = Warehouse(tmp_path / "home" / "warehouse.duckdb").query_df(
        "SELECT DISTINCT judge_name FROM eval.answer_agreement")["judge_name"].tolist()
    assert names == ["rubric-v2@mock-judge"]


@pytest.mark.parametrize("echo", [
    "What were Apple's total net sales in fiscal 2022?",
    "Apple's total net sales in fiscal 2022 were Apple's total net sales.",
])
def test_an_echo_of_the_question_is_incorrect_without_asking_a_lenient_judge(tmp_path, echo):
    client = _client(tmp_path, '{"label": "Correct", "reason": "lenient"}')
    judge = RubricJudge(client)
    v = _ask(judge, answer=echo)
    assert (v.label, v.correctness, client.calls) == ("Incorrect", 0.0, 0)
    assert "echoes the question" in v.reason and v.judge == "rubric-v2@mock-judge"
    # a right answer that restates the question before its figure still goes to the judge
    right = _ask(judge, answer="Apple's total net sales in fiscal 2022 were $394.3 billion.")
    assert (right.label, client.calls) == ("Correct", 1)
    # so does a yes/no answer in the question's own words: "Yes" commits
    committed = judge.judge(question="Did Apple's total net sales increase in fiscal 2022?", reference="Yes.",
                            answer="Yes, Apple's total net sales increased in fiscal 2022.")
    assert (committed.label, client.calls) == ("Correct", 2)
