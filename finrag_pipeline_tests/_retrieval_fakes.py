"""Small in-memory stand-ins for the indexes, for retrieval tests that need no tantivy/LanceDB."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from finrag_pipeline.core.models import Chunk, Hit, SearchFilters, filters_match
from finrag_pipeline.core.query_understanding import CorpusCatalog
from finrag_pipeline.core.retrieval.base import Retriever
from finrag_pipeline.core.retrieval.resources import ChunkStore, RetrievalResources


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _fields(c: Chunk) -> dict:
    return {k: getattr(c, k) for k in ("chunk_id", "filing_id", "ticker", "chunk_type", "section", "parent_id",
                                       "fiscal_year", "page_start", "page_end", "position", "text")}


def _allowed(c: Chunk, filters: SearchFilters | None) -> bool:
    return filters_match(filters, filing_id=c.filing_id, ticker=c.ticker, fiscal_year=c.fiscal_year,
                         chunk_type=c.chunk_type)


class FakeLexicalIndex:
    """Score = number of query-word occurrences in the chunk (distinct query words)."""

    def __init__(self, chunks: list[Chunk]):
        self.chunks = [c for c in chunks if c.is_leaf]
        self.calls: list[tuple[str, int, SearchFilters | None]] = []

    def search(self, query_text, k=10, filters=None, **kwargs):
        self.calls.append((query_text, k, filters))
        q = set(words(query_text))
        scored = []
        for c in self.chunks:
            if not _allowed(c, filters):
                continue
            s = float(sum(1 for w in words(c.text) if w in q))
            if s > 0:
                scored.append((c.chunk_id, s, _fields(c)))
        scored.sort(key=lambda r: (-r[1], r[0]))
        return scored[:k]

    def count(self):
        return len(self.chunks)


class HashEmbedder:
    """Bag of hashed words, L2-normalised: texts sharing words are close."""

    name = "hash"
    dim = 64

    def __init__(self):
        self.calls = 0

    def encode(self, texts, batch_size=32, show_progress=False):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in words(t):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            n = np.linalg.norm(out[i])
            if n:
                out[i] /= n
        return out


class FakeDenseIndex:
    def __init__(self, chunks: list[Chunk], embedder: HashEmbedder):
        self.chunks = [c for c in chunks if c.is_leaf]
        self.matrix = embedder.encode([c.text for c in self.chunks])

    def search(self, vector, k=10, filters=None, columns=None):
        """LanceIndex.search's contract: every stored field, or ``columns`` (+ chunk_id) only."""
        sims = self.matrix @ np.asarray(vector, dtype=np.float32)
        rows = [(c.chunk_id, float(s), _fields(c) if columns is None
                 else {n: v for n, v in _fields(c).items() if n in {"chunk_id", *columns}})
                for c, s in zip(self.chunks, sims, strict=True) if _allowed(c, filters)]
        rows.sort(key=lambda r: (-r[1], r[0]))
        return rows[:k]


class ListRetriever(Retriever):
    """Returns a fixed ranking (for wrapper tests on hand-made rankings)."""

    def __init__(self, hits: list[Hit], name: str = "fixed"):
        self.hits = hits
        self.name = name
        self.stage_name = name
        self.calls: list[tuple[str, int, SearchFilters | None]] = []

    def _retrieve(self, query, k, filters, timings, info):
        self.calls.append((query, k, filters))
        with timings.stage(self.stage_name):
            return [h for h in self.hits if filters_match(filters, filing_id=h.filing_id, ticker=None,
                                                          fiscal_year=h.fiscal_year, chunk_type=h.chunk_type)][:k]


def chunk(cid: str, filing: str, text: str, *, fy: int, page: int = 1, ctype: str = "prose", parent: str | None = None,
          pos: int = 0, leaf: bool = True, ticker: str | None = None, company: str = "") -> Chunk:
    tick = ticker or filing.split("-")[0]
    return Chunk(chunk_id=cid, filing_id=filing, ticker=tick, company=company or tick, fiscal_year=fy,
                 form_type="10-K", section="Item 8" if ctype != "prose" else "Item 7", page_start=page,
                 page_end=page, chunk_type=ctype, text=text, parent_id=parent, position=pos, is_leaf=leaf)


