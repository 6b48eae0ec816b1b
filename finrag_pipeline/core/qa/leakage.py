"""Phrasing leakage: how much of a question is copied from its evidence and from the retrievers' lexicon.

A question that names its figure with the words of the evidence chunk, and with aliases the
retrievers' lexicon (assets_config/lexicon.yaml) knows, is easy for BM25 and for the features
reranker whatever their real quality: the benchmark then rewards retrievers for knowing how the
generator talks. Per QA item:

* content words C: the question's tokens as the BM25 ``text`` field sees them (tantivy's simple
  tokenizer, lowercase, English stopwords removed, English stemming: the retrievers' own analyzer),
  without numbers and period tokens ("2022", "fy2022", "q4"), single letters, question words and
  units (``QUESTION_FILLER``: "what", "how", "much", "million" ...);
* E: the content words of the evidence chunks (every alternative place of every required group;
  the page text where a place has no chunk);
* L: the content words of every phrase of the lexicon (aliases, line items, components);
* ``score`` = |C ∩ E ∩ L| / |C|: the share of the question's words that both occur in its evidence
  and are lexicon vocabulary. Also stored: ``evidence_share`` = |C ∩ E| / |C| and
  ``lexicon_share`` = |C ∩ L| / |C|;
* band: low (score < ``low_below``), medium, high (score >= ``high_from``); thresholds in qa.yaml
  ``leakage``.

Not computable (no evidence: unanswerable; no content word; no evidence text) -> score None, band
None and a ``reason``: such items are shown as their own band ("n/a"), never as low.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from pydantic import BaseModel, Field, model_validator

from finrag_pipeline.core.models import Chunk, Page, QAItem

LEAKAGE_BANDS = ("low", "medium", "high")
_PERIOD_TOKEN = re.compile(r"(fy|q|h)?\d[\d.,]*[a-z]{0,2}")
# Question words and units: in nearly every question, they say nothing about phrasing. (Tantivy's
# English stopword list is Lucene's short one, which keeps "what", "how", "much" ...)
QUESTION_FILLER = ("what which how why when where who whom whose much many did does do was were has have had "
                   "give state report reported usd dollars million millions billion billions thousand thousands "
                   "percent percentage")


class LeakageSettings(BaseModel):
    """Band thresholds on the leakage score (qa.yaml ``leakage``)."""

    low_below: float = Field(0.2, ge=0.0, le=1.0)
    high_from: float = Field(0.4, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> LeakageSettings:
        if self.low_below > self.high_from:
            raise ValueError(f"leakage.low_below ({self.low_below}) must not exceed high_from ({self.high_from})")
        return self

    def band(self, score: float | None) -> str | None:
        if score is None:
            return None
        if score < self.low_below:
            return "low"
        return "high" if score >= self.high_from else "medium"


@dataclass(frozen=True)
class Leakage:
    score: float | None
    evidence_share: float | None
    lexicon_share: float | None
    n_content_words: int
    band: str | None
    reason: str | None = None
    shared_words: tuple[str, ...] = ()      # C ∩ E ∩ L, for a reader who wants to see why

    def as_dict(self) -> dict:
        out = asdict(self)
        out["shared_words"] = list(self.shared_words)
        return out


def content_words(text: str) -> set[str]:
    """The content words of ``text`` as the BM25 index sees them (stemmed, no stopwords, no numbers)."""
    from finrag_pipeline.core.indexing.tantivy_index import tokenize_for_bm25

    return {t for t in tokenize_for_bm25(text or "")
            if len(t) > 1 and not _PERIOD_TOKEN.fullmatch(t)} - _filler_tokens()


@functools.cache
def _filler_tokens() -> frozenset[str]:
    from finrag_pipeline.core.indexing.tantivy_index import tokenize_for_bm25

    return frozenset(tokenize_for_bm25(QUESTION_FILLER))


def lexicon_words(lexicon: object) -> set[str]:
    """Content words of every phrase of a :class:`~finrag_pipeline.core.analyst.lexicon.Lexicon`."""
    words: set[str] = set()
    for concept in getattr(lexicon, "concepts", {}).values():
        for phrase in concept.phrases:
            words |= content_words(phrase)
    return words


def question_leakage(question: str, evidence_texts: Sequence[str], lexicon_vocabulary: set[str],
                     settings: LeakageSettings | None = None) -> Leakage:
    """Leakage of one question against its evidence texts and the lexicon's vocabulary."""
    settings = settings or LeakageSettings()
    words = content_words(question)
    if not evidence_texts:
        return Leakage(None, None, None, len(words), None, "no evidence (unanswerable)")
    if not words:
        return Leakage(None, None, None, 0, None, "question has no content words")
    evidence_words: set[str] = set()
    for text in evidence_texts:
        evidence_words |= content_words(text)
    if not evidence_words:
        return Leakage(None, None, None, len(words), None, "evidence text is empty")
    shared = words & evidence_words & lexicon_vocabulary
    n = len(words)
    score = len(shared) / n
    return Leakage(score, len(words & evidence_words) / n, len(words & lexicon_vocabulary) / n, n,
                   settings.band(score), None, tuple(sorted(shared)))


def evidence_texts(item: QAItem, chunks_by_id: Mapping[str, Chunk], pages_by_key: Mapping[tuple[str, int], Page]
                   ) -> list[str]:
    """Texts of every evidence place of ``item``: its chunk, else its page (unique, in order)."""
    texts: list[str] = []
    for group in item.evidence:
        for place in group:
            chunk = chunks_by_id.get(place.chunk_id) if place.chunk_id else None
            page = pages_by_key.get((place.filing_id or item.filing_id, int(place.page)))
            text = chunk.text if chunk is not None else (page.text if page is not None else None)
            if text and text not in texts:
                texts.append(text)
    return texts


def annotate_leakage(items: Iterable[QAItem], chunks: Iterable[Chunk], pages: Iterable[Page] = (),
                     lexicon: object | None = None, settings: LeakageSettings | None = None) -> list[QAItem]:
    """Set ``item.metadata["leakage"]`` (see :class:`Leakage`) on every item, in place; returns them.

    ``lexicon`` defaults to assets_config/lexicon.yaml (the one the retrievers load)."""
    if lexicon is None:
        from finrag_pipeline.core.analyst.lexicon import Lexicon

        lexicon = Lexicon.load_default()
    vocabulary = lexicon_words(lexicon)
    chunks_by_id = {c.chunk_id: c for c in chunks}
    pages_by_key = {(p.filing_id, int(p.page_number)): p for p in pages}
    out = list(items)
    for item in out:
        leak = question_leakage(item.question, evidence_texts(item, chunks_by_id, pages_by_key), vocabulary,
                                settings)
        item.metadata = {**(item.metadata or {}), "leakage": leak.as_dict()}
    return out
