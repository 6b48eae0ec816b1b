"""Place an outside system's returned contexts in the corpus, so its retrieval is scored like a built-in's.

Each context becomes one ranked :class:`~finrag_pipeline.core.models.Hit` (the system's order kept):

1. ``chunk_id`` of our corpus -> that chunk (confidence 1.0);
2. ``filing_id`` + ``page`` -> the leaf on that page whose words best cover the context's (confidence = the
   word overlap); when no leaf's words match, the page itself (a hit on the page but on no chunk of ours,
   confidence ``PAGE_ONLY_CONFIDENCE``), so page metrics count it and chunk metrics do not;
3. text only (or a filing without a page) -> BM25 candidates for the context's words in the scope, then
   the leaf whose words best cover the context's (confidence = the overlap) if it reaches ``min_overlap``;
4. otherwise unmapped: a hit on no page and no chunk. It keeps its rank (a system that pads its list
   with text we cannot find is not rewarded for it) and never counts as evidence.

Word overlap: the share of the context's distinct words (lower-cased letters/digits; figures keep their
separators, "394,328") that the chunk holds, or, for a chunk of at least ``MIN_CHUNK_WORDS`` words, the
share of the chunk's words that the context holds (a context longer than our chunks); the larger of the two.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters

PAGE_ONLY_CONFIDENCE = 0.5
MIN_CHUNK_WORDS = 12
QUERY_WORDS = 48        # words of a context sent to BM25 for candidates
N_CANDIDATES = 20

_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")

TextSearch = Callable[[str, int, "SearchFilters | None"], Sequence[Hit]]


def words(text: str) -> set[str]:
    return set(_WORD.findall((text or "").lower()))


def overlap(context_words: set[str], chunk_words: set[str]) -> float:
    if not context_words or not chunk_words:
        return 0.0
    common = len(context_words & chunk_words)
    inside = common / len(context_words)
    covers = common / len(chunk_words) if len(chunk_words) >= MIN_CHUNK_WORDS else 0.0
    return max(inside, covers)


@dataclass
class Placement:
    """Where one context landed: method ``chunk_id`` | ``page_text`` | ``page`` | ``text`` | ``unmapped``."""

    position: int
    method: str
    confidence: float
    chunk_id: str | None = None
    filing_id: str | None = None
    page: int | None = None
    reason: str | None = None

    @property
    def mapped(self) -> bool:
        return self.method != "unmapped"


class ContextMapper:
    """Maps contexts onto a corpus: ``chunk_store`` (core.retrieval.resources.ChunkStore: leaves by page and
    id), ``page_counts`` (filing id -> number of pages, for a page that holds no chunk) and ``text_search``
    (a BM25 search ``(query, k, filters) -> hits``; None: text-only contexts are unmapped)."""

    def __init__(self, chunk_store: Any, page_counts: Mapping[str, int], text_search: TextSearch | None = None,
                 *, min_overlap: float = 0.6):
        self.chunk_store = chunk_store
        self.page_counts = dict(page_counts)
        self.text_search = text_search
        self.min_overlap = min_overlap

    def place(self, position: int, context: Any, filters: SearchFilters | None) -> Placement:
        text = getattr(context, "text", "") or ""
        fid, page, chunk_id = (getattr(context, "filing_id", None), getattr(context, "page", None),
                               getattr(context, "chunk_id", None))
        if chunk_id and self.chunk_store.get(chunk_id) is not None:
            chunk = self.chunk_store.get(chunk_id)
            return Placement(position, "chunk_id", 1.0, chunk.chunk_id, chunk.filing_id, chunk.page_start)
        cwords = words(text)
        if fid and page:
            if fid not in self.page_counts:
                return Placement(position, "unmapped", 0.0, reason=f"filing {fid} is not in the corpus")
            if page > self.page_counts[fid]:
                return Placement(position, "unmapped", 0.0, reason=f"page {page} of {fid} is not in the corpus "
                                                                   f"({self.page_counts[fid]} pages)")
            best, score = self._best(cwords, self.chunk_store.on_page(fid, page))
            if best is not None and score >= self.min_overlap:
                return Placement(position, "page_text", round(score, 4), best.chunk_id, fid, page)
            return Placement(position, "page", PAGE_ONLY_CONFIDENCE, None, fid, page,
                             reason="placed by its filing and page; its text matches no chunk of the page")
        if fid and fid not in self.page_counts:
            return Placement(position, "unmapped", 0.0, reason=f"filing {fid} is not in the corpus")
        if not cwords:
            return Placement(position, "unmapped", 0.0, reason="no text, and no filing and page")
        if self.text_search is None:
            return Placement(position, "unmapped", 0.0, reason="no filing and page, and no text index to search")
        scoped = SearchFilters(filing_ids=(fid,)) if fid else filters
        query = " ".join(_WORD.findall(text.lower())[:QUERY_WORDS])
        candidates = [self.chunk_store.get(h.chunk_id) for h in self.text_search(query, N_CANDIDATES, scoped)]
        best, score = self._best(cwords, [c for c in candidates if c is not None])
        if best is not None and score >= self.min_overlap:
            return Placement(position, "text", round(score, 4), best.chunk_id, best.filing_id, best.page_start)
        return Placement(position, "unmapped", round(score, 4),
                         reason=f"its text matches no chunk in scope (best word overlap {score:.2f} "
                                f"< {self.min_overlap:g})")

    @staticmethod
    def _best(cwords: set[str], chunks: Sequence[Any]) -> tuple[Any, float]:
        best, best_score = None, 0.0
        for chunk in chunks:   # first (best-ranked / reading order) wins a tie
            score = overlap(cwords, words(chunk.text))
            if score > best_score:
                best, best_score = chunk, score
        return best, best_score

    def hits(self, contexts: Sequence[Any], filters: SearchFilters | None) -> tuple[list[Hit], list[Placement]]:
        """Ranked hits for ``contexts`` (score 1/position keeps the system's order) and each placement."""
        from finrag_pipeline.core.retrieval.base import hit_from_chunk

        hits, placements = [], []
        for position, context in enumerate(contexts, 1):
            placement = self.place(position, context, filters)
            placements.append(placement)
            score = 1.0 / position
            if placement.chunk_id is not None:
                hit = hit_from_chunk(self.chunk_store.get(placement.chunk_id), score, f"system:{placement.method}")
            elif placement.method == "page":
                hit = Hit(f"page:{placement.filing_id}:{placement.page}", score, position, placement.filing_id,
                          placement.page, placement.page, "page", getattr(context, "text", "") or "", "system:page")
            else:   # keeps its rank, lands on no page
                hit = Hit(f"unmapped:{position}", score, position, "", 0, -1, "unmapped",
                          getattr(context, "text", "") or "", "system:unmapped")
            hit.rank = position
            hits.append(hit)
        return hits, placements


def mapping_summary(placements: Sequence[Placement]) -> dict[str, Any]:
    """Per-row columns and a note: n_contexts, n_contexts_unmapped, mapping_confidence (mean over every
    context, an unmapped one counting 0; NULL without contexts) and what was placed how."""
    n = len(placements)
    unmapped = [p for p in placements if not p.mapped]
    methods: dict[str, int] = {}
    for p in placements:
        methods[p.method] = methods.get(p.method, 0) + 1
    note = ", ".join(f"{v} by {k}" for k, v in sorted(methods.items()))
    if unmapped:
        note += "; unmapped: " + "; ".join(f"#{p.position} {p.reason}" for p in unmapped[:5])
    return {"n_contexts": n, "n_contexts_unmapped": len(unmapped),
            "mapping_confidence": (sum(p.confidence if p.mapped else 0.0 for p in placements) / n) if n else None,
            "mapping_note": f"contexts: {note}" if n else "no contexts returned"}
