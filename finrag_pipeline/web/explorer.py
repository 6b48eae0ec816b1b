"""What the pages show, assembled from the core: live retrieval and answering through a
:class:`FinragSession` whose warehouse reads are answered by the snapshot, relevance and metrics by the
evaluation runner's own functions, page images and highlight boxes by :mod:`.page_image`.

The ranked hits of an evaluated configuration are not stored (eval.retrieval_results keeps metrics),
so the question view re-runs the configuration on the current indexes and shows the stored metrics
beside the live ones: a difference means the corpus or the configuration changed since evaluation.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finrag_pipeline.core.chunking.chunker import PAGE_JOINER
from finrag_pipeline.core.config import parse_overrides
from finrag_pipeline.core.evaluation.runner import (
    AnswerConfig,
    chunk_groups,
    default_answerer_factory,
    ordered_hits,
    page_groups,
    retrieval_metrics_for,
    scope_filters,
)
from finrag_pipeline.core.models import Chunk, Hit, QAItem, SearchFilters
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.web import page_image
from finrag_pipeline.web import queries as q
from finrag_pipeline.web.page_image import Box, Segment

# Highlight kinds, drawn in this order (the evidence on top); the CSS gives each its colour.
HIGHLIGHT_KINDS = ("hit", "cited", "evidence")


@dataclass
class Highlight:
    kind: str                 # evidence | cited | hit
    chunk_id: str | None
    label: str
    boxes: list[Box] = field(default_factory=list)
    chunk_type: str = ""      # table_row boxes are filled, prose windows outlined


@dataclass
class PageView:
    filing_id: str
    page_number: int
    n_pages: int
    source_format: str
    image_url: str | None = None
    highlights: list[Highlight] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)    # HTML filings: the page text, marked
    notes: list[str] = field(default_factory=list)

    @property
    def n_boxes(self) -> int:
        return sum(len(h.boxes) for h in self.highlights)


@dataclass
class HitView:
    hit: Hit
    relevant_chunk: bool
    relevant_page: bool
    cited: bool = False


@dataclass
class ConfigRun:
    """One configuration's live ranking for a question, with stored and live metrics."""

    config_name: str
    retriever: str
    k: int
    chunking: str | None
    scope: str
    stored: dict[str, Any]
    live: dict[str, Any] = field(default_factory=dict)
    hits: list[HitView] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass
class AskRun:
    question: str
    retriever: str
    k: int
    scope: str
    model: str
    overrides: list[str]
    hits: list[HitView] = field(default_factory=list)
    answer: Any = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    page: PageView | None = None
    error: str | None = None


