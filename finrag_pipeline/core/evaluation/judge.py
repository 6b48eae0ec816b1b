"""A rubric judge: grades an answer against the reference answer as the labelling guide tells people to.

``RubricJudge.from_model("gpt-4o-mini")`` takes any name of assets_config/models.yaml (the local model
included) or a raw litellm model string. Calls go through
:class:`~finrag_pipeline.core.llm.client.LLMClient`, so every verdict is cached on disk (a re-run costs
nothing), repaired when the JSON is fenced or trailing-comma'd, and never raises: a backend failure or
an unreadable verdict is a verdict of None with the reason (coverage shows it, nothing is filled in).
An answer that only repeats the question (``answer_metrics.is_echo``) is Incorrect without a call.
Decoding is greedy (temperature 0) with a fixed ``seed`` (passed to providers that take one; litellm
drops it for those that do not). Tokens and cost (the model's price in models.yaml, else litellm's price
map) are metered per verdict and in total. Every verdict carries :attr:`RubricJudge.name`
("rubric-v2@<model name>"), so a judged score always says which judge gave it.

The rubric lines are the rules of data/labelled_answers/LABELLING_GUIDE.md, word for word
(test_judge.py checks that), so the judge and the people grade by one rule book.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finrag_pipeline.core.evaluation.human_agreement import normalise_label
from finrag_pipeline.core.scoring.answer_metrics import is_echo

RUBRIC_VERSION = "rubric-v2"
# Each line appears verbatim in data/labelled_answers/LABELLING_GUIDE.md ("Rules").
RUBRIC = (
    "Correct: the answer commits to the reference's value, option or facts.",
    "Rounding is fine to the precision the question asks for; when it asks for none, a figure with at least two "
    "significant figures that the reference rounds to, within 2% of it, is the same answer ($11 billion for "
    "$11,104 million).",
    "More precision than asked is fine (12.05% for 12.0%); a figure rounded the wrong way is not.",
    "Another unit or scale is the same answer once converted: $394.3 billion is $394,328 million; "
    "a margin of 0.165 is 16.5%.",
    "A bare number takes the unit and scale the question asks for: 111,443 to a question in USD millions, "
    "3.0 to one asking for a percentage.",
    "Extra context does not make an answer wrong when the final answer is clear: prior-year figures "
    "attributed to their year, the operands of shown working, a restated question.",
    "Incorrect: another value, another year or line item, the wrong sign or direction, arithmetic that ends "
    "in another value.",
    "Incorrect: several candidate answers without choosing one, a range or a hedge in place of a value, "
    "or only part of what a multi-part question asks.",
    "Incorrect: a figure or fact given where the reference says the filing does not give one.",
    "Refusal: the answer declines to answer (the context or filing does not say, cannot be determined) "
    "although the reference gives an answer.",
    "Correct for an unanswerable question: the answer says the filing does not give it.",
    "Narrative questions: Correct when the answer states the reference's key facts (the causes, entities "
    "and figures it names); Incorrect when a key fact is missing or contradicted.",
)

PROMPT = """You grade answers of a RAG system to questions about a company's annual report (10-K).
Compare the ANSWER with the REFERENCE answer and grade it by these rules:
{rubric}

Return JSON only: {{"label": "Correct" | "Incorrect" | "Refusal", "reason": "one sentence"}}

QUESTION: {question}

REFERENCE: {reference}

ANSWER: {answer}"""

_SCORE_OF_LABEL = {"Correct": 1.0, "Incorrect": 0.0, "Refusal": 0.0}


@dataclass(frozen=True)
class JudgeVerdict:
    judge: str
    label: str | None          # Correct / Incorrect / Refusal; None when the judge gave no verdict
    correctness: float | None  # 1 for Correct, 0 for Incorrect or Refusal, None without a verdict
    reason: str
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


class RubricJudge:
    """``client``: an LLMClient (or anything with ``name`` and ``complete(messages, json=True, **params)``)."""

    def __init__(self, client: Any, *, seed: int = 0, **params: Any) -> None:
        self.client = client
        self.params = {"temperature": 0.0, "seed": seed, **params}
        self.cost_usd = 0.0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.n_calls = 0       # verdicts asked for (cache hits included)
        self.n_cached = 0

    @classmethod
    def from_model(cls, model: str, *, seed: int = 0, registry: Any = None, **client_overrides: Any) -> RubricJudge:
        """A judge on a models.yaml name (or a raw litellm model string)."""
        from finrag_pipeline.core.llm.client import LLMClient

        return cls(LLMClient.from_registry(model, registry, **client_overrides), seed=seed)

    @property
    def name(self) -> str:
        return f"{RUBRIC_VERSION}@{getattr(self.client, 'name', None) or getattr(self.client, 'model', 'model')}"

    def prompt(self, *, question: str, reference: str, answer: str) -> str:
        rubric = "\n".join(f"- {line}" for line in RUBRIC)
        return PROMPT.format(rubric=rubric, question=question, reference=reference, answer=answer)

    def judge(self, *, question: str, reference: str, answer: str) -> JudgeVerdict:
        if is_echo(answer, question):
            # rule 1 without asking: an answer that repeats the question commits to nothing (a small local judge
            # passed 2 of 12 echoes on heldout6); the same test key-fact recall and correctness use
            return JudgeVerdict(self.name, "Incorrect", 0.0,
                                "echoes the question: commits to no value, option or fact (decided before the judge)")
        messages = [{"role": "user", "content": self.prompt(question=question, reference=reference, answer=answer)}]
        resp = self.client.complete(messages, json=True, **self.params)
        cost = float(getattr(resp, "cost_usd", 0.0) or 0.0)
        p_tok, c_tok = int(getattr(resp, "prompt_tokens", 0) or 0), int(getattr(resp, "completion_tokens", 0) or 0)
        cached = bool(getattr(resp, "cached", False))
        self.n_calls += 1
        self.n_cached += cached
        self.cost_usd += cost
        self.prompt_tokens += p_tok
        self.completion_tokens += c_tok
        meter = {"cost_usd": cost, "prompt_tokens": p_tok, "completion_tokens": c_tok, "cached": cached}
        if getattr(resp, "state", "ok") != "ok" or not isinstance(resp.parsed_json, dict):
            detail = getattr(resp, "error", None) or (getattr(resp, "text", "") or "")[:200]
            return JudgeVerdict(self.name, None, None, f"judge {getattr(resp, 'state', '?')}: {detail}", **meter)
        if getattr(resp, "json_truncated", False) and not resp.json_complete(("label",)):
            return JudgeVerdict(self.name, None, None, "judge output truncated before its label ended", **meter)
        label = normalise_label(resp.parsed_json.get("label"))
        if label is None:
            return JudgeVerdict(self.name, None, None,
                                f"judge gave no label of Correct/Incorrect/Refusal: {resp.parsed_json!r}"[:300], **meter)
        return JudgeVerdict(self.name, label, _SCORE_OF_LABEL[label], str(resp.parsed_json.get("reason", ""))[:500],
                            **meter)

    def meter(self) -> dict[str, Any]:
        return {"judge": self.name, "verdicts": self.n_calls, "cached": self.n_cached,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost_usd": round(self.cost_usd, 6)}
