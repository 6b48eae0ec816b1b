"""``qualitative_routed``: a qualitative question searched where a 10-K answers it.

"What drove the increase in Apple's Services net sales?" is answered in the MD&A (Item 7), "which
risks ..." in Item 1A, legal matters in Item 3 and the contingencies note, customer concentration in
the notes and Item 1A. The question's kind and topics come from the one rule of
``question_kind.py`` (assets_config/question_kinds.yaml). For a qualitative question the stage

1. searches the base retriever twice, deeper than k: with the question as asked, and with the question
   expanded by the analyst vocabulary ("R&D" -> research and development; vocabulary.py) and by the
   words 10-Ks print in such answers (the topics' ``expansion``), and fuses the two rankings (RRF);
   (and the acronym of a name the question spells out: "Boeing Global Services" -> BGS);
2. adds ``section_boost`` x (the candidates' score range) to hits in the topics' Items (the first
   Item in full, each later one a little less) and ``prose_boost`` x range to prose chunks (answers
   are sentences, not table rows); with ``section_mode: prefilter`` hits outside those Items only fill
   the slots the Items cannot.

3. with ``sentence_weight`` > 0 (the ``qualitative_sentences`` configuration), adds ``sentence_weight`` x range x
   the passage's sentence relevance: how well its best sentence answers the question by the narrative
   answerer's own scoring (core/evaluation/narrative.py ``passage_relevance``: the subject named and leading
   the sentence, a cue of the asked topic, the asked company and year), a sentence window read inside each
   candidate rather than the passage's words as a bag; with ``phrasings: true`` the expansion also adds the
   prose phrasings of question_kinds.yaml ("earn more" -> "operating income").

A metric question passes through to ``base`` unchanged; a qualitative one is searched with
``qualitative_base`` (default: ``base``). Each kind gets the retriever built for it: ``base:
decomposed_routed`` keeps the metric routing, whose statement boost favours statement table rows, while
``qualitative_base: hybrid_rrf`` searches prose unbiased by it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary, default_vocabulary
from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.question_kind import QuestionKinds, QuestionRoute, default_question_kinds
from finrag_pipeline.core.retrieval.answer_sentences import SentenceScorer, prose_vocabulary
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, sort_hits
from finrag_pipeline.core.retrieval.config import WrapperConfig
from finrag_pipeline.core.retrieval.plugins import register_retriever


class QualitativeRoutingConfig(WrapperConfig):
    qualitative_base: str | dict[str, Any] | None = Field(
        None, description="the retriever qualitative questions are searched with (default: base); metric "
        "questions always go to base")
    section_mode: Literal["boost", "prefilter"] = "boost"
    section_boost: float = Field(0.5, ge=0.0, description="bonus for hits in the topic's Items, as a fraction "
                                 "of the candidates' score range (the first Item in full, later ones less)")
    prose_boost: float = Field(0.1, ge=0.0, description="bonus for prose chunks of a qualitative question")
    overfetch: int = Field(4, ge=1, description="candidates per search: k x overfetch")
    expand: bool = Field(True, description="also search the question expanded by the vocabulary and topic words")
    phrasings: bool = Field(False, description="the expansion also adds the prose phrasings of question_kinds.yaml "
                            "(\"earn more\" -> \"operating income increased\")")
    sentence_weight: float = Field(0.0, ge=0.0, description="bonus for the passage whose best sentence answers the "
                                   "question (the narrative answerer's sentence scoring: subject named, cue of "
                                   "the topic), as a fraction of the candidates' score range; 0 = off")
    rrf_k: int = Field(60, ge=1)

    def references(self) -> list[str | dict[str, Any]]:
        return [*super().references(), *([self.qualitative_base] if self.qualitative_base is not None else [])]


_NAME_RUN = re.compile(r"\b(?:[A-Z][a-z]+(?:\s*(?:,|&|and)?\s+)){2,}[A-Z][a-z]+\b")


def acronyms(question: str) -> list[str]:
    """Initials of the multi-word names a question spells out, as 10-Ks abbreviate them after first use:
    "Boeing Global Services" -> "BGS", "Amazon Web Services" -> "AWS", "Defense, Space & Security" -> "DSS"."""
    out = []
    for m in _NAME_RUN.finditer(question):
        words = [w for w in re.findall(r"[A-Z][a-z]+", m.group(0))]
        if len(words) >= 3:
            out.append("".join(w[0] for w in words))
    return out


def section_weight(section: str | None, route: QuestionRoute) -> float:
    """1 for the topic's first Item, 0.75, 0.5, 0.25 for the next ones, 0 outside them."""
    if section not in route.sections:
        return 0.0
    return max(0.25, 1.0 - 0.25 * route.sections.index(section))


def fuse(rankings: list[list[Hit]], rrf_k: int) -> list[Hit]:
    """Reciprocal-rank fusion of rankings of the same retriever (the best copy of each chunk kept)."""
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for i, h in enumerate(ranking):
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + 1.0 / (rrf_k + i + 1)
            first.setdefault(h.chunk_id, h)
    return sort_hits(copy_hit(first[c], score=s, stage_scores={**first[c].stage_scores, "qualitative_rrf": s})
                     for c, s in scores.items())