def sample_corpus() -> list[Chunk]:
    """Two Apple filings, one Microsoft filing; an income-statement table with row children."""
    a22, a21, m22 = "AAPL-2022-10K", "AAPL-2021-10K", "MSFT-2022-10K"
    return [
        chunk("a22-t1", a22, "Apple Inc. FY2022 CONSOLIDATED STATEMENTS OF OPERATIONS (in millions)", fy=2022,
              page=28, ctype="table", leaf=False, pos=10),
        chunk("a22-r1", a22, "Apple FY2022 statements of operations: Total net sales 2022 394,328 2021 365,817",
              fy=2022, page=28, ctype="table_row", parent="a22-t1", pos=11),
        chunk("a22-r2", a22, "Apple FY2022 statements of operations: Total cost of sales 2022 223,546 2021 212,981",
              fy=2022, page=28, ctype="table_row", parent="a22-t1", pos=12),
        chunk("a22-r3", a22, "Apple FY2022 statements of operations: Net income 2022 99,803 2021 94,680",
              fy=2022, page=28, ctype="table_row", parent="a22-t1", pos=13),
        chunk("a22-p1", a22, "Apple FY2022 MD&A: Total net sales increased 8% during 2022 compared to 2021.",
              fy=2022, page=21, pos=5),
        chunk("a22-p2", a22, "Apple FY2022 risk factors: the company depends on component supply and net sales",
              fy=2022, page=9, pos=2),
        chunk("a22-cf", a22, "Apple FY2022 cash flows: Payments for acquisition of property, plant and equipment (10,708)",
              fy=2022, page=31, ctype="table_row", pos=20),
        chunk("a21-r1", a21, "Apple FY2021 statements of operations: Total net sales 2021 365,817 2020 274,515",
              fy=2021, page=29, ctype="table_row", pos=11),
        chunk("a21-p1", a21, "Apple FY2021 MD&A: Total net sales increased 33% during 2021 compared to 2020.",
              fy=2021, page=20, pos=5),
        chunk("m22-r1", m22, "Microsoft FY2022 income statements: Total revenue 2022 198,270 2021 168,088",
              fy=2022, page=57, ctype="table_row", pos=11, company="Microsoft Corporation"),
        chunk("m22-p1", m22, "Microsoft FY2022 MD&A: revenue increased 18% driven by Intelligent Cloud; net sales",
              fy=2022, page=38, pos=5, company="Microsoft Corporation"),
    ]


def sample_catalog() -> CorpusCatalog:
    return CorpusCatalog([
        {"filing_id": "AAPL-2022-10K", "ticker": "AAPL", "company": "Apple Inc.", "fiscal_year": 2022,
         "period_end_date": "2022-09-24"},
        {"filing_id": "AAPL-2021-10K", "ticker": "AAPL", "company": "Apple Inc.", "fiscal_year": 2021,
         "period_end_date": "2021-09-25"},
        {"filing_id": "MSFT-2022-10K", "ticker": "MSFT", "company": "Microsoft Corporation", "fiscal_year": 2022,
         "period_end_date": "2022-06-30"},
    ])


def fake_resources(chunks: list[Chunk] | None = None, **kw) -> RetrievalResources:
    chunks = chunks or sample_corpus()
    emb = HashEmbedder()
    return RetrievalResources(tantivy=FakeLexicalIndex(chunks), lance=FakeDenseIndex(chunks, emb), embedder=emb,
                              chunk_store=ChunkStore(chunks), catalog=sample_catalog(), **kw)


def hit(cid: str, score: float, *, parent: str | None = None, filing: str = "F", page: int = 1, fy: int = 2022,
        ctype: str = "table_row", pos: int = 0) -> Hit:
    return Hit(chunk_id=cid, score=score, rank=0, filing_id=filing, page_start=page, page_end=page, chunk_type=ctype,
               text=cid, stage="fixed", fiscal_year=fy, parent_id=parent, position=pos, stage_scores={"fixed": score})
