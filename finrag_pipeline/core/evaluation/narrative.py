"""The ``narrative`` answerer: the sentences of the retrieved prose that answer a qualitative question.

"What drove the increase in Apple's Services net sales in FY2021?" is answered by quoting the MD&A
sentence that states the cause ("Services net sales increased ... due primarily to higher net sales
from advertising, the App Store and cloud services."), with its page, never by a figure.

For a question it (1) reads the question's kind and topics (core/question_kind.py: cause,
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

Nothing is written in the answerer's own words: a quoted sentence carries the filing's key facts or
the answer abstains, so a restated question or "due to various factors" never comes out of it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary, default_vocabulary
from finrag_pipeline.core.answering import AnswerResult, Citation, register_answerer
from finrag_pipeline.core.chunking.sentences import split_sentences
from finrag_pipeline.core.evaluation.answerers import asked_years
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.question_kind import QuestionKinds, QuestionRoute, default_question_kinds
from finrag_pipeline.core.scoring.answer_metrics import years_in

# The prose chunk's context header: "Apple Inc. (AAPL) 10-K FY2022 | Item 7 Management's ... | "
_HEADER_RE = re.compile(r"^[^|\n]{1,200}\|[^|\n]{0,300}\|\s*")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z&'\-]*[A-Za-z]|[A-Za-z]")
# Words of a question that name no subject: question forms, the kind's own verbs, filler.
_QUESTION_WORDS = frozenset(re.findall(r"\S+", """
a an and are as at be been by can could did do does during for from had has have how if in into is it its
of on or over than that the their them these this those to was were what when where which who whom whose
why will with would about across against all any also between both each compared versus vs fiscal year
years fy company company's companies business drove drive drives driven driver drivers cause caused causes
reason reasons explain explains explained explanation behind factor factors contributed contribute led lead
main key primary major principal significant describe discuss summarize summarise outline list name
identify mention mentioned cite cited report reported reportable disclose disclosed its their our we us affect
affected impact impacted change changes changed spend spending spent amount amounts level levels
performance result results period periods most least highest lowest largest smallest fastest slowest
biggest best worst involved involve involves involving face faces facing related regarding concerning
material any
"""))
_UP_RE = re.compile(r"\b(?:increas\w*|grew|grow\w*|growth|rose|rise|rising|higher|expan\w*|jump\w*|improv\w*|gain\w*|"
                    r"surg\w*|strong\w*|accelerat\w*)\b",
                    re.IGNORECASE)
_DOWN_RE = re.compile(r"\b(?:decreas\w*|declin\w*|fell|fall\w*|lower|contract\w*|shr[ai]nk\w*|drop\w*|reduc\w*|"
                      r"weak\w*|slow\w*|slump\w*)\b",
                      re.IGNORECASE)
# A second sentence that continues the first ("This increase was ...", "The decrease ...", "Partially offset ...").
_CONTINUES_RE = re.compile(r"^(?:this|these|the\s+(?:increase|decrease|growth|decline|change)|"
                           r"(?:partially\s+)?offset|in\s+addition|additionally|also)\b", re.IGNORECASE)
_LIST_RE = re.compile(r"(?:[^,;]+,){2,}[^,;]*\band\b|;\s")
_ENTITY_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z&]+(?:\s+[A-Z][a-zA-Z&]+)*")
_FIGURE_TOKEN_RE = re.compile(r"(?<![A-Za-z])\$?\(?\d[\d,.]*\)?%?")
_MAX_FIGURES = 8       # more figures than this: a table run into the text, not a sentence
_TOPICAL_MIN_CUE = 4.0  # cue weight a sentence needs to answer a topic-only question (two strong cues)
_MIN_SENTENCE_CHARS = 40
_MAX_SENTENCE_CHARS = 900


def _stem(word: str) -> str:
    """A light stem, enough to meet plurals and verb forms ("services" ~ "service", "sales" ~ "sale")."""
    w = word.lower().strip("'-")
    w = w[:-2] if w.endswith("'s") else w
    if len(w) > 6:
        return w[:6]
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def word_stems(text: str) -> set[str]:
    """The light stems of the words of ``text``."""
    return {_stem(w) for w in _WORD_RE.findall(text)}


# words of a topic itself (question_kinds.yaml) rather than of its subject
_TOPIC_STEMS = frozenset(_stem(w) for w in ("risk", "risks", "litigation", "legal", "lawsuit", "proceedings",
                                            "customer", "customers", "concentration", "segment", "segments",
                                            "geographic", "geographies", "region", "regions", "countries",
                                            "uncertainty", "uncertainties", "strategy", "competition"))


@dataclass
class Subject:
    """What a question is about: word groups a sentence must name (each group: alternative stems or
    phrases), the direction asked, and the years."""

    groups: list[tuple[str, frozenset[str], tuple[str, ...]]] = field(default_factory=list)  # (label, stems, phrases)
    names: set[str] = field(default_factory=set)       # stems of capitalised names in the question (weighed double)
    direction: int = 0                                  # +1 increase, -1 decrease, 0 not asked
    years: list[int] = field(default_factory=list)
    topical: bool = False    # the question names only its topic ("What legal proceedings ...?")

    def overlap(self, sentence: str) -> tuple[float, list[str]]:
        """Weighted share of the subject's groups the sentence names, and their labels."""
        if not self.groups:
            return 0.0, []
        stems = word_stems(sentence)
        low = sentence.lower()
        return self._share(stems, low)

    def _share(self, stems: set[str], low: str) -> tuple[float, list[str]]:
        got, total, named = 0.0, 0.0, []
        for label, alternatives, phrases in self.groups:
            weight = 2.0 if alternatives & self.names else 1.0
            total += weight
            if alternatives & stems or any(p in low for p in phrases):
                got += weight
                named.append(label)
        return got / total, named

    def head_share(self, sentence: str, cue_at: int | None) -> float:
        """Share of the subject named before the sentence's first cue (or in its first 12 words): the
        sentence is about the subject ("Services net sales increased ... due to ...") rather than
        mentioning it among others."""
        head = sentence[:cue_at] if cue_at else " ".join(sentence.split()[:12])
        return self._share(word_stems(head), head.lower())[0] if self.groups else 0.0


