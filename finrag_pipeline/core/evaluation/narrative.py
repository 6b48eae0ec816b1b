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
(6) At most one more sentence (``max_quoted``, 3 in all) when the question or the filing spreads the answer:
the effect the filing states right after the cause, on what the cause sentence leads with ("The weakness in
the renminbi ... had an unfavorable year-over-year impact on Greater China net sales"; "Changes in foreign
currency exchange rates reduced International net sales by $15.0 billion"); for a legal question asking for
several matters, another passage's matter (a date, a party, a court named); the second part of a two-part
question ("..., and how did currency affect them?", "..., and why did the operating loss shrink?") answered
by its own best sentence, about what the first part names. A cause quoted with the sentence it refers back to
is preferred when that pair states the same cause and more ("Gross margins increased to 75.0% ... from 72.7%.
The year over year increase was primarily driven by ...").

With a ``warehouse`` (the runner passes it; so do the calculator's and the extractive answerer's narrative
route), each prose hit is read with its ``window`` neighbouring passages (core.chunks reading order): a cause
often sits in the passage after the one that names the subject; a table row hit brings the prose of its page
(the MD&A explains a table beside it). A
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

import re
import time
from collections.abc import Sequence
from typing import Any

from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary
from finrag_pipeline.core.answering import AnswerResult, Citation, register_answerer
from finrag_pipeline.core.evaluation.narrative_figures import LineChange, LineFigures
from finrag_pipeline.core.models import Chunk, Hit
from finrag_pipeline.core.question_kind import QuestionKinds
from finrag_pipeline.core.records import load_chunks
from finrag_pipeline.core.retrieval.answer_sentences import (
    CONTINUES_RE,
    TOPICAL_MIN_CUE,
    Sentence,
    SentenceScorer,
    page_of,
    word_stems,
)
from finrag_pipeline.core.retrieval.base import copy_hit, hit_from_chunk
from finrag_pipeline.core.scoring.answer_metrics import years_in

# the second part of a two-part question: "Which segment lost the most, and why ...?", "What drove Japan's sales,
# and how did currency affect them?"
_SECOND_PART_RE = re.compile(r"(?:,\s*|\s+)and\s+(?=(?:why|how|what|which|who|when|where)\b)", re.IGNORECASE)
# a legal question asking for several matters, not one
_SEVERAL_RE = re.compile(r"\b(?:matters|proceedings|lawsuits|actions|cases|claims|investigations|disputes)\b",
                         re.IGNORECASE)
# a sentence stating an effect on the subject ("had an unfavorable year-over-year impact on Greater China net sales",
# "reduced International net sales by $15.0 billion")
_EFFECT_RE = re.compile(r"\b(?:impact|effect|(?:un)?favorabl[ey])\b|"
                        r"\b(?:reduced|increased|decreased|lowered|raised)\b[^.;]{0,80}\bby\s+\$?\d", re.IGNORECASE)


# a sentence that names one matter rather than litigation in general: a date or a named party, court or agency
_MATTER_RE = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
                        r"December)\b|\b(?:v\.|vs\.)|\b(?:Department|Commission|Court|Agreement|Act)\b")


_CAPITALISED_RE = re.compile(r"\b[A-Z][a-zA-Z&]+\b")
_SENTENCE_OPENERS = frozenset(["The", "This", "These", "That", "Our", "We", "In", "On", "During", "For", "As", "Total", "Net", "Changes", "Excluding"])


def _head_names(sentence: Sentence) -> list[str]:
    """The capitalised names a sentence opens with, before its first cue ("Japan", "Greater China",
    "International"), sentence openers ("The", "During") aside."""
    low = sentence.text.lower()
    at = min((low.find(c) for c in sentence.cues if c in low), default=-1)
    head = sentence.text[:at] if at > 0 else " ".join(sentence.text.split()[:8])
    return [w for w in _CAPITALISED_RE.findall(head) if w not in _SENTENCE_OPENERS]


def _cause_stems(sentence: Sentence) -> set[str]:
    """The stems of what a sentence gives as the cause: its words after the first cue."""
    low = sentence.text.lower()
    at = min((low.find(c) for c in sentence.cues if c in low), default=-1)
    return word_stems(sentence.text[at:]) if at >= 0 else set()


@register_answerer("narrative")
class NarrativeAnswerer(SentenceScorer):
    """Offline answerer of qualitative questions: one or two quoted sentences, with citations."""

    name = "narrative"

    def __init__(self, kinds: QuestionKinds | None = None, vocabulary: AnalystVocabulary | None = None, *,
                 max_hits: int = 10, min_subject: float = 0.5, max_sentences: int = 2, max_quoted: int = 3,
                 warehouse: Any = None, window: int = 1, figures: bool = True, store: Any = None) -> None:
        super().__init__(kinds, vocabulary, max_hits=max_hits, min_subject=min_subject)
        # the figures of the line a cause question names, read by the calculator from the filing's tables (a fact
        # store, or the warehouse's): the answer leads with its change (core/evaluation/narrative_figures.py)
        self.figures = None if not figures else LineFigures.of_store(store) if store is not None else \
            LineFigures.of_warehouse(warehouse) if warehouse is not None else None
        self.max_sentences = max_sentences
        # the answer stays short: the effect stated after the cause, another matter, or a second part of the
        # question may add one sentence to the ``max_sentences`` of the ordinary answer
        self.max_quoted = max(max_quoted, max_sentences)
        # with a warehouse, each prose hit is read with its ``window`` neighbouring passages on each side:
        # a cause often sits in the passage after the one that names the subject
        self.warehouse = warehouse
        self.window = window
        self._chunks_of: dict[str, dict[str, Chunk]] = {}

    def _with_neighbours(self, hits: Sequence[Hit]) -> list[Hit]:
        """The first ``max_hits`` hits by rank, then the prose passages next to each prose hit (reading
        order of core.chunks, ``window`` on each side) and the prose passages on each table row hit's page
        (the MD&A explains a table on its page: "Products gross margin percentage increased ... due to ..."
        beside the gross margin table), as hits of the same rank, stage ``window``."""
        used = sorted(hits, key=lambda h: h.rank)[: self.max_hits]
        if self.warehouse is None or self.window <= 0 or not used:
            return used
        seen = {h.chunk_id for h in used}
        out = list(used)
        for hit in used:
            chunks = self._filing_chunks(hit.filing_id)
            own = chunks.get(hit.chunk_id)
            if own is None:   # not a chunk of the warehouse (an outside system's context): no neighbours
                continue
            prose = (c for c in chunks.values() if c.chunk_type == "prose" and c.is_leaf)
            if own.chunk_type == "prose":
                near = [c for c in prose if own.position - self.window <= c.position <= own.position + self.window]
            else:
                near = [c for c in prose if c.page_start <= own.page_end and c.page_end >= own.page_start]
            for c in sorted(near, key=lambda c: c.position):
                if c.chunk_id not in seen:
                    seen.add(c.chunk_id)
                    out.append(copy_hit(hit_from_chunk(c, 0.0, "window"), rank=hit.rank))
        return out

    def _filing_chunks(self, filing_id: str) -> dict[str, Chunk]:
        """A filing's chunks (records.load_chunks: NULLs read as None), one warehouse query per filing and answerer
        (an answer per query was a third of an evaluation's answer time). Kept for the answerer's life, as the
        calculator keeps its fact layer: the session builds answerers per corpus state."""
        known = self._chunks_of.get(filing_id)
        if known is None:
            known = self._chunks_of[filing_id] = {c.chunk_id: c for c in load_chunks(self.warehouse, filing_id)}
        return known

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
        best = self._fuller_statement(candidates[0], candidates)
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
            if s.antecedent is not None and s.antecedent not in chosen:
                continue    # "The year over year increase was ..." refers to a sentence not quoted
            if subject.years and (said := years_in(s.text)) and not said & set(subject.years):
                continue    # "BCA revenues decreased ... in 2020 compared with 2019" for a 2021 question
            # a second sentence continues the first, or is as much about the subject and adds a cue
            # (the next sentence of the same passage only when it is as much about the subject: "Japan net
            # sales ..." is not continued by "Rest of Asia Pacific net sales ...")
            if (same_hit_next and (CONTINUES_RE.search(s.text) or (s.cue > 0 and s.head >= best.head))) or \
                    (s.score >= 0.85 * best.score and s.head >= best.head and set(s.cues) - set(best.cues)):
                chosen.append(s)
        added = self._effect_after(best, sentences, chosen, subject)
        if added is None and "legal" in route.topics and _SEVERAL_RE.search(question):
            added = self._other_matters(best, candidates, chosen, subject.topical)
        for s in added or []:
            if len(chosen) < self.max_quoted:
                chosen.append(s)
        second = _SECOND_PART_RE.split(question, maxsplit=1)
        if len(second) == 2 and len(chosen) < self.max_quoted:
            part = self._second_part(second[1], read, periods, best, chosen, subject)
            if part is not None:
                chosen.append(part)
                details["second_part"] = second[1]
        citations: list[Citation] = []
        for s in chosen:
            cit = (s.hit.filing_id, page_of(s), s.hit.chunk_id)
            if cit not in citations:
                citations.append(cit)
        sources = "; ".join(f"{f} p. {p}" for f, p, _ in citations)
        text = " ".join(s.text for s in chosen) + f" [{sources}]"
        lead = self._line_change(question, best, read, subject, route, details)
        if lead is not None:
            # the magnitude first, cited to its table's page, then the cause as the filing states it
            table = [c for c in lead.citations if c not in citations]
            pages = "; ".join(dict.fromkeys(f"{f} p. {p}" for f, p, _ in lead.citations))
            text = f"{lead.sentence()} [{pages}]. {text}"
            citations += table
        details["sentences"] = [{"text": s.text, "chunk_id": s.hit.chunk_id, "page": page_of(s), "score": round(s.score, 3),
                                 "subject": round(s.subject, 3), "cues": s.cues, "named": s.named} for s in chosen]
        return self._result(text, citations, "answered", details, t0)

    def _line_change(self, question: str, best: Sentence, read: Sequence[Hit], subject: Any, route: Any,
                     details: dict[str, Any]) -> LineChange | None:
        """The change of the line a cause question names, in the quoted sentence's filing, or None (recorded in
        ``details["figures"]`` either way)."""
        if self.figures is None or "cause" not in route.topics:
            return None
        year = max(subject.years) if subject.years else None
        change, reason = self.figures.change(question, best.hit.filing_id, year, read)
        details["figures"] = {"lead": change.sentence(), "pages": [c[1] for c in change.citations]} if change \
            else {"none": reason}
        return change

    @staticmethod
    def _fuller_statement(best: Sentence, candidates: Sequence[Sentence]) -> Sentence:
        """``best``, or a near-equal cause quoted with the sentence it refers back to when that pair states
        best's cause and more ("Gross margins increased to 75.0% ... from 72.7% .... The year over year increase
        was primarily driven by a higher mix of Data Center revenue." over "Gross margin increased ... driven by
        a higher mix of Data Center revenue.")."""
        if best.antecedent is not None:
            return best
        cause = _cause_stems(best)
        for s in candidates[1:]:
            if s.antecedent is not None and s.score >= 0.85 * best.score and cause and \
                    cause <= word_stems(s.antecedent.text + " " + s.text):
                return s
        return best

    def _effect_after(self, best: Sentence, sentences: Sequence[Sentence], chosen: Sequence[Sentence],
                      subject: Any) -> list[Sentence] | None:
        """The sentence after the quoted ones in best's passage (at most two on) that names as much of the
        subject and states an effect on it: the cause is often spread over it ("... due primarily to lower
        net sales of iPhone and iPad. The weakness in the renminbi ... had an unfavorable year-over-year impact
        on Greater China net sales during 2024."; "Changes in foreign currency exchange rates reduced
        International net sales by $15.0 billion in 2022.")."""
        for s in sentences:
            if s.hit.chunk_id != best.hit.chunk_id or not best.index < s.index <= best.index + 2 or s in chosen:
                continue
            if subject.years and (said := years_in(s.text)) and not said & set(subject.years):
                continue    # "2019 vs. 2018 R&D spending decreased by $181 million ..." after the 2020 cause
            # the effect on what best is about: the names leading best ("Japan net sales decreased ...") are named
            # again ("... impact on Japan net sales"), not another region's ("... on Rest of Asia Pacific net sales")
            if s.subject >= max(best.subject, self.min_subject) and subject.names_one(s.text) \
                    and all(n in s.text for n in _head_names(best)) and _EFFECT_RE.search(s.text):
                return [s]
        return None

    def _other_matters(self, best: Sentence, candidates: Sequence[Sentence], chosen: Sequence[Sentence],
                       topical: bool) -> list[Sentence]:
        """For a legal question that asks for several matters ("the main legal proceedings"): the best
        answering sentence of each other passage (each passage of Item 3 or the contingencies note holds one
        matter) that names one matter (a date, a party, a court), when it answers nearly as well; for a
        question that names only its topic, any that reads as a matter (two strong legal cues: "On January 16,
        2024, the Company ... filed a statement of compliance with the California District Court"), since a
        matter's sentence does not repeat the words "legal proceedings"."""
        taken = {s.hit.chunk_id for s in chosen}
        quoted = set().union(*(word_stems(c.text) for c in chosen))   # what the answer already says
        out = []
        for s in candidates:
            near = s.cue >= TOPICAL_MIN_CUE if topical else s.score >= 0.75 * best.score
            if s.hit.chunk_id in taken or not near:
                continue
            if word_stems(s.text) <= quoted or not _MATTER_RE.search(s.text):
                continue
            taken.add(s.hit.chunk_id)
            out.append(s)
        return out

    def _second_part(self, part: str, read: Sequence[Hit], periods: Sequence[str] | None, best: Sentence,
                     chosen: Sequence[Sentence], subject: Any) -> Sentence | None:
        """The best sentence answering the second part of a two-part question ("..., and how did currency
        affect them?", "..., and why did the operating loss shrink?"), about what the first part names
        (a sentence on another region's currency answers nothing), not already quoted; best's passage first."""
        _, own, sentences = self.scored_sentences(part, read, periods, max_hits=len(read))
        if own.topical or not own.groups:
            return None     # "... and what drove it?": the first part's subject, answered already
        quoted = {s.text for s in chosen}
        said = set().union(*(word_stems(c.text) for c in chosen))   # what the answer already says
        fits = [s for s in sentences if s.answers and s.text not in quoted and subject.names_one(s.text)
                and not word_stems(s.text) <= said]
        if not fits:
            return None
        return max(fits, key=lambda s: (s.score + (0.5 if s.hit.chunk_id == best.hit.chunk_id else 0.0), -s.hit.rank))

    @staticmethod
    def _result(text: str, citations: list[Citation], state: str, details: dict, t0: float) -> AnswerResult:
        latency = round((time.perf_counter() - t0) * 1000, 3)
        return AnswerResult(text, citations, state, latency_ms=latency, details={**details, "timings_ms": {"total": latency}})

