"""BM25 over chunks with tantivy: per-filing atomic upserts, safe user queries, zero-score filters.

Each chunk's text is indexed twice:
  * ``text``: words (simple tokenizer, lowercase, English stopwords removed, English stemming);
  * ``fin``: financial tokens normalised in Python (:func:`financial_terms`: "$4.2B" -> "4.2b",
    "2,345.6" -> "2345.6", "10-K" -> "10-k"), indexed with a whitespace tokenizer.
A query is analysed the same way and becomes one SHOULD term query per distinct token and field,
so any user text works (no query parser, nothing to escape). Scores are tantivy's BM25
(k1=1.2, b=0.75) summed over matching terms of both fields; :func:`tokenize_for_bm25` and
:func:`fin_tokens_for_bm25` give the exact analysed tokens for a reference implementation.

Concurrency: one writer at a time per index directory (tantivy's lock). Writers retry on
``LockBusy`` with backoff. ``upsert_filing`` deletes by the ``filing_id`` term, adds the new
documents and commits ONCE, so a run that dies midway leaves the previous state intact.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import tantivy

from finrag_pipeline.core.indexing.financial_tokens import financial_terms
from finrag_pipeline.core.models import Chunk, SearchFilters

BM25_K1 = 1.2  # tantivy's fixed BM25 parameters (tantivy::query::bm25)
BM25_B = 0.75
WORDS_TOKENIZER = "finrag_words"
FIN_TOKENIZER = "finrag_fin"
TEXT_FIELDS = ("text", "fin")
_RAW_FIELDS = ("chunk_id", "filing_id", "ticker", "chunk_type", "section", "parent_id", "table_id")
_INT_FIELDS = ("fiscal_year", "page_start", "page_end", "position")
_MAX_TOKEN_CHARS = 40


def _words_analyzer() -> tantivy.TextAnalyzer:
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(_MAX_TOKEN_CHARS))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stopword("english"))
            .filter(tantivy.Filter.stemmer("english"))
            .build())


def _fin_analyzer() -> tantivy.TextAnalyzer:
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
            .filter(tantivy.Filter.remove_long(_MAX_TOKEN_CHARS))
            .filter(tantivy.Filter.lowercase())
            .build())


_WORDS = _words_analyzer()
_FIN = _fin_analyzer()


def tokenize_for_bm25(text: str) -> list[str]:
    """The tokens the ``text`` field holds for ``text`` (stemmed, stopwords removed), in order."""
    return list(_WORDS.analyze(text))


def fin_tokens_for_bm25(text: str) -> list[str]:
    """The tokens the ``fin`` field holds for ``text`` (normalised financial tokens), in order."""
    return list(_FIN.analyze(_fin_field_value(text)))


def _fin_field_value(text: str) -> str:
    return " ".join(financial_terms(text))


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    for name in _RAW_FIELDS:
        # fast on filing_id: filing_ids() aggregates over it
        sb.add_text_field(name, stored=True, tokenizer_name="raw", fast=name == "filing_id")
    for name in _INT_FIELDS:
        sb.add_integer_field(name, stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=True, tokenizer_name=WORDS_TOKENIZER)
    sb.add_text_field("fin", stored=False, tokenizer_name=FIN_TOKENIZER)
    return sb.build()


class IndexBusy(RuntimeError):
    """Another writer held the index lock for longer than the retry budget."""


class TantivyIndex:
    """A tantivy index of leaf chunks under ``path``.

    ``fin_boost`` weighs the financial-token field against the word field (1.0: plain sum).
    """

    def __init__(self, path: str | os.PathLike, *, lock_timeout: float = 120.0,
                 heap_size: int = 50_000_000, fin_boost: float = 1.0):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock_timeout = lock_timeout
        self.heap_size = heap_size
        self.fin_boost = fin_boost
        self.schema = build_schema()
        self.index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
        # Tokenizers are not persisted with the index: register them on every open.
        self.index.register_tokenizer(WORDS_TOKENIZER, _WORDS)
        self.index.register_tokenizer(FIN_TOKENIZER, _FIN)

    # ---- writes ---------------------------------------------------------------------------

    def upsert_filing(self, filing_id: str, chunks: Iterable[Chunk]) -> int:
        """Replace every document of ``filing_id`` by its leaf ``chunks``, in one commit."""
        docs = [self._document(c) for c in chunks if c.is_leaf]
        foreign = {d.get_first("filing_id") for d in docs} - {filing_id}
        if foreign:
            raise ValueError(f"upsert_filing({filing_id!r}) got chunks of other filings: {sorted(foreign)}")

        def replace(writer: tantivy.IndexWriter) -> None:
            writer.delete_documents_by_term("filing_id", filing_id)
            for doc in docs:
                writer.add_document(doc)

        self._write(replace)
        return len(docs)

    def upsert_filings(self, filings: Iterable[tuple[str, Iterable[Chunk]]]) -> int:
        """:meth:`upsert_filing` for many filings in ONE commit (a commit costs ~0.3 s: bulk builds use this)."""
        prepared = []
        for filing_id, chunks in filings:
            docs = [self._document(c) for c in chunks if c.is_leaf]
            foreign = {d.get_first("filing_id") for d in docs} - {filing_id}
            if foreign:
                raise ValueError(f"upsert_filings: {filing_id!r} got chunks of other filings: {sorted(foreign)}")
            prepared.append((filing_id, docs))

        def replace(writer: tantivy.IndexWriter) -> None:
            for filing_id, docs in prepared:
                writer.delete_documents_by_term("filing_id", filing_id)
                for doc in docs:
                    writer.add_document(doc)

        self._write(replace)
        return sum(len(docs) for _, docs in prepared)

    def delete_filing(self, filing_id: str) -> None:
        """Remove every document of ``filing_id`` (one commit)."""
        self._write(lambda w: w.delete_documents_by_term("filing_id", filing_id))

    def _write(self, apply: Callable[[tantivy.IndexWriter], Any]) -> None:
        """Run ``apply`` on a fresh writer and commit once; on any error nothing is committed."""
        writer = self._acquire_writer()
        try:
            apply(writer)
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()  # consumes the writer and releases the lock
        self.index.reload()

    def _acquire_writer(self) -> tantivy.IndexWriter:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.05
        while True:
            try:
                return self.index.writer(heap_size=self.heap_size, num_threads=1)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise IndexBusy(f"tantivy index {self.path} is locked by another writer") from exc
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 2.0)

    def _document(self, chunk: Chunk) -> tantivy.Document:
        doc = tantivy.Document()
        for name in _RAW_FIELDS:
            doc.add_text(name, getattr(chunk, name) or "")
        for name in _INT_FIELDS:
            doc.add_integer(name, int(getattr(chunk, name)))
        doc.add_text("text", chunk.text)
        doc.add_text("fin", _fin_field_value(chunk.text))
        return doc

    # ---- reads ----------------------------------------------------------------------------

    def search(self, query_text: str, k: int = 10, filters: SearchFilters | None = None,
               fields: Sequence[str] = TEXT_FIELDS) -> list[tuple[str, float, dict[str, Any]]]:
        """BM25 top ``k`` as ``(chunk_id, score, stored_fields)``; never raises on user text.

        ``fields`` restricts scoring to ``("text",)`` or ``("fin",)`` (e.g. to compare with a
        reference BM25 computed on :func:`tokenize_for_bm25` tokens).
        """
        text_query = self._text_query(query_text, fields)
        if text_query is None or k <= 0:
            return []
        clauses = [(tantivy.Occur.Must, text_query)]
        filter_query = self._filter_query(filters)
        if filter_query is not None:
            # A filter must restrict, not score: wrap it so it adds exactly 0.
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(filter_query, 0.0)))
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit=k, count=False).hits
        results = []
        for score, address in hits:
            stored = _flatten(searcher.doc(address).to_dict())
            results.append((stored["chunk_id"], float(score), stored))
        results.sort(key=lambda r: (-r[1], r[0]))  # deterministic order among ties
        return results

    def _text_query(self, query_text: str, fields: Sequence[str]) -> tantivy.Query | None:
        query_text = query_text or ""
        analysed = {"text": tokenize_for_bm25(query_text), "fin": fin_tokens_for_bm25(query_text)}
        subqueries = []
        for field in fields:
            for token in dict.fromkeys(analysed[field]):  # distinct, in order
                term = tantivy.Query.term_query(self.schema, field, token)
                if field == "fin" and self.fin_boost != 1.0:
                    term = tantivy.Query.boost_query(term, self.fin_boost)
                subqueries.append((tantivy.Occur.Should, term))
        return tantivy.Query.boolean_query(subqueries) if subqueries else None

    def _filter_query(self, filters: SearchFilters | None) -> tantivy.Query | None:
        if filters is None:
            return None
        musts = []
        for field, values in (("filing_id", filters.filing_ids), ("ticker", filters.tickers),
                              ("chunk_type", filters.chunk_types)):
            if values is not None:
                musts.append(tantivy.Query.term_set_query(self.schema, field, [str(v) for v in values]))
        if filters.fiscal_years is not None:
            musts.append(tantivy.Query.term_set_query(self.schema, "fiscal_year",
                                                      [int(y) for y in filters.fiscal_years]))
        if not musts:
            return None
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in musts])

    def count(self, filing_id: str | None = None) -> int:
        """Number of indexed chunks, overall or for one filing."""
        searcher = self.index.searcher()
        if filing_id is None:
            return searcher.num_docs
        query = tantivy.Query.term_query(self.schema, "filing_id", filing_id)
        return searcher.search(query, limit=1, count=True).count  # limit=0 panics in tantivy

    def filing_ids(self) -> list[str]:
        """The filings present in the index, sorted."""
        searcher = self.index.searcher()
        if searcher.num_docs == 0:
            return []
        agg = searcher.aggregate(tantivy.Query.all_query(),
                                 {"ids": {"terms": {"field": "filing_id", "size": 1_000_000}}})
        return sorted(b["key"] for b in agg["ids"]["buckets"])

    def doc_freq(self, field: str, token: str) -> int:
        """Documents holding an analysed ``token`` in ``field`` (for reference BM25 idf)."""
        return self.index.searcher().doc_freq(field, token)


def _flatten(stored: dict[str, list[Any]]) -> dict[str, Any]:
    row = {name: values[0] if values else None for name, values in stored.items()}
    for name in ("ticker", "section", "parent_id", "table_id"):
        row[name] = row.get(name) or None  # stored as "" when missing
    return row
