"""Sentences of retrieved prose scored as answers to a qualitative question: THE scoring the ``narrative``
answerer quotes by (core/evaluation/narrative.py) and ``qualitative_sentences`` ranks passages by
(core/retrieval/qualitative_routing.py ``sentence_weight``).

For a question it (1) reads the question's kind and topics (core/question_kind.py: cause, impact, risk,
legal, customers, geography, segments, business) and its subject: the words that name the line item,
segment or matter (the analyst vocabulary's expansions count as the same word: "R&D" is "research and
development"; so do the prose phrasings of question_kinds.yaml: "earn more" is "operating income"), the
direction asked (an increase or a decrease) and the years; an acronym ("TAC") is named by the words it
abbreviates ("traffic acquisition costs") and a program number ("787", "A100") is a name of the subject;
(2) splits the prose hits into sentences (core/chunking/sentences.py, plus sentences that open with a
lower-case name: "iPhone"), without the page header, heading or table the text layer runs into them; (3) marks as answering the sentences that name at least
half of the subject (and a name the question gives: "Products", "Greater China") and, for a topic with
cues, carry one ("driven by", "due to", "primarily", "filed a lawsuit", ...); a sentence that refers back
to the change the previous one states ("The year over year increase was primarily driven by ...") takes
that sentence's subject; (4) scores them by subject overlap, how much of the subject leads the sentence,
cue strength (saturating at two strong cues), the 10-K Item the topic routes to, the year and the
direction, lists and named entities, and the hit's rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from finrag_pipeline.core.analyst.vocabulary import (
    AnalystVocabulary,
    VocabularyFile,
    VocabularyTerm,
    default_vocabulary,
)
from finrag_pipeline.core.asked import asked_years
from finrag_pipeline.core.chunking.sentences import split_sentences
from finrag_pipeline.core.ingest.sections import item_key
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
according describes described discusses discussed mentions notes note item items annual report reports filing
form 10-k k sec says say state states stated explain year-over-year year-on-year yoy
"""))
_UP_RE = re.compile(r"\b(?:increas\w*|grew|grow\w*|growth|rose|rise|rising|higher|expan\w*|jump\w*|improv\w*|gain\w*|"
                    r"surg\w*|strong\w*|accelerat\w*)\b",
                    re.IGNORECASE)
_DOWN_RE = re.compile(r"\b(?:decreas\w*|declin\w*|fell|fall\w*|lower|contract\w*|shr[ai]nk\w*|drop\w*|reduc\w*|"
                      r"weak\w*|slow\w*|slump\w*)\b",
                      re.IGNORECASE)
# A second sentence that continues the first ("This increase was ...", "The decrease ...", "Partially offset ...").
CONTINUES_RE = re.compile(r"^(?:this|these|the\s+(?:increase|decrease|growth|decline|change)|"
                           r"(?:partially\s+)?offset|in\s+addition|additionally|also)\b", re.IGNORECASE)
# a sentence that refers back to the change the previous one states ("The year over year increase was
# primarily driven by ...", "This decrease reflects ..."): its subject is the previous sentence's. One that names
# its own ("The year-over-year growth in selling, general and administrative expense ...") refers to nothing.
_ANAPHORA_RE = re.compile(r"^(?:the|this|these|that|such)\s+(?:(?:year[\s-]+(?:over|on)[\s-]+year|overall|net|"
                          r"total)\s+)?(?:increases?|decreases?|growth|declines?|changes?|improvements?|reductions?|"
                          r"expansions?|contractions?|rises?)\b(?!\s+(?:in|of|for)\b)", re.IGNORECASE)
# a period phrase other producers open the referring sentence with ("For fiscal 2021, the increase was primarily due
# to ...", "For fiscal 2021 and 2020, the increases were ...")
_PERIOD_OPENER_RE = re.compile(r"^(?:for|in|during)\s+(?:the\s+)?(?:fiscal\s+)?(?:year\s+)?(?:FY\s?)?(?:19|20)\d\d"
                               r"(?:\s+and\s+(?:fiscal\s+)?(?:19|20)\d\d)?\s*,\s*", re.IGNORECASE)
# "The operating profit was driven by ...", "These charges were ...": a determiner, a short noun phrase, a verb
_DETERMINED_NOUN_RE = re.compile(r"^(?:the|this|these|that|such)\s+((?:[a-z&\-]+\s+){0,2}[a-z&\-]+)\s+"
                                 r"(?:was|were|is|are|reflect\w*|result\w*)\b", re.IGNORECASE)