def read_subject(question: str, route: QuestionRoute, vocabulary: AnalystVocabulary | None,
                 company_words: set[str], periods: Sequence[str] | None = None) -> Subject:
    """The subject of ``question``: its content words, less question forms, the company's name and the
    topic words themselves ("risks", "litigation" say what kind of answer, not what it is about)."""
    subject = Subject(years=asked_years(question, periods))
    text = re.sub(r"\b(?:FY|CY|Q[1-4])\s?'?\d{2,4}\b|\b(?:19|20)\d\d\b", " ", question)
    if _UP_RE.search(text) and not _DOWN_RE.search(text):
        subject.direction = 1
    elif _DOWN_RE.search(text) and not _UP_RE.search(text):
        subject.direction = -1
    text = _UP_RE.sub(" ", _DOWN_RE.sub(" ", text))
    for m in (vocabulary.match(text) if vocabulary is not None else []):
        phrases = tuple(e.lower() for e in m.expansions) + (m.term.lower(),)
        subject.groups.append((m.term, frozenset(word_stems(m.term)), phrases))
        text = re.sub(re.escape(m.term), " ", text, flags=re.IGNORECASE)
    topic_groups: list[tuple[str, frozenset[str], tuple[str, ...]]] = []
    for i, word in enumerate(_WORD_RE.findall(text)):
        low = word.lower()
        stem = _stem(low)
        if low in _QUESTION_WORDS or len(low) < 3 or low in company_words or stem in company_words:
            continue
        if stem in {g[0] for g in subject.groups + topic_groups}:
            continue
        group = (stem, frozenset({stem}), ())
        if stem in _TOPIC_STEMS:
            topic_groups.append(group)
            continue
        if word[:1].isupper() and i > 0:
            subject.names.add(stem)
        subject.groups.append(group)
    # the topic words ("risks", "litigation") say what kind of answer is asked, not what it is about:
    # they are the subject only of a question that names nothing else ("What legal proceedings ...?")
    if not subject.groups:
        subject.groups, subject.topical = topic_groups, True
    return subject


@dataclass
class _Sentence:
    text: str
    hit: Hit
    index: int            # position in its hit
    start_frac: float     # where in the hit's text it starts (0..1), for the page of a multi-page chunk
    score: float = 0.0
    subject: float = 0.0
    head: float = 0.0
    cue: float = 0.0
    cues: list[str] = field(default_factory=list)
    named: list[str] = field(default_factory=list)


def _prose_of(hit: Hit) -> str:
    text = hit.text or ""
    return _HEADER_RE.sub("", text, count=1) if "|" in text[:400] else text


def _sentences(hit: Hit) -> list[_Sentence]:
    text = _prose_of(hit)
    out = []
    for i, (a, b) in enumerate(split_sentences(text)):
        s = _without_repeated_heading(re.sub(r"\s+", " ", text[a:b]).strip())
        if (_MIN_SENTENCE_CHARS <= len(s) <= _MAX_SENTENCE_CHARS and re.search(r"[a-z]{3}", s)
                and len(_FIGURE_TOKEN_RE.findall(s)) <= _MAX_FIGURES):
            out.append(_Sentence(s, hit, i, a / max(len(text), 1)))
    return out