class Explorer:
    """The app's state: the snapshot, and a session over the indexes built lazily (first ask or
    question view) and rebuilt when a new snapshot is published."""

    def __init__(self, paths: FinragPaths):
        self.paths = paths
        self.snapshot = q.Snapshot(paths.warehouse_snapshot)
        self._session: Any = None
        self._session_generation = -1
        self._retrievers: dict[tuple, Any] = {}
        self._lock = threading.RLock()

    # ---- session ---------------------------------------------------------------------------

    def refresh(self) -> bool:
        return self.snapshot.refresh()

    def session(self) -> Any:
        from finrag_pipeline.core.session import FinragSession

        with self._lock:
            if self._session is None or self._session_generation != self.snapshot.generation:
                old = self._session
                session = FinragSession(self.paths)
                session.warehouse = q.ReadOnlyWarehouse(self.snapshot)  # chunks and catalog from the snapshot
                if old is not None and "resources" in old.__dict__:
                    # Keep the loaded embedder across snapshots (loading it costs seconds); the indexes
                    # and the chunk store are reopened for the new corpus state.
                    emb = old.resources._resolved.get("embedder")
                    if emb is not None:
                        session.resources.embedder = emb
                self._session, self._session_generation = session, self.snapshot.generation
                self._retrievers.clear()
            return self._session

    def retriever(self, name: str, chunking: str | None = None, overrides: tuple[str, ...] = ()) -> Any:
        """A named retriever (with ``NAME.field=value`` overrides), built once per snapshot."""
        from finrag_pipeline.core.retrieval.registry import build_named_retrievers

        session = self.session()
        key = (name, chunking, overrides)
        with self._lock:
            if key not in self._retrievers:
                if chunking:  # read what the variant assets built; a partition not built is an error naming it
                    from finrag_pipeline.core.catalog import active_filings

                    session.variants.require([chunking], active_filings(session.warehouse))
                if overrides:
                    if chunking:
                        self._retrievers[key] = session.variants.retriever(name, chunking,
                                                                           overrides=parse_overrides(overrides))
                    else:
                        self._retrievers[key] = build_named_retrievers(
                            session.resources, [name], overrides=parse_overrides(overrides))[name]
                else:
                    self._retrievers[key] = session.retriever_factory(name, chunking)
            return self._retrievers[key]

    # ---- question view ---------------------------------------------------------------------

    def config_runs(self, item: QAItem, configs: list[dict[str, Any]], scope: str) -> list[ConfigRun]:
        """Re-run each configuration (rows of the current results: config_name, retriever, k,
        chunking) on the question and mark each hit relevant by the runner's evidence groups."""
        out = []
        for row in configs:
            chunking = row.get("chunking")
            chunking = None if chunking is None or chunking != chunking else str(chunking)
            run = ConfigRun(str(row["config_name"]), str(row["retriever"]), int(row["k"]), chunking, scope,
                            stored=row)
            try:
                retriever = self.retriever(run.retriever, chunking)
                filters = scope_filters(scope, item.filing_id)
                hits, timings = _retrieve(retriever, item.question, run.k, filters)
                run.timings_ms = timings
                run.hits = mark_relevance(hits, item)
                values, status, notes = retrieval_metrics_for(hits, item, run.k, chunk_level=chunking is None)
                run.live = {**values, "status": status, "notes": "; ".join(notes)}
            except Exception as exc:  # noqa: BLE001 - one broken configuration must not hide the others
                run.error = f"{type(exc).__name__}: {exc}"
            out.append(run)
        return out

    # ---- pages -------------------------------------------------------------------------------

    def chunks(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        """Chunks by id from the session's in-memory chunk store once it is loaded (the question
        view and ask load it for retrieval anyway), else from the snapshot."""
        session = self._session
        if session is not None and self._session_generation == self.snapshot.generation \
                and "chunk_store" in session.resources._resolved:
            store = session.resources._resolved["chunk_store"]
            found = {cid: store.get(cid) for cid in chunk_ids if cid}
            if all(found.values()):
                return found
        return q.chunks(self.snapshot, chunk_ids)

    def page_view(self, filing_id: str, page_number: int, highlights: list[tuple[str, str | None, str]]
                  ) -> PageView:
        """The page with highlights: ``highlights`` are (kind, chunk_id, label)."""
        snap = self.snapshot
        filing = q.filing(snap, filing_id)
        pages = q.pages(snap, filing_id)
        fmt = str(filing.get("source_format") or "pdf") if filing else "pdf"
        view = PageView(filing_id, page_number, len(pages), fmt)
        if filing is None:
            view.notes.append(f"filing {filing_id} is not in the snapshot")
            return view
        by_number = {p.page_number: p for p in pages}
        page = by_number.get(page_number)
        if page is None:
            view.notes.append(f"{filing_id} has no page {page_number}")
            return view
        starts = _page_starts(pages)
        chunks = self.chunks([c for _, c, _ in highlights if c])
        pdf_path = Path(str(filing.get("source_path") or ""))
        is_pdf = fmt == "pdf"
        if is_pdf and not pdf_path.is_file():
            view.notes.append(f"the filing's bytes are missing ({pdf_path.name or 'no path'}): showing the page text")
            is_pdf = False
        view.source_format = "pdf" if is_pdf else "html"
        if is_pdf:
            view.image_url = f"/page/{filing_id}/{page_number}.png"
        spans: list[tuple[int, int, str]] = []
        for kind, chunk_id, label in highlights:
            chunk = chunks.get(chunk_id) if chunk_id else None
            hl = Highlight(kind, chunk_id, label, chunk_type=chunk.chunk_type if chunk else "")
            if chunk is None:
                if chunk_id:
                    view.notes.append(f"{kind} chunk {chunk_id} is not in the snapshot")
                else:
                    view.notes.append(f"{kind}: {label} (page-level, no chunk to mark)")
                continue
            if not chunk.page_start <= page_number <= chunk.page_end:
                continue
            row = _row_of(snap, chunk)
            span = _page_span(chunk, page, starts)
            if is_pdf:
                try:
                    hl.boxes = page_image.chunk_boxes(pdf_path, page_number, chunk,
                                                      page.text[span[0]:span[1]] if span else None, row)
                except Exception as exc:  # noqa: BLE001 - a damaged page still shows, without boxes
                    view.notes.append(f"could not locate {kind} chunk: {type(exc).__name__}: {exc}")
                if not hl.boxes:
                    view.notes.append(f"{kind} chunk {chunk.chunk_id} ({chunk.chunk_type}) not located on the page image")
            else:
                line = page_image.line_span(page.text, row.row_label) if row is not None else None
                target = line or span
                if target:
                    spans.append((target[0], target[1], kind))
                    hl.boxes = []
                else:
                    view.notes.append(f"{kind} chunk {chunk.chunk_id} not located in the page text")
            view.highlights.append(hl)
        if not is_pdf:
            view.segments = page_image.text_segments(page.text, spans)
        order = {k: i for i, k in enumerate(HIGHLIGHT_KINDS)}
        view.highlights.sort(key=lambda h: order.get(h.kind, -1))
        return view

    def page_png(self, filing_id: str, page_number: int) -> bytes:
        filing = q.filing(self.snapshot, filing_id)
        if filing is None:
            raise KeyError(f"no filing {filing_id!r}")
        path = Path(str(filing.get("source_path") or ""))
        if str(filing.get("source_format")) != "pdf" or not path.is_file():
            raise KeyError(f"{filing_id} has no PDF bytes to render")
        return page_image.render_page_png(path, page_number)

    # ---- ask ---------------------------------------------------------------------------------

    def ask(self, question: str, retriever: str, k: int, scope: str, model: str,
            overrides: list[str]) -> AskRun:
        run = AskRun(question, retriever, k, scope, model, overrides)
        t0 = time.perf_counter()
        try:
            built = self.retriever(retriever, None, tuple(o for o in overrides if o.strip()))
            filters = None if scope in ("", "corpus") else SearchFilters(filing_ids=(scope,))
            result = built.retrieve(question, k, filters) if hasattr(built, "retrieve") else None
            if result is not None:
                hits, run.timings_ms, run.info = ordered_hits(result.hits), dict(result.timings_ms), dict(result.info)
            else:
                hits, run.timings_ms = _retrieve(built, question, k, filters)
            answerer = default_answerer_factory(AnswerConfig(model=model, prompt_type="standard", temperature=0.0,
                                                             top_p=1.0, retriever=retriever, k=k))
            ta = time.perf_counter()
            run.answer = answerer.answer(question, hits)
            run.timings_ms["answer"] = (time.perf_counter() - ta) * 1000
            cited = {(c[0], c[1], c[2]) for c in run.answer.citations}
            cited_ids = {c[2] for c in cited if c[2]}
            cited_pages = {(c[0], c[1]) for c in cited}
            run.hits = [HitView(h, False, False, cited=h.chunk_id in cited_ids or any(
                (h.filing_id, p) in cited_pages for p in h.pages)) for h in hits]
            target = next(((c[0], c[1]) for c in run.answer.citations), None) or (
                (hits[0].filing_id, hits[0].page_start) if hits else None)
            if target:
                marks = [("cited" if hv.cited else "hit", hv.hit.chunk_id, f"#{hv.hit.rank}")
                         for hv in run.hits if hv.hit.filing_id == target[0]
                         and hv.hit.page_start <= target[1] <= hv.hit.page_end]
                tp = time.perf_counter()
                run.page = self.page_view(target[0], target[1], marks)
                run.timings_ms["page boxes"] = (time.perf_counter() - tp) * 1000
        except Exception as exc:  # noqa: BLE001 - shown on the page: a bad override or an unknown name
            run.error = f"{type(exc).__name__}: {exc}"
        run.timings_ms["round trip"] = (time.perf_counter() - t0) * 1000
        return run


def _retrieve(retriever: Any, question: str, k: int, filters: SearchFilters | None
              ) -> tuple[list[Hit], dict[str, float]]:
    """Both retriever contracts (``retrieve`` with stage timings, plain ``search``), as the runner."""
    t0 = time.perf_counter()
    if hasattr(retriever, "retrieve"):
        result = retriever.retrieve(question, k, filters)
        return ordered_hits(result.hits), dict(result.timings_ms)
    hits = ordered_hits(retriever.search(question, k, filters))
    return hits, {"total": (time.perf_counter() - t0) * 1000}


def mark_relevance(hits: list[Hit], item: QAItem) -> list[HitView]:
    """Relevant as the metrics count it: the chunk is an evidence alternative (chunk level), or the
    hit covers an evidence page (page level)."""
    cgroups = chunk_groups(item) or []
    relevant_chunks = set().union(*cgroups) if cgroups else set()
    relevant_pages = set().union(*page_groups(item)) if item.evidence else set()
    return [HitView(h, h.chunk_id in relevant_chunks, any((h.filing_id, p) in relevant_pages for p in h.pages))
            for h in hits]


def _page_starts(pages: list[Any]) -> dict[int, int]:
    """Offset of each page in the filing text (pages joined by PAGE_JOINER), as chunk offsets use."""
    starts, pos = {}, 0
    for p in sorted(pages, key=lambda p: p.page_number):
        starts[p.page_number] = pos
        pos += len(p.text) + len(PAGE_JOINER)
    return starts


def _page_span(chunk: Chunk, page: Any, starts: dict[int, int]) -> tuple[int, int] | None:
    """The part of a prose chunk on ``page``, in page-text offsets (None for table rows: their
    offsets span the whole page)."""
    if chunk.chunk_type != "prose":
        return None
    start = starts[page.page_number]
    s, e = max(chunk.char_start, start) - start, min(chunk.char_end, start + len(page.text)) - start
    return (s, e) if e > s else None


def _row_of(snap: q.Snapshot, chunk: Chunk) -> Any:
    if chunk.chunk_type != "table_row" or not chunk.table_id:
        return None
    meta = chunk.metadata if isinstance(chunk.metadata, dict) else json.loads(chunk.metadata or "{}")
    if meta.get("row_index") is None:
        return None
    return q.table_row(snap, chunk.filing_id, chunk.table_id, int(meta["row_index"]))
