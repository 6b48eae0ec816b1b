"""The ``narrative`` answerer: the sentences of the retrieved prose that answer a qualitative question.

"What drove the increase in Apple's Services net sales in FY2021?" is answered by quoting the MD&A
sentence that states the cause ("Services net sales increased ... due primarily to higher net sales
from advertising, the App Store and cloud services."), with its page, never by a figure.

Steps 1-4 are THE sentence scoring of core/retrieval/answer_sentences.py (``qualitative_sentences`` ranks
passages by it too). For a question it (1) reads the question's kind and topics (core/question_kind.py: cause,
risk, legal, customers, geography, segments, business) and its subject: the words that name the line
item, segment or matter (the analyst vocabulary's expansions count as the same word: "R&D" is
"research and development"), the direction asked (an increase or a decrease) and the years;
(2) splits the prose hits into sentences (core/chunking/sentences.py); (3) keeps sentences that name
at least half of the subject and, for a topic with cues, carry one ("driven by", "due to",
"primarily", "as a result of", "offset by", ...); (4) ranks them by subject overlap, cue strength,
the 10-K Item the topic routes to, the year and the direction, lists and named entities, and the
hit's rank; (5) answers with the best sentence, plus a second one when it continues or completes the
first (an offset, another cause), citing each sentence's page and chunk. When no sentence passes,
the answer is the recorded abstention ``insufficient_context`` (``no_evidence`` without hits).

With a ``warehouse`` (the runner passes it), each prose hit is read with its ``window`` neighbouring passages
(core.chunks reading order): a cause often sits in the passage after the one that names the subject. A
sentence that refers back to the change the previous one states ("The year over year increase was primarily
driven by ...") takes that sentence's subject and is quoted after it. When the question names a segment,
region or product ("Products", "Greater China"), a sentence must name it. The prose phrasings of
question_kinds.yaml ("earn more" -> operating income, "gross profit" -> gross margin) count as the subject's
words, as the analyst vocabulary's terms do ("R&D" -> research and development; those weigh double: the line
item is the heart of the subject). ``passage_relevance`` gives the same scoring to retrieval
(``qualitative_sentences``).

Nothing is written in the answerer's own words: a quoted sentence carries the filing's key facts or
the answer abstains, so a restated question or "due to various factors" never comes out of it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary
from finrag_pipeline.core.answering import AnswerResult, Citation, register_answerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.question_kind import QuestionKinds
from finrag_pipeline.core.retrieval.answer_sentences import (
    _CONTINUES_RE,
    SentenceScorer,
    _page_of,
    word_stems,
)
from finrag_pipeline.core.retrieval.base import copy_hit, hit_from_fields


@register_answerer("narrative")
class NarrativeAnswerer(SentenceScorer):
    """Offline answerer of qualitative questions: one or two quoted sentences, with citations."""

    name = "narrative"

    def __init__(self, kinds: QuestionKinds | None = None, vocabulary: AnalystVocabulary | None = None, *,
                 max_hits: int = 10, min_subject: float = 0.5, max_sentences: int = 2, warehouse: Any = None,
                 window: int = 1) -> None:
        super().__init__(kinds, vocabulary, max_hits=max_hits, min_subject=min_subject)
        self.max_sentences = max_sentences
        # with a warehouse, each prose hit is read with its ``window`` neighbouring passages on each side:
        # a cause often sits in the passage after the one that names the subject
        self.warehouse = warehouse
        self.window = window

    def _with_neighbours(self, hits: Sequence[Hit]) -> list[Hit]:
        """The first ``max_hits`` hits by rank, then the prose passages next to each prose hit (reading
        order of core.chunks, ``window`` on each side) as hits of the same rank, stage ``window``."""
        used = sorted(hits, key=lambda h: h.rank)[: self.max_hits]
        prose = [h for h in used if h.chunk_type == "prose"]
        if self.warehouse is None or self.window <= 0 or not prose:
            return used
        marks = ", ".join("?" for _ in prose)
        rows = self.warehouse.query_df(f"""
            SELECT h.chunk_id AS hit_id, c.chunk_id, c.filing_id, c.page_start, c.page_end, c.text, c.section,
                   c.fiscal_year, c.parent_id, c.position
            FROM core.chunks h JOIN core.chunks c
              ON c.filing_id = h.filing_id AND c.chunk_type = 'prose' AND c.is_leaf
             AND c.position BETWEEN h.position - ? AND h.position + ? AND c.chunk_id <> h.chunk_id
            WHERE h.chunk_id IN ({marks})""", [self.window, self.window, *[h.chunk_id for h in prose]])
        rank_of = {h.chunk_id: h.rank for h in prose}
        seen = {h.chunk_id for h in used}
        out = list(used)
        for r in sorted(rows.to_dict("records"), key=lambda r: (rank_of[r["hit_id"]], r["position"])):
            if r["chunk_id"] in seen:
                continue
            seen.add(r["chunk_id"])
            # hit_from_fields reads a NULL fiscal year (NaN through pandas) as None
            hit = hit_from_fields(r["chunk_id"], 0.0, {**r, "chunk_type": "prose"}, "window")
            out.append(copy_hit(hit, rank=rank_of[r["hit_id"]]))
        return out

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        t0 = time.perf_counter()
        if not hits:
            route = self.kinds.classify(question)
            return self._result("No evidence retrieved.", [], "no_evidence", {"route": route.as_info()}, t0)
        read = self._with_neighbours(hits)
        route, subject, sentences = self.scored_sentences(question, read, periods, max_hits=len(read))
        details: dict[str, Any] = {"route": route.as_info(), "subject": [g[0] for g in subject.groups]}
        candidates = [s for s in sentences if s.answers]
        if not candidates:
            what = " ".join(details["subject"][:6]) or "the question"
            return self._result(f"Insufficient context: no retrieved passage answers it ({what}).", [],
                                "insufficient_context", details, t0)
        candidates.sort(key=lambda s: (-s.score, s.hit.rank, s.index))
        best = candidates[0]
        # an anaphoric cause is quoted after the sentence it continues
        chosen = [best.antecedent, best] if best.antecedent is not None else [best]
        for s in candidates[1:]:
            if best.antecedent is not None:
                break
            if len(chosen) >= self.max_sentences:
                break
            same_hit_next = s.hit.chunk_id == best.hit.chunk_id and s.index == best.index + 1
            if s.text == best.text or word_stems(s.text) <= word_stems(best.text):
                continue
            # a second sentence continues the first, or is as much about the subject and adds a cue
            # (the next sentence of the same passage only when it is as much about the subject: "Japan net
            # sales ..." is not continued by "Rest of Asia Pacific net sales ...")
            if (same_hit_next and (_CONTINUES_RE.search(s.text) or (s.cue > 0 and s.head >= best.head))) or \
                    (s.score >= 0.85 * best.score and s.head >= best.head and set(s.cues) - set(best.cues)):
                chosen.append(s)
        citations: list[Citation] = []
        for s in chosen:
            cit = (s.hit.filing_id, _page_of(s), s.hit.chunk_id)
            if cit not in citations:
                citations.append(cit)
        sources = "; ".join(f"{f} p. {p}" for f, p, _ in citations)
        text = " ".join(s.text for s in chosen) + f" [{sources}]"
        details["sentences"] = [{"text": s.text, "chunk_id": s.hit.chunk_id, "page": _page_of(s), "score": round(s.score, 3),
                                 "subject": round(s.subject, 3), "cues": s.cues, "named": s.named} for s in chosen]
        return self._result(text, citations, "answered", details, t0)

    @staticmethod
    def _result(text: str, citations: list[Citation], state: str, details: dict, t0: float) -> AnswerResult:
        latency = round((time.perf_counter() - t0) * 1000, 3)
        return AnswerResult(text, citations, state, latency_ms=latency, details={**details, "timings_ms": {"total": latency}})