def _without_repeated_heading(sentence: str) -> str:
    """A heading run into its sentence by the PDF text layer: "Japan Japan net sales ..." -> "Japan net sales ..."."""
    words = sentence.split(" ")
    for k in range(min(6, len(words) // 2), 0, -1):
        if words[:k] == words[k:2 * k]:
            return " ".join(words[k:])
    return sentence


def _company_words(hits: Sequence[Hit]) -> set[str]:
    """Words of the company names in the hits' context headers ("Apple Inc. (AAPL) 10-K ...")."""
    out: set[str] = set()
    for h in hits:
        m = re.match(r"^([^|(\n]{1,120})(?:\(([A-Z.\-]{1,6})\))?", h.text or "")
        if m and "|" in (h.text or "")[:400]:
            for w in _WORD_RE.findall(m.group(1)):
                if w.lower() not in {"inc", "corp", "corporation", "company", "co", "the", "ltd", "plc", "holdings"}:
                    out.update({w.lower(), _stem(w)})
            if m.group(2):
                out.add(m.group(2).lower())
    return out


def _page_of(sentence: _Sentence) -> int:
    hit = sentence.hit
    span = hit.page_end - hit.page_start
    return hit.page_start + (min(span, int(sentence.start_frac * (span + 1))) if span > 0 else 0)


@register_answerer("narrative")
class NarrativeAnswerer:
    """Offline answerer of qualitative questions: one or two quoted sentences, with citations."""

    name = "narrative"

    def __init__(self, kinds: QuestionKinds | None = None, vocabulary: AnalystVocabulary | None = None, *,
                 max_hits: int = 10, min_subject: float = 0.5, max_sentences: int = 2) -> None:
        self.kinds = kinds or default_question_kinds()
        self.vocabulary = vocabulary if vocabulary is not None else default_vocabulary()
        self.max_hits = max_hits
        self.min_subject = min_subject
        self.max_sentences = max_sentences

    def _score(self, s: _Sentence, subject: Subject, route: QuestionRoute, cue_topics: tuple[str, ...]) -> None:
        s.subject, s.named = subject.overlap(s.text)
        s.cue, s.cues = self.kinds.cue_strength(s.text, cue_topics)
        cue_at = min((s.text.lower().find(c) for c in s.cues if c in s.text.lower()), default=None)
        head = s.head = subject.head_share(s.text, cue_at or None)
        section_bonus = 0.0
        if s.hit.section in route.sections:
            section_bonus = 0.6 - 0.15 * route.sections.index(s.hit.section)
        years = years_in(s.text)
        period = 0.0
        if subject.years:
            if years & set(subject.years):
                period = 0.4
            elif years and not years & {y - 1 for y in subject.years}:
                period = -0.8  # about another year
            if s.hit.fiscal_year is not None and s.hit.fiscal_year not in subject.years and not years:
                period -= 0.3  # an undated sentence of another year's filing
        direction = 0.0
        if subject.direction:
            up, down = bool(_UP_RE.search(s.text)), bool(_DOWN_RE.search(s.text))
            if (subject.direction > 0 and up and not down) or (subject.direction < 0 and down and not up):
                direction = 0.3
            elif (subject.direction > 0 and down and not up) or (subject.direction < 0 and up and not down):
                direction = -0.3
        structure = 0.2 * bool(_LIST_RE.search(s.text)) + 0.1 * min(3, len(_ENTITY_RE.findall(s.text)))
        s.score = (3.0 * s.subject + 1.0 * head + min(s.cue, 6.0) / 2.0 + section_bonus + period + direction + structure
                   - 0.05 * (s.hit.rank - 1))

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        t0 = time.perf_counter()
        route = self.kinds.classify(question)
        details: dict[str, Any] = {"route": route.as_info()}
        if not hits:
            return self._result("No evidence retrieved.", [], "no_evidence", details, t0)
        used = sorted(hits, key=lambda h: h.rank)[: self.max_hits]
        subject = read_subject(question, route, self.vocabulary, _company_words(used), periods)
        details["subject"] = [g[0] for g in subject.groups]
        # a topic without cues (or a metric question handed here) ranks by subject alone
        cue_topics = tuple(t for t in route.topics if self.kinds.cues.get(t))
        candidates: list[_Sentence] = []
        for hit in used:
            if hit.chunk_type not in ("prose", "section"):
                continue
            for s in _sentences(hit):
                self._score(s, subject, route, cue_topics)
                about = s.subject >= self.min_subject and bool(s.named)
                # a question naming only its topic is answered by a sentence that reads as one of its
                # answers (a lawsuit named, a risk stated), whatever words it uses
                if subject.topical and s.cue >= _TOPICAL_MIN_CUE:
                    about = True
                if about and (not cue_topics or s.cue > 0):
                    candidates.append(s)
        if not candidates:
            what = " ".join(details["subject"][:6]) or "the question"
            return self._result(f"Insufficient context: no retrieved passage answers it ({what}).", [],
                                "insufficient_context", details, t0)
        candidates.sort(key=lambda s: (-s.score, s.hit.rank, s.index))
        best = candidates[0]
        chosen = [best]
        for s in candidates[1:]:
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

