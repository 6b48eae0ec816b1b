"""The retriever contract, the result record with per-stage timings, and small helpers on hits.

Every retriever answers ``search(query, k, filters) -> list[Hit]`` (the contract the evaluation and
the answerers code against). ``retrieve`` returns the same hits inside a :class:`RetrievalResult`
that also carries per-stage timings in milliseconds, for the CLI and the latency columns of the
evaluation. Subclasses implement only ``_retrieve``; wrappers (hybrids, auto-merging, reranking,
query understanding) call ``retrieve`` on their inner retrievers and merge the inner timings.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.models import Chunk, Hit, SearchFilters

# beir/mteb style run: {doc_id: score}; a whole run is {qid: {doc_id: score}}.
Ranking = dict[str, float]
Run = dict[str, Ranking]


@dataclass
class RetrievalResult:
    """Hits plus what it cost. ``timings_ms`` has one entry per stage ("bm25", "embed", "dense",
    "fusion", "rerank:features", ...) and a "total"; ``info`` holds what query understanding read
    (company, periods, applied filters) so the CLI can show why a filter was applied."""

    query: str
    hits: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    # pages best first (core/retrieval/pages.PageHit): the page_ranking stage's, else the hits' pages
    top_pages: list[Any] = field(default_factory=list)

    def as_run(self) -> Ranking:
        """The hits as a beir-style ``{chunk_id: score}`` mapping."""
        return {h.chunk_id: h.score for h in self.hits}


class Timings(dict):
    """Stage -> milliseconds. ``with timings.stage("bm25"): ...`` adds the elapsed time.

    Work reused from an earlier search of the same session (a cached query embedding, a shared dense
    search) is added with :meth:`credit` at the cost it was measured at: it counts in its stage, in
    ``REUSED`` and in the total, so a retriever's latency never looks cheaper because another ran first.
    """

    REUSED = "reused"

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + (time.perf_counter() - t0) * 1000.0

    def credit(self, name: str, ms: float | None) -> None:
        if ms:
            self[name] = self.get(name, 0.0) + ms
            self[self.REUSED] = self.get(self.REUSED, 0.0) + ms

    def merge(self, other: Mapping[str, float]) -> None:
        for key, value in other.items():
            if key != "total":
                self[key] = self.get(key, 0.0) + value


class Retriever(ABC):
    """Base class of every retriever. ``name`` is the configuration name it was built under."""

    name: str = "retriever"
    stage_name: str = "retriever"

    def search(self, query: str, k: int, filters: SearchFilters | None = None) -> list[Hit]:
        return self.retrieve(query, k, filters).hits

    def retrieve(self, query: str, k: int, filters: SearchFilters | None = None) -> RetrievalResult:
        timings = Timings()
        info: dict[str, Any] = {}
        t0 = time.perf_counter()
        hits = self._retrieve(query, k, filters, timings, info) if k > 0 and not filters_empty(filters) else []
        timings["total"] = (time.perf_counter() - t0) * 1000.0 + timings.get(Timings.REUSED, 0.0)
        hits = rerank_positions(hits[:k])
        top_pages = info.pop("top_pages", None)
        if top_pages is None:
            from finrag_pipeline.core.retrieval.page_scores import rank_pages

            top_pages = rank_pages(hits)
        return RetrievalResult(query=query, hits=hits, timings_ms=dict(timings), info=info, top_pages=top_pages)

    @abstractmethod
    def _retrieve(self, query: str, k: int, filters: SearchFilters | None,
                  timings: Timings, info: dict[str, Any]) -> list[Hit]:
        """Return up to ``k`` hits, best first (ranks are renumbered by ``retrieve``)."""



def rerank_positions(hits: Iterable[Hit]) -> list[Hit]:
    """Renumber ranks 1..n in list order."""
    out = list(hits)
    for i, hit in enumerate(out, start=1):
        hit.rank = i
    return out


def sort_hits(hits: Iterable[Hit]) -> list[Hit]:
    """Best score first; ties broken by chunk_id so every ordering is deterministic."""
    return rerank_positions(sorted(hits, key=lambda h: (-h.score, h.chunk_id)))


def hit_from_chunk(chunk: Chunk, score: float, stage: str, stage_scores: Mapping[str, float] | None = None) -> Hit:
    return Hit(
        chunk_id=chunk.chunk_id, score=float(score), rank=0, filing_id=chunk.filing_id,
        page_start=chunk.page_start, page_end=chunk.page_end, chunk_type=chunk.chunk_type,
        text=chunk.text, stage=stage, section=chunk.section, fiscal_year=chunk.fiscal_year,
        parent_id=chunk.parent_id, position=chunk.position,
        stage_scores=dict(stage_scores or {stage: float(score)}),
    )


def _scalar(value: Any) -> Any:
    """tantivy ``Document.to_dict()`` gives every field as a list; LanceDB rows give scalars."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value


def hit_from_fields(chunk_id: str, score: float, fields: Mapping[str, Any], stage: str,
                    fallback: Chunk | None = None) -> Hit:
    """A Hit from an index's stored fields (tantivy dict of lists or a LanceDB row), filling any
    field the index does not store from the chunk store's record when one is given."""

    def get(name: str, default: Any = None) -> Any:
        value = _scalar(fields.get(name)) if fields else None
        if value is None and fallback is not None:
            value = getattr(fallback, name, default)
        return default if value is None else value

    page_start = int(get("page_start", 0))
    return Hit(
        chunk_id=str(chunk_id), score=float(score), rank=0, filing_id=str(get("filing_id", "")),
        page_start=page_start, page_end=int(get("page_end", page_start)),
        chunk_type=str(get("chunk_type", "prose")), text=str(get("text", "")), stage=stage,
        section=get("section"), fiscal_year=_int_or_none(get("fiscal_year")),
        parent_id=get("parent_id") or None, position=int(get("position", 0)),
        stage_scores={stage: float(score)},
    )


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def copy_hit(hit: Hit, **changes: Any) -> Hit:
    """A copy with its own stage_scores dict (hits are shared between wrapper stages)."""
    changes.setdefault("stage_scores", dict(hit.stage_scores))
    return dataclasses.replace(hit, **changes)


def merge_filters(a: SearchFilters | None, b: SearchFilters | None) -> SearchFilters | None:
    """Intersect two filter sets field by field (None = unconstrained). An empty intersection stays
    an empty tuple: it matches nothing, which is what a contradictory scope means."""
    if a is None:
        return b
    if b is None:
        return a
    values = {}
    for f in dataclasses.fields(SearchFilters):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None or y is None:
            values[f.name] = x if y is None else y
        else:
            values[f.name] = tuple(v for v in x if v in set(y))
    return SearchFilters(**values)


def filters_empty(filters: SearchFilters | None) -> bool:
    """True when a filter field is an empty tuple: the scope contains nothing, so skip the index."""
    return filters is not None and any(
        getattr(filters, f.name) is not None and len(getattr(filters, f.name)) == 0
        for f in dataclasses.fields(SearchFilters))