def refers_back(sentence: str, previous: str) -> bool:
    """Whether ``sentence`` refers back to the change or the line ``previous`` states: "The year over year increase
    was primarily driven by ...", "For fiscal 2021, the increase was primarily due to ..." (after "Our gross profit rate
    increased 20 basis points ..."), "The operating profit was driven by ..." (after "NSG had an operating profit of
    $361 million ..."). A sentence naming its own line ("The increase in cost of revenues ...") refers to nothing."""
    text = _PERIOD_OPENER_RE.sub("", sentence, count=1)
    if _ANAPHORA_RE.match(text):
        return True
    m = _DETERMINED_NOUN_RE.match(text)
    return bool(m) and re.search(r"\b" + re.escape(m.group(1).lower()) + r"\b", previous.lower()) is not None


# what the text layer runs into a sentence: the page header, a heading before the sentence's first word
_PAGE_HEADER_RE = re.compile(r"^(?:Table of Contents\s+)+", re.IGNORECASE)
_HEADING_RE = re.compile(r"^(?:(?i:item)\s+\d+[A-Ca-c]?\.\s+)?(?:(?:[A-Z][\w&,’'\-]*|\d{4}|and|of|the|for|in|to)\s+){1,10}?"
                         r"(?=(?:The|There|On|In|During|Our|We|As|For|This|These|Total|Net)\s+[a-z0-9$])")
_PRIOR_YEAR_RE = re.compile(r"\b(?:prior|previous)\s+(?:fiscal\s+)?year\b|\byear[\s-]+(?:over|on)[\s-]+year\b", re.IGNORECASE)
_LIST_RE = re.compile(r"(?:[^,;]+,){2,}[^,;]*\band\b|;\s")
_ENTITY_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z&]+(?:\s+[A-Z][a-zA-Z&]+)*")
_FIGURE_TOKEN_RE = re.compile(r"(?<![A-Za-z])\$?\(?\d[\d,.]*\)?%?")
# a sentence of what may happen, or of causes in general: no cause of a change that happened
_HEDGED_RE = re.compile(r"\b(?:may|might|could|can)\s+(?:also\s+)?(?:fluctuate|vary|change|be\s+affected|be\s+impacted)\b|"
                        r"\b(?:various|many|a\s+number\s+of|several)\s+factors\b", re.IGNORECASE)
# words that name a line only as another line's base, or in a concession (Subject.about)
_COST_OF_RE = re.compile(r"\bcosts?\s+of\s+(?:net\s+|total\s+)?(?:revenues?|sales)\b", re.IGNORECASE)
_PERCENT_OF_RE = re.compile(r"\bas\s+a\s+(?:percent(?:age)?|share)\s+of\s+(?:(?:net|total|segment)\s+)*(?:revenues?|sales)\b",
                            re.IGNORECASE)
_CONCEDED_RE = re.compile(r"\b(?:despite|in\s+spite\s+of|notwithstanding)\b[^,;]*", re.IGNORECASE)
_CONCESSION_RE = re.compile(r"^(?:despite|although|though|while|even\s+though)\b[^,]{0,200},", re.IGNORECASE)
_DEFINITE_CHANGE_RE = re.compile(r"^(?:the|this|these)\s+(?:increase|decrease|growth|decline)s?\b", re.IGNORECASE)
# a sentence opening with the change it explains, and the five words that name what changed
_OPENING_CHANGE_RE = re.compile(r"^(?:\S+\s+){0,3}?((?:increase|decrease|growth|decline)s?\s+in)\s+(?:\S+\s+){1,5}",
                                re.IGNORECASE)
_MAX_FIGURES = 8       # more figures than this: a table run into the text, not a sentence
TOPICAL_MIN_CUE = 4.0  # cue weight a sentence needs to answer a topic-only question (two strong cues)
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


# words of a topic itself (question_kinds.yaml) rather than of its subject, by the topic they name
_TOPIC_WORDS = {"risk": ("risk", "risks", "uncertainty", "uncertainties"),
                "legal": ("litigation", "legal", "lawsuit", "proceedings"),
                "customers": ("customer", "customers", "concentration"), "segments": ("segment", "segments"),
                "geography": ("geographic", "geographies", "region", "regions", "countries"),
                "business": ("strategy", "competition")}
_TOPIC_OF = {_stem(w): topic for topic, words in _TOPIC_WORDS.items() for w in words}
_TOPIC_STEMS = frozenset(_TOPIC_OF)
_KIND_TOPICS = ("risk", "legal")   # topics that name the kind of answer, whatever it is about