def route_hits(hits: list[Hit], route: QuestionRoute, section_boost: float, prose_boost: float,
               mode: str = "boost", relevance: dict[str, float] | None = None, sentence_weight: float = 0.0) -> list[Hit]:
    """Hits re-sorted with the section and prose bonuses (prefilter: the topic's Items first), and
    ``sentence_weight`` x the passage's sentence relevance (chunk id -> [0, 1]) when given."""
    if not hits:
        return []
    scores = [h.score for h in hits]
    spread = (max(scores) - min(scores)) or 1.0
    out = []
    for h in hits:
        weight = section_weight(h.section, route)
        bonus = spread * (section_boost * weight + (prose_boost if h.chunk_type == "prose" else 0.0))
        stage_scores = {**h.stage_scores, "section_boost": bonus}
        if relevance is not None and sentence_weight:
            stage_scores["sentence_relevance"] = relevance.get(h.chunk_id, 0.0)
            bonus += spread * sentence_weight * stage_scores["sentence_relevance"]
        out.append(copy_hit(h, score=h.score + bonus, stage_scores=stage_scores))
    ranked = sort_hits(out)
    if mode == "prefilter":
        inside = [h for h in ranked if h.section in route.sections]
        ranked = inside + [h for h in ranked if h.section not in route.sections]
    return ranked


@register_retriever("qualitative_routed", config=QualitativeRoutingConfig)
class QualitativeRoutingRetriever(Retriever):
    stage_name = "qualitative_routed"

    def __init__(self, base: Retriever, *, qualitative_base: Retriever | None = None, section_mode: str = "boost", section_boost: float = 0.5,
                 prose_boost: float = 0.1, overfetch: int = 4, expand: bool = True, rrf_k: int = 60,
                 kinds: QuestionKinds | None = None, vocabulary: AnalystVocabulary | None = None,
                 phrasings: bool = False, sentence_weight: float = 0.0):
        self.base = base
        self.qualitative_base = qualitative_base or base
        self.section_mode, self.section_boost, self.prose_boost = section_mode, section_boost, prose_boost
        self.overfetch, self.expand, self.rrf_k = overfetch, expand, rrf_k
        self.kinds = kinds or default_question_kinds()
        self.vocabulary = vocabulary if vocabulary is not None else default_vocabulary()
        self.phrasings, self.sentence_weight = phrasings, sentence_weight
        self._sentences: SentenceScorer | None = None

    def sentence_scorer(self) -> SentenceScorer:
        """The sentence scoring the narrative answerer quotes by, which ranks passages (built on first use)."""
        if self._sentences is None:
            self._sentences = SentenceScorer(self.kinds, self.vocabulary)
        return self._sentences

    @classmethod
    def from_config(cls, config: QualitativeRoutingConfig, resources: Any, builder: Any) -> QualitativeRoutingRetriever:
        base = builder.build(config.base or "hybrid_rrf")
        qualitative = builder.build(config.qualitative_base) if config.qualitative_base else None
        return cls(base, qualitative_base=qualitative, section_mode=config.section_mode,
                   section_boost=config.section_boost, prose_boost=config.prose_boost, overfetch=config.overfetch,
                   expand=config.expand, rrf_k=config.rrf_k, phrasings=config.phrasings,
                   sentence_weight=config.sentence_weight)

    def expanded_query(self, query: str, route: QuestionRoute) -> str:
        expanded = self.vocabulary.expand(query)
        phrasings = prose_vocabulary(self.kinds) if self.phrasings else None
        if phrasings is not None:
            expanded = phrasings.expand(expanded)
        extra = [w for w in (*acronyms(query), *route.expansion) if w.lower() not in expanded.lower()]
        return f"{expanded} {' '.join(extra)}" if extra else expanded

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage("question_kind"):
            route = self.kinds.classify(query)
        info["question_kind"] = route.as_info()
        if not route.qualitative:
            result = self.base.retrieve(query, k, filters)
            timings.merge(result.timings_ms)
            return result.hits[:k]
        depth = k * self.overfetch
        rankings = []
        first = self.qualitative_base.retrieve(query, depth, filters)
        timings.merge(first.timings_ms)
        rankings.append(first.hits)
        if self.expand:
            expanded = self.expanded_query(query, route)
            if expanded != query:
                info["expanded_query"] = expanded
                second = self.qualitative_base.retrieve(expanded, depth, filters)
                timings.merge({f"expanded:{s}": ms for s, ms in second.timings_ms.items()})
                rankings.append(second.hits)
        with timings.stage("section_routing"):
            fused = fuse(rankings, self.rrf_k) if len(rankings) > 1 else rankings[0]
        relevance = None
        if self.sentence_weight and fused:
            with timings.stage("sentence_relevance"):
                relevance = self.sentence_scorer().passage_relevance(query, fused)
        with timings.stage("section_routing"):
            return route_hits(fused, route, self.section_boost, self.prose_boost, self.section_mode,
                              relevance, self.sentence_weight)[:k]
