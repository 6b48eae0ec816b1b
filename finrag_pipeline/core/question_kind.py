"""The question kind: a figure question ("metric") or a qualitative one, and where a 10-K answers it.

One rule, configured in ``assets_config/question_kinds.yaml`` and read by every stage that routes by
kind: the calculator and the extractive answerer hand qualitative questions to the narrative answerer
(core/evaluation/narrative.py), ``decomposed`` passes them through, and ``qualitative_routed``
(core/retrieval/qualitative_routing.py) boosts the 10-K Items that hold such answers.

    classify_question("What drove the increase in Apple's Services net sales in FY2021?")
    -> QuestionRoute(kind="qualitative", topics=("cause",), sections=("Item 7", "Item 8"), ...)
    classify_question("By what percentage did Microsoft's net income grow in FY2022?")
    -> QuestionRoute(kind="metric", topics=(), ...)

The order of the rule (a yes/no judgement about a financial measure is a metric question; a cause
question is qualitative even when it names a metric; a figure cue
makes a question a metric one; otherwise a matching topic makes it qualitative) is documented in the
YAML file; nothing here is tuned to particular filings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from finrag_pipeline.core.config import config_path, read_yaml

QuestionKind = Literal["metric", "qualitative"]
METRIC: QuestionKind = "metric"
QUALITATIVE: QuestionKind = "qualitative"
_SENTENCE_RE = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
_SECTION_RE = re.compile(r"^Item (?:1[0-6]|[1-9])[A-C]?$")


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid pattern {pattern!r}: {exc}") from exc


class TopicSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    patterns: list[str] = Field(min_length=1)
    sections: list[str] = Field(min_length=1, description="10-K Items that hold such answers, most likely first")
    expansion: list[str] = Field(default_factory=list)
    cues: dict[str, float] = Field(default_factory=dict)
    decisive: bool = False          # a match makes the question qualitative whatever else it names
    open_form_only: bool = False    # counts only in an open question ("which ...", "describe ...")

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, v: list[str]) -> list[str]:
        for p in v:
            _compile(p)
        return v

    @field_validator("cues")
    @classmethod
    def _cues_compile(cls, v: dict[str, float]) -> dict[str, float]:
        for p in v:
            _compile(p)
        return v

    @field_validator("sections")
    @classmethod
    def _sections_are_items(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not _SECTION_RE.match(s)]
        if bad:
            raise ValueError(f"sections must be 10-K Items like 'Item 7' or 'Item 1A': {bad}")
        return v


class PhrasingTerm(BaseModel):
    """How analysts word a matter and what a 10-K's prose prints for it (the form of analyst_vocabulary.yaml's
    terms, read as a vocabulary by core/retrieval/answer_sentences.py ``prose_vocabulary``)."""

    model_config = ConfigDict(extra="forbid")
    terms: list[str] = Field(min_length=1)
    expansions: list[str] = Field(min_length=1)


class QuestionKindsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric_cues: list[str] = Field(min_length=1)
    judgement_cues: list[str] = Field(default_factory=list)  # yes/no questions about a financial measure
    instruction_leads: str = r"^\s*(?:if|please|answer|round)\b"  # sentences that instruct, not ask
    open_forms: list[str] = Field(min_length=1)
    topics: dict[str, TopicSpec] = Field(min_length=1)
    # how analysts word a qualitative question -> what the 10-K's prose prints ("earn more" -> "operating
    # income increased"); the same form as analyst_vocabulary.yaml's terms, read by the narrative answerer's
    # subject and by the search expansion of qualitative_routed (``phrasings: true``)
    phrasings: dict[str, PhrasingTerm] = Field(default_factory=dict)
    # a question that asks for an explanation ("Why ...", "Explain ...", "..., and why did ...?"): its reference's
    # figures support the explanation, they are not the asked value (core/scoring/answer_contract.py)
    explanation_forms: list[str] = Field(default_factory=list)

    @field_validator("metric_cues", "judgement_cues", "open_forms", "explanation_forms")
    @classmethod
    def _compile_all(cls, v: list[str]) -> list[str]:
        for p in v:
            _compile(p)
        return v

    @field_validator("instruction_leads")
    @classmethod
    def _compile_one(cls, v: str) -> str:
        _compile(v)
        return v


@dataclass(frozen=True)
class QuestionRoute:
    """What kind of question it is and where a 10-K answers it (empty for a metric question)."""

    kind: QuestionKind
    topics: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()      # the topics' Items, merged in order
    expansion: tuple[str, ...] = ()     # search words of the topics

    @property
    def qualitative(self) -> bool:
        return self.kind == QUALITATIVE

    def as_info(self) -> dict[str, object]:
        return {"kind": self.kind, "topics": list(self.topics), "sections": list(self.sections)}


class QuestionKinds:
    """The compiled rule of one question_kinds.yaml."""

    def __init__(self, file: QuestionKindsFile):
        self.file = file
        self.metric_cues = [_compile(p) for p in file.metric_cues]
        self.judgement_cues = [_compile(p) for p in file.judgement_cues]
        self.instruction_leads = _compile(file.instruction_leads)
        self.open_forms = [_compile(p) for p in file.open_forms]
        self.explanation_forms = [_compile(p) for p in file.explanation_forms]
        self.topics = {name: (spec, [_compile(p) for p in spec.patterns]) for name, spec in file.topics.items()}
        self.cues = {name: [(_compile(p), w) for p, w in spec.cues.items()] for name, spec in file.topics.items()}

    @classmethod
    def load(cls, path: str | Path | None = None) -> QuestionKinds:
        path = Path(path or config_path("question_kinds.yaml"))
        return cls(QuestionKindsFile.model_validate(read_yaml(path)))   # a missing file: read_yaml names it

    def asked_part(self, question: str) -> str:
        """The question without its instruction sentences ("If gross margin is not a useful metric, state
        that and explain why."); the whole question when every sentence instructs."""
        sentences = [s for s in _SENTENCE_RE.split(question.strip()) if s.strip()]
        asked = [s for s in sentences if not self.instruction_leads.search(s)]
        return " ".join(asked) if asked else question

    def matched_topics(self, question: str) -> list[str]:
        """Topics whose patterns match the asked part, in the file's order (open-form-only topics included
        only for an open question)."""
        question = self.asked_part(question)
        is_open = any(p.search(question) for p in self.open_forms)
        return [name for name, (spec, patterns) in self.topics.items()
                if (is_open or not spec.open_form_only) and any(p.search(question) for p in patterns)]

    def classify(self, question: str) -> QuestionRoute:
        if any(p.search(question) for p in self.judgement_cues):
            return QuestionRoute(METRIC)   # a judgement on figures: the calculator's, even with "explain why"
        topics = self.matched_topics(question)
        decisive = [t for t in topics if self.topics[t][0].decisive]
        if not decisive and (not topics or any(p.search(question) for p in self.metric_cues)):
            return QuestionRoute(METRIC)
        ordered = decisive + [t for t in topics if t not in decisive]
        sections = tuple(dict.fromkeys(s for t in ordered for s in self.topics[t][0].sections))
        expansion = tuple(dict.fromkeys(w for t in ordered for w in self.topics[t][0].expansion))
        return QuestionRoute(QUALITATIVE, tuple(ordered), sections, expansion)

    def asks_for_explanation(self, question: str) -> bool:
        """The question asks for an explanation: one of ``explanation_forms`` ("Why ...?", "Explain ...",
        "What were the main reasons ...", "..., and why did ...?"), or the cause topic ("What was the main
        driver of ...?")."""
        return any(p.search(question) for p in self.explanation_forms) or "cause" in self.classify(question).topics

    def cue_strength(self, sentence: str, topics: tuple[str, ...] | list[str]) -> tuple[float, list[str]]:
        """How strongly ``sentence`` reads as an answer of ``topics``: the weights of the distinct cues it
        contains (each counted once), and the cues' matched words."""
        score, found = 0.0, []
        for topic in topics:
            for pattern, weight in self.cues.get(topic, []):
                m = pattern.search(sentence)
                if m:
                    score += weight
                    found.append(m.group(0).lower())
        return score, found


def default_question_kinds(path: str | None = None) -> QuestionKinds:
    """The rule at ``path`` (default: question_kinds.yaml as resolved now), loaded once per file."""
    return _kinds_at(str(path or config_path("question_kinds.yaml")))


@lru_cache(maxsize=4)
def _kinds_at(path: str) -> QuestionKinds:
    return QuestionKinds.load(path)


def classify_question(question: str) -> QuestionRoute:
    """The kind of ``question`` and where a 10-K answers it, by the configured rule."""
    return default_question_kinds().classify(question)


def is_qualitative(question: str) -> bool:
    return classify_question(question).qualitative


def asks_for_explanation(question: str) -> bool:
    """By the configured rule: see :meth:`QuestionKinds.asks_for_explanation`."""
    return default_question_kinds().asks_for_explanation(question)