@dataclass
class Subject:
    """What a question is about: word groups a sentence must name (each group: alternative stems or
    phrases), the direction asked, and the years."""

    groups: list[tuple[str, frozenset[str], tuple[str, ...]]] = field(default_factory=list)  # (label, stems, phrases)
    names: set[str] = field(default_factory=set)       # stems of capitalised names in the question (weighed double)
    # an acronym of the question ("TAC", "BGS") -> the pattern of the words it abbreviates ("traffic acquisition
    # costs"): 10-Ks spell out what analysts abbreviate
    acronyms: dict[str, re.Pattern] = field(default_factory=dict)
    line_items: set[str] = field(default_factory=set)  # labels of the analyst vocabulary's terms ("R&D"; weighed double)
    direction: int = 0                                  # +1 increase, -1 decrease, 0 not asked
    years: list[int] = field(default_factory=list)
    topical: bool = False    # the question names only its topic ("What legal proceedings ...?")
    asked: set[str] = field(default_factory=set)   # stems of every word of the question and the company's name

    def narrower_names(self, sentence: str, cue_at: int | None) -> list[str]:
        """The names a sentence gives its subject that the question does not ("Our Canadian segment SG&A
        percentage ...", "Footwear revenues contracted ...", "... increased in our Other International operations
        primarily due to"): before its first cue, capitalised words the question and the company's name do not
        hold, a sentence's opening word counted only when it qualifies the subject ("Footwear revenues"). A question
        that names no segment, region or product asks about the whole: such a sentence answers about a part."""
        head = sentence[:cue_at] if cue_at else " ".join(sentence.split()[:12])
        words = _WORD_RE.findall(head)
        out = []
        for i, w in enumerate(words):
            stem = _stem(w)
            if stem == "segmen" and stem not in self.asked:
                out.append(w)   # "Net sales for the Walmart U.S. segment ...": a segment named by the company's name
                continue
            if not w[:1].isupper() or stem in self.asked or w.lower() in _NOT_NAMES or len(w) < 2:
                continue
            if i == 0 and not (len(words) > 1 and _stem(words[1]) in self.asked and _stem(words[1]) in self._stems()):
                continue
            out.append(w)
        return out

    def _stems(self) -> set[str]:
        return set().union(*(g[1] for g in self.groups)) if self.groups else set()

    def overlap(self, sentence: str) -> tuple[float, list[str]]:
        """Weighted share of the subject's groups the sentence names, and their labels."""
        if not self.groups:
            return 0.0, []
        sentence = self.about(sentence)
        stems = word_stems(sentence)
        low = sentence.lower()
        return self._share(stems, low)

    def about(self, sentence: str) -> str:
        """The sentence without the words that name the subject only as another line's base or a concession: "cost
        of revenues", "operating expenses as a percentage of net sales" name a cost, not revenues or net sales (unless
        the question asks for a cost or a percentage); "Despite increased net sales ..., operating expenses ..." is
        about operating expenses."""
        out = _CONCESSION_RE.sub(" ", sentence, count=1)
        if "cost" not in self.asked:
            out = _COST_OF_RE.sub(" ", out)
        if not self.asked & {"percen", "ratio", "share", "rate"}:
            out = _PERCENT_OF_RE.sub(" ", out)
        return out

    def _share(self, stems: set[str], low: str) -> tuple[float, list[str]]:
        got, total, named = 0.0, 0.0, []
        for label, alternatives, phrases in self.groups:
            weight = 2.0 if alternatives & self.names or label in self.line_items else 1.0
            total += weight
            acronym = self.acronyms.get(label)
            if alternatives & stems or any(p in low for p in phrases) or (acronym is not None and acronym.search(low)):
                got += weight
                named.append(label)
        return got / total, named

    def names_one(self, sentence: str) -> bool:
        """Whether the sentence names one of the question's names ("Products", "Greater China"), when it
        has any: a sentence about another segment or region answers another question."""
        if not self.names:
            return True
        named = self._share(word_stems(sentence), sentence.lower())[1]
        return any(stems & self.names for label, stems, _ in self.groups if label in named)

    def lead_share(self, sentence: str) -> float:
        """Share of the subject named in the sentence's first six words: a sentence about the subject
        opens with it ("Services net sales increased ...")."""
        lead = " ".join(self.about(sentence).split()[:6])
        return self._share(word_stems(lead), lead.lower())[0] if self.groups else 0.0

    def head_share(self, sentence: str, cue_at: int | None) -> float:
        """Share of the subject named before the sentence's first cue (or in its first 12 words): the
        sentence is about the subject ("Services net sales increased ... due to ...") rather than
        mentioning it among others."""
        head = self.about(sentence[:cue_at] if cue_at else " ".join(sentence.split()[:12]))
        return self._share(word_stems(head), head.lower())[0] if self.groups else 0.0


# capitalised words that name no part of a company: openers, periods, a company's legal form
_NOT_NAMES = frozenset(["the", "this", "these", "that", "those", "our", "we", "in", "on", "during", "for", "as", "total", "net", "changes", "excluding", "fiscal", "year", "inc", "corp", "corporation", "company", "ltd", "plc", "co", "llc", "a", "an", "and", "of", "to", "by", "at", "from", "with", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "u.s", "us", "also", "overall", "consolidated"])
_ACRONYM_RE = re.compile(r"[A-Z]{3,6}")
_MODEL_NUMBER_RE = re.compile(r"(?<![\w$.,])(?!(?:19|20)\d\d\b)(?:[A-Z]{1,3}-?)?\d{3,4}[A-Z]?(?![\w%]|[,.]\d)")
# words an acronym's letters never stand for
_ACRONYM_SKIP = ("the", "and", "of", "for", "in", "on", "to", "a", "an", "our", "its")


def acronym_pattern(acronym: str) -> re.Pattern:
    """The words an upper-case acronym abbreviates, as a pattern on lower-cased text: "TAC" -> "traffic
    acquisition costs" (each letter opens one word of three letters or more, in order, with nothing between)."""
    skip = r"(?!(?:" + "|".join(_ACRONYM_SKIP) + r")\b)"
    return re.compile(r"\b" + r"\s+".join(skip + re.escape(c.lower()) + r"[a-z&\-]{2,}" for c in acronym) + r"\b")


def read_subject(question: str, route: QuestionRoute,
                 vocabulary: AnalystVocabulary | Sequence[AnalystVocabulary] | None,
                 company_words: set[str], periods: Sequence[str] | None = None) -> Subject:
    """The subject of ``question``: its content words, less question forms, the company's name and the
    topic words themselves ("risks", "litigation" say what kind of answer, not what it is about). A term
    of a vocabulary (the analyst vocabulary: "R&D"; the prose phrasings of question_kinds.yaml: "earn
    more") is one word group whose alternatives are its expansions."""
    subject = Subject(years=asked_years(question, periods))
    subject.asked = word_stems(question) | {_stem(w) for w in company_words}
    text = re.sub(r"\b(?:FY|CY|Q[1-4])\s?'?\d{2,4}\b|\b(?:19|20)\d\d\b", " ", question)
    if _UP_RE.search(text) and not _DOWN_RE.search(text):
        subject.direction = 1
    elif _DOWN_RE.search(text) and not _UP_RE.search(text):
        subject.direction = -1
    text = _UP_RE.sub(" ", _DOWN_RE.sub(" ", text))
    # "SG&A as a percentage of net sales": the ratio's base is no subject word (the MD&A's cause sentences name SG&A)
    text = _PERCENT_OF_RE.sub(" ", text)
    vocabularies = [] if vocabulary is None else [vocabulary] if isinstance(vocabulary, AnalystVocabulary) \
        else list(vocabulary)
    for n, vocab in enumerate(vocabularies):
        # the longest term first, each read once: "gross profit" is one subject word, not "gross" + "profit"
        for m in sorted(vocab.match(text), key=lambda m: -len(m.term)):
            term_re = re.compile(r"(?<![\w&])" + r"[\s\-]+".join(map(re.escape, m.term.split())) + r"(?![\w&])",
                                 re.IGNORECASE)
            if not term_re.search(text):
                continue
            phrases = tuple(e.lower() for e in m.expansions) + (m.term.lower(),)
            # a term of several words is named by the phrase (or an expansion), never by any one of its
            # words: "earn more" is not named by "more", "cost of goods sold" not by "of"
            stems = frozenset(word_stems(m.term)) if len(m.term.split()) == 1 else frozenset()
            subject.groups.append((m.term, stems, phrases))
            if n == 0:      # the analyst vocabulary names a line item: the heart of the subject
                subject.line_items.add(m.term)
            text = term_re.sub(" ", text)
    topic_groups: list[tuple[str, frozenset[str], tuple[str, ...]]] = []
    for i, word in enumerate(_WORD_RE.findall(text)):
        low = word.lower()
        stem = _stem(low)
        if low in _QUESTION_WORDS or len(low) < 3 or low in company_words or stem in company_words:
            continue
        if stem in {g[0] for g in subject.groups + topic_groups}:
            continue
        group = (stem, frozenset({stem}), ())
        # a risk or legal question says what kind of answer it asks ("risks"); another topic's words say what it
        # is about ("risks regarding competition", "customer concentration risk"): subject words then (a cause
        # question's "segment" stays a topic word: "Which segment ..., and why ...?")
        if stem in _TOPIC_STEMS and not (route.topics and route.topics[0] in _KIND_TOPICS
                                         and _TOPIC_OF[stem] != route.topics[0]):
            topic_groups.append(group)
            continue
        if word[:1].isupper() and i > 0:
            subject.names.add(stem)
        if _ACRONYM_RE.fullmatch(word):
            subject.acronyms[stem] = acronym_pattern(word)
        subject.groups.append(group)
    # a program or model number ("787", "737 MAX", "A100"; never a year) names the subject as a name does
    for number in dict.fromkeys(_MODEL_NUMBER_RE.findall(text)):
        label = number.lower()
        subject.names.add(label)
        subject.groups.append((label, frozenset({label}), (label,)))
    # the topic words ("risks", "litigation") say what kind of answer is asked, not what it is about:
    # they are the subject only of a question that names nothing else ("What legal proceedings ...?")
    if not subject.groups:
        subject.groups, subject.topical = topic_groups, True
    return subject


@dataclass
class Sentence:
    """One sentence of a prose hit, scored as an answer (``SentenceScorer.scored_sentences``); the narrative
    answerer quotes these."""

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
    lead: float = 0.0
    answers: bool = False   # names enough of the subject and carries a cue of the asked topic
    antecedent: Sentence | None = None   # the sentence an anaphoric one ("The increase was driven by ...") continues
    section: str | None = None   # the 10-K Item it is in: its hit's, or a later one the passage heads it with


def _prose_of(hit: Hit) -> str:
    text = hit.text or ""
    return _HEADER_RE.sub("", text, count=1) if "|" in text[:400] else text


# An Item heading inside a passage, at a line's start or after a sentence's end ("... through the year 2043. ITEM 3.
# LEGAL PROCEEDINGS There are no material ..."): a short Item shares its page with the one before it, and pages carry
# one section (core/ingest/sections.py); a cross-reference ("see Item 1A. Risk Factors") is no heading.
_ITEM_IN_TEXT_RE = re.compile(r"(?:^|\n|(?<=[.:;])[ \t]+)(?i:item)\s+(\d{1,2}[A-Ca-c]?)\s*[.:]\s+(?=[A-Z])")
_HEADING_REACH = 80   # a heading this close to a sentence's start opens it


def _section_at(hit: Hit, text: str, start: int, end: int) -> str | None:
    """The 10-K Item a sentence of ``hit`` is in: the hit's section, or a later Item whose heading the passage
    prints before the sentence (or at its opening)."""
    section = hit.section
    if section is None:
        return None     # the front matter: its table of contents lists every Item
    for m in _ITEM_IN_TEXT_RE.finditer(text, 0, min(end, start + _HEADING_REACH)):
        item = f"Item {m.group(1).upper()}"
        if item_key(item) > item_key(section):
            section = item
    return section


# a bulleted list a line ending with a colon opens ("R&D spending increased by $194 million, or 1%, driven by the
# following:\n+ Investments in our process technology\n- Ramp down of 5G smartphone modem business"): one sentence of
# the opening line and its items, which the splitter (no full stops) runs into the headings and tables around it
_BULLET = r"[+\-\u2013\u2022\u25aa\u25cf\u25a0*]"
_LIST_BLOCK_RE = re.compile(r"^(?:[^\n]{0,30}(?:19|20)\d\d\s+(?:vs\.?|versus|compared\s+(?:to|with))\s+(?:19|20)\d\d[ \t]*\n)?"
                            rf"[^\n]*[a-z][^\n]*:[ \t]*\n(?:[ \t]*{_BULLET}[ \t]+[^\n]+(?:\n|$)){{2,}}", re.MULTILINE)
_BULLET_LINE_RE = re.compile(rf"\n[ \t]*(?={_BULLET}[ \t])")


def _spans(text: str) -> list[tuple[int, int]]:
    """The sentence spans of a passage: each bulleted list block whole, the text around them split into sentences
    (the shared splitter would end one at "2019 vs." inside a list's heading)."""
    out, start = [], 0
    for m in [*_LIST_BLOCK_RE.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        if end > start:
            out += [part for a, b in split_sentences(text[start:end])
                    for part in _split_lowercase_names(text, start + a, start + b)]
        if m is not None:
            out.append((m.start(), m.end()))
            start = m.end()
    return out


def _sentences(hit: Hit) -> list[Sentence]:
    text = _prose_of(hit)
    out = []
    spans = _spans(text)
    for i, (a, b) in enumerate(spans):
        span = text[a:b]
        if _LIST_BLOCK_RE.match(span):
            span = _BULLET_LINE_RE.sub("; ", span.rstrip()).replace(":; ", ": ", 1)
        s = _without_heading(_without_repeated_heading(re.sub(r"\s+", " ", _after_table(span)).strip()))
        if (_MIN_SENTENCE_CHARS <= len(s) <= _MAX_SENTENCE_CHARS and re.search(r"[a-z]{3}", s)
                and len(_FIGURE_TOKEN_RE.findall(s)) <= _MAX_FIGURES):
            out.append(Sentence(s, hit, i, a / max(len(text), 1), section=_section_at(hit, text, a, b)))
    return out


def _after_table(span: str) -> str:
    """The sentence after a table the text layer ran into it ("... Total operating expenses $ 51,345 17 % ...
    Research and Development The year-over-year growth in R&D expense ..."): the lines after the span's last table
    line (two figures or more, and fewer than two words a figure: "Research and development $ 26,251 20 % ..."),
    when the span holds more figures than a sentence does; else the span."""
    if len(_FIGURE_TOKEN_RE.findall(span)) <= _MAX_FIGURES:
        return _without_leading_rows(span)
    lines = span.split("\n")
    table = [i for i, line in enumerate(lines)
             if (n := len(_FIGURE_TOKEN_RE.findall(line))) >= 2 and len(_WORD_RE.findall(line)) < 2 * n]
    return _without_leading_rows("\n".join(lines[table[-1] + 1:]) if table else span)


# a table row: a label, then two figures or more to the line's end ("Membership fees as a percentage of net sales
# 2.17 % 2.24 % 2.27 %", "Net sales $ 163,220 $ 149,351"); prose puts words between its figures ("to 11.20% from 11.02%")
_ROW_END_RE = re.compile(r"(?:(?:^|[ \t])[ \t]*\$?[ \t]*\(?\d[\d,.]*\)?[ \t]*%?){2,}[ \t]*$")


def _without_leading_rows(span: str) -> str:
    """The sentence after the table rows the text layer ran into its start ("Membership fees as a percentage of net
    sales 2.17 % 2.24 % 2.27 %\nThe increase in membership fees was primarily due to ..." -> "The increase ...")."""
    lines = span.split("\n")
    n = 0
    while n < len(lines) - 1 and _ROW_END_RE.search(lines[n]) and re.search(r"[A-Za-z]", lines[n]):
        n += 1
    rest = "\n".join(lines[n:])
    return rest if n and rest.strip()[:1].isupper() and len(rest.strip()) >= _MIN_SENTENCE_CHARS else span


# a sentence that starts with a name spelt in lower case ("... certain products. iPhone net sales increased ..."),
# which the shared splitter (core/chunking/sentences.py, whose spans the chunks keep) does not end
_LOWER_NAME_START = re.compile(r"(?<=[a-z]\.)\s+(?=[a-z]+[A-Z]\w*\s)")


def _split_lowercase_names(text: str, a: int, b: int) -> list[tuple[int, int]]:
    out, start = [], a
    for m in _LOWER_NAME_START.finditer(text, a, b):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, b))
    return out


def _without_heading(sentence: str) -> str:
    """"Table of Contents International sales decreased ..." -> "International sales decreased ...";
    "Item 3. Legal Proceedings Digital Markets Act Investigations On March 25, 2024, ..." -> "On March 25, ...":
    the page header and a Title-Case heading the text layer runs into the sentence that follows it."""
    sentence = _PAGE_HEADER_RE.sub("", sentence)
    m = _HEADING_RE.match(sentence)
    if m and len(m.group(0).split()) >= 2:
        return sentence[m.end():]
    return sentence


def _without_repeated_heading(sentence: str) -> str:
    """A heading run into its sentence by the PDF text layer: "Japan Japan net sales ..." -> "Japan net sales ...";
    "Products Gross Margin Products gross margin increased ..." -> "Products gross margin increased ..."."""
    words = sentence.split(" ")
    low = [w.lower() for w in words]
    for k in range(min(6, len(words) // 2), 0, -1):
        if low[:k] == low[k:2 * k]:
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


def page_of(sentence: Sentence) -> int:
    """The page a sentence is on: its hit's first page, moved on by where in a multi-page hit it starts."""
    hit = sentence.hit
    span = hit.page_end - hit.page_start
    return hit.page_start + (min(span, int(sentence.start_frac * (span + 1))) if span > 0 else 0)


def prose_vocabulary(kinds: QuestionKinds) -> AnalystVocabulary | None:
    """The prose phrasings of question_kinds.yaml as a vocabulary (the analyst vocabulary's form), or None."""
    return _prose_vocabulary(id(kinds), kinds) if kinds.file.phrasings else None


@lru_cache(maxsize=8)
def _prose_vocabulary(_key: int, kinds: QuestionKinds) -> AnalystVocabulary:
    return AnalystVocabulary(VocabularyFile(terms={
        name: VocabularyTerm(terms=t.terms, expansions=t.expansions) for name, t in kinds.file.phrasings.items()}))


class SentenceScorer:
    """Scores the sentences of prose hits as answers to a question (see the module docstring)."""

    def __init__(self, kinds: QuestionKinds | None = None, vocabulary: AnalystVocabulary | None = None, *,
                 max_hits: int = 10, min_subject: float = 0.5) -> None:
        self.kinds = kinds or default_question_kinds()
        self.vocabulary = vocabulary if vocabulary is not None else default_vocabulary()
        # the analyst vocabulary ("R&D") and the prose phrasings of question_kinds.yaml ("earn more")
        self.vocabularies = [v for v in (self.vocabulary, prose_vocabulary(self.kinds)) if v is not None]
        self.max_hits = max_hits
        self.min_subject = min_subject

    def _score(self, s: Sentence, subject: Subject, route: QuestionRoute, cue_topics: tuple[str, ...]) -> None:
        s.subject, s.named = subject.overlap(s.text)
        # a cue inside a concession explains the obstacle, not the subject: "Overall net sales growth was strong
        # despite certain operating limitations ... due to government regulations"
        s.cue, s.cues = self.kinds.cue_strength(_CONCEDED_RE.sub(" ", s.text), cue_topics)
        # the head ends at the first cue; a sentence opening with the change ("The increase in our consolidated
        # revenues was due to ...") names its subject in the few words after it, not after its first weak cue
        low = s.text.lower()
        at = [(low.find(c), c) for c in s.cues if c in low]
        cue_at = min((i for i, _ in at), default=None)
        opening = _OPENING_CHANGE_RE.match(s.text)
        if opening is not None and cue_at is not None and cue_at >= opening.start(1):
            cue_at = min([opening.end()] + [i for i, _ in at if i > opening.start(1)])
        head = s.head = subject.head_share(s.text, cue_at or None)
        section_bonus = 0.0
        if s.section in route.sections:
            section_bonus = 0.6 - 0.15 * route.sections.index(s.section)
        years = years_in(s.text)
        period = 0.0
        if subject.years:
            if years & set(subject.years):
                period = 0.4
                # a cause question asks about a change: the year-over-year comparison ("higher compared to 2023")
                # answers it before a comparison with something else ("higher than the statutory ... rate")
                if "cause" in route.topics and (years & {y - 1 for y in subject.years} or _PRIOR_YEAR_RE.search(s.text)):
                    period += 0.3
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
        focus = 0.0
        if "cause" in route.topics:
            # a cause question asks what moved the line: a sentence of what may move it ("may also fluctuate as a
            # result of various factors") states no cause
            if _HEDGED_RE.search(s.text):
                focus -= 1.0
            # ... about the whole, when it names no part: a part's cause ("Our Canadian segment SG&A percentage was
            # higher ... due primarily to ...") answers another question
            if not subject.names and not set(route.topics) & {"segments", "geography"} \
                    and subject.narrower_names(s.text, cue_at or None):
                focus -= 0.8
        s.lead = subject.lead_share(s.text)
        s.score = (3.0 * s.subject + 1.5 * head + 0.5 * s.lead + min(s.cue, TOPICAL_MIN_CUE) / 2.0 + section_bonus
                   + period + direction + structure + focus
                   - 0.05 * (s.hit.rank - 1) - (0.1 if s.hit.stage == "window" else 0.0))

    def scored_sentences(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None, *,
                         max_hits: int | None = None) -> tuple[QuestionRoute, Subject, list[Sentence]]:
        """The route and subject of ``question`` and every sentence of the prose hits (the first
        ``max_hits`` by rank, default the answerer's), scored, each marked ``answers`` when it may answer:
        it names enough of the subject (or, for a topic-only question, reads as one of the topic's
        answers) and carries a cue of the asked topic when the topic has cues. The answerer quotes the
        best of them; ``qualitative_routed`` ranks passages by them (``passage_relevance``)."""
        route = self.kinds.classify(question)
        used = sorted(hits, key=lambda h: h.rank)[: max_hits or self.max_hits]
        subject = read_subject(question, route, self.vocabularies, _company_words(used), periods)
        # a topic without cues (or a metric question handed here) ranks by subject alone
        cue_topics = tuple(t for t in route.topics if self.kinds.cues.get(t))
        out: list[Sentence] = []
        for hit in used:
            if hit.chunk_type not in ("prose", "section"):
                continue
            previous: Sentence | None = None
            for s in _sentences(hit):
                self._score(s, subject, route, cue_topics)
                if (previous is not None and previous.index == s.index - 1 and refers_back(s.text, previous.text)
                        and previous.subject > s.subject):
                    # "Gross margins increased to 75.0% ... The year over year increase was primarily driven by
                    # ...": the cause sentence is about the previous sentence's subject, and is quoted with it
                    s.score += 3.0 * (previous.subject - s.subject) + 1.5 * max(0.0, previous.head - s.head)
                    s.subject, s.head, s.named, s.antecedent = previous.subject, previous.head, previous.named, previous
                context = s.antecedent or (previous if previous is not None and previous.index == s.index - 1
                                           and _DEFINITE_CHANGE_RE.match(s.text) else None)
                if (context is not None and "cause" in route.topics
                        and not subject.names and not set(route.topics) & {"segments", "geography"}
                        and not subject.narrower_names(s.text, None) and subject.narrower_names(context.text, None)):
                    # "Net sales for the Walmart U.S. segment increased ... The increases in net sales were primarily
                    # due to ...", "... Walmart International segment ... For fiscal 2021, the increase was ...": the
                    # change it explains is the part's the previous sentence names
                    s.score -= 0.8
                previous = s
                about = s.subject >= self.min_subject and bool(s.named) and subject.names_one(
                    s.antecedent.text + " " + s.text if s.antecedent else s.text)
                # a question's line item ("SG&A") is the heart of its subject: a sentence of net sales and
                # percentages without it is about another line
                if subject.line_items and not subject.line_items & set(s.named):
                    about = False
                # a question naming only its topic is answered by a sentence that reads as one of its
                # answers (a lawsuit named, a risk stated), whatever words it uses
                if subject.topical and s.cue >= TOPICAL_MIN_CUE:
                    about = True
                s.answers = about and (not cue_topics or s.cue > 0)
                out.append(s)
        # overlapping passages repeat a sentence: the copy that opens its passage was read without the sentence
        # before it (the part it explains, the change it continues), so it scores no higher than a copy read with it
        in_context: dict[str, float] = {}
        for s in out:
            if s.index > 0:
                in_context[s.text] = min(in_context.get(s.text, s.score), s.score)
        for s in out:
            if s.index == 0 and s.text in in_context:
                s.score = min(s.score, in_context[s.text])
        return route, subject, out

    def passage_relevance(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None
                          ) -> dict[str, float]:
        """Chunk id -> how well its best sentence answers ``question``, in [0, 1]: the share of the
        subject it names, how much of it leads the sentence and the cue's strength, halved for a sentence
        that does not answer (no cue of the asked topic, too little of the subject). Chunks without
        prose are left out. What a sentence window of the passage says, rather than the passage's words
        as a bag."""
        _, subject, sentences = self.scored_sentences(question, hits, periods, max_hits=len(hits))
        # the subject leaves the company out (every passage of its filing names it): across filings, a
        # passage of another company than the one asked, or of another year's filing, answers less
        asked = word_stems(question)
        companies = {h.chunk_id: _company_words([h]) for h in hits}
        names_one = any(words & asked for words in companies.values())
        best: dict[str, float] = {}
        for s in sentences:
            value = (s.subject + 0.5 * s.head + 0.5 * min(s.cue, TOPICAL_MIN_CUE) / TOPICAL_MIN_CUE) / 2.0
            value *= 1.0 if s.answers else 0.5
            if names_one and companies[s.hit.chunk_id] and not companies[s.hit.chunk_id] & asked:
                value *= 0.2
            if subject.years and s.hit.fiscal_year is not None and s.hit.fiscal_year not in subject.years:
                value *= 0.5
            best[s.hit.chunk_id] = max(best.get(s.hit.chunk_id, 0.0), value)
        return best
