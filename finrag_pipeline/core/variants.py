"""Chunking variants with indexes of their own, so the evaluation matrix can compare chunkings.

The pipeline indexes ONE chunking (``core.chunks``, FINRAG_HOME/indexes/{tantivy,lancedb}). A named
variant of ``assets_config/ingest.yaml`` (``small``, ``large``, ...) gets its own, built lazily the
first time a retriever over it is asked for, from what the warehouse already holds::

    FINRAG_HOME/indexes/variants/<variant>/
        manifest.json          # per filing: fingerprint, chunk counts, which index holds which fingerprint
        chunks/<filing>.json   # the variant's chunks (leaves and parents): the variant's ChunkStore
        tantivy/  lancedb/     # TantivyIndex / LanceIndex of the variant's leaf chunks

Every active filing (``core.catalog.active_filings``) is re-chunked from ``core.pages`` and
``core.table_rows`` with the variant's config. A filing is re-chunked and re-indexed only when its
fingerprint changed: the variant's config fingerprint + the filing's content hash + its catalog
metadata + a digest of its page and table-row rows (so a re-parse of the same bytes counts too).
Each index is synced on first use only (a BM25-only evaluation never loads the embedder), and the
LanceIndex embedding cache makes texts that did not change between variants (table rows) free.
Filings no longer active are dropped from the variant's indexes.

Writes are per filing and the manifest is rewritten atomically after each one, so an interrupted
build resumes where it stopped. An advisory file lock serialises builders of one variant across
processes (two Dagster runs evaluating the same variant).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from finrag_pipeline.core.chunking.config import ChunkingConfig, load_chunking_config
from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.paths import FinragPaths

DEFAULT_CHUNKING = "default"
MANIFEST_VERSION = 1
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
INDEX_KINDS = ("tantivy", "lance")


def is_default_chunking(name: str | None) -> bool:
    """None / "default": the chunking the pipeline indexes (and the QA evidence uses)."""
    return name in (None, "", DEFAULT_CHUNKING)


def variants_root(paths: FinragPaths) -> Path:
    return Path(paths.home) / "indexes" / "variants"


def source_digests(warehouse: Any, filing_ids: Sequence[str]) -> dict[str, str]:
    """Per filing, an md5 over its ``core.pages`` and ``core.table_rows`` rows (DuckDB-side, cheap)."""
    if not filing_ids:
        return {}
    marks = ",".join("?" * len(filing_ids))
    pages = warehouse.query_df(
        "SELECT filing_id, md5(string_agg(concat_ws('\x1f', page_number, text, section, section_title), '\x1e' "
        f"ORDER BY page_number)) AS d FROM core.pages WHERE filing_id IN ({marks}) GROUP BY filing_id",
        list(filing_ids))
    rows = warehouse.query_df(
        "SELECT filing_id, md5(string_agg(concat_ws('\x1f', table_id, row_index, page_number, section, table_title, "
        "unit, unit_text, row_label, headers, cells, row_path, statement_type), '\x1e' ORDER BY table_id, row_index)) AS d "
        f"FROM core.table_rows WHERE filing_id IN ({marks}) GROUP BY filing_id", list(filing_ids))
    p = dict(zip(pages["filing_id"], pages["d"], strict=True))
    r = dict(zip(rows["filing_id"], rows["d"], strict=True))
    return {fid: f"{p.get(fid, '')}:{r.get(fid, '')}" for fid in filing_ids}


class ChunkingVariantIndex:
    """One chunking variant's chunks and indexes under ``FINRAG_HOME/indexes/variants/<variant>``.

    ``embedder`` is an ``Embedder`` or a zero-argument factory (called only when the LanceIndex is
    first needed). ``tantivy()``, ``lance()`` and ``chunk_store()`` sync on first call and are then
    cached for the life of this object (one evaluation run).
    """

    def __init__(self, paths: FinragPaths, warehouse: Any, variant: str, *, embedder: Any = None,
                 config: ChunkingConfig | None = None, config_path: Path | None = None):
        if is_default_chunking(variant):
            raise ValueError("the default chunking is the pipeline's own index, not a variant")
        if not _SAFE_NAME.match(variant):
            raise ValueError(f"chunking variant name {variant!r} is not usable as a directory name")
        self.variant = variant
        self.config = config or load_chunking_config(variant, path=config_path)
        self.paths = paths
        self.warehouse = warehouse
        self.root = variants_root(paths) / variant
        self._embedder = embedder
        self._lock = threading.RLock()
        self._chunks: dict[str, list[Chunk]] | None = None
        self._indexes: dict[str, Any] = {}
        self._store: Any = None
        # What this object did, for logs and tests: filing ids per step.
        self.report: dict[str, list[str]] = {"rechunked": [], "tantivy": [], "lance": [], "removed": []}

    # ---- layout -------------------------------------------------------------------------------

    @property
    def tantivy_dir(self) -> Path:
        return self.root / "tantivy"

    @property
    def lancedb_dir(self) -> Path:
        return self.root / "lancedb"

    @property
    def chunks_dir(self) -> Path:
        return self.root / "chunks"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    # ---- fingerprints and manifest -------------------------------------------------------------

    def filing_fingerprints(self, filing_ids: Sequence[str]) -> dict[str, str]:
        """variant config fingerprint + content hash + catalog metadata + page/table-row digest."""
        if not filing_ids:
            return {}
        marks = ",".join("?" * len(filing_ids))
        meta = self.warehouse.query_df(
            "SELECT filing_id, content_sha256, company, ticker, form_type, fiscal_year FROM core.filings "
            f"WHERE filing_id IN ({marks})", list(filing_ids))
        metas = {r["filing_id"]: r for r in meta.to_dict("records")}
        digests = source_digests(self.warehouse, filing_ids)
        out = {}
        for fid in filing_ids:
            m = metas.get(fid, {})
            payload = json.dumps({"config": self.config.fingerprint(), "sha256": m.get("content_sha256"),
                                  "meta": [str(m.get(k)) for k in ("company", "ticker", "form_type", "fiscal_year")],
                                  "source": digests.get(fid)}, sort_keys=True)
            out[fid] = hashlib.sha256(payload.encode()).hexdigest()[:24]
        return out

    def read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads(self.manifest_path.read_text("utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("version") != MANIFEST_VERSION or data.get("config_fingerprint") != self.config.fingerprint():
            data = {}  # another config under this name: every filing is rebuilt
        data.setdefault("filings", {})
        data.update(version=MANIFEST_VERSION, variant=self.variant, config_fingerprint=self.config.fingerprint(),
                    config=self.config.model_dump())
        return data

    def _write_manifest(self, manifest: Mapping[str, Any]) -> None:
        _atomic_write(self.manifest_path, json.dumps(manifest, indent=1, sort_keys=True, default=str))

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """This object's lock plus an advisory lock file shared by every process building this variant."""
        with self._lock:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.root / ".lock", "a+") as fh:
                try:
                    import fcntl
                except ImportError:  # not POSIX: in-process lock only
                    yield
                    return
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    # ---- chunks -------------------------------------------------------------------------------

    def chunks(self) -> dict[str, list[Chunk]]:
        """The variant's chunks of every active filing (re-chunked only where the fingerprint changed)."""
        with self._lock:
            if self._chunks is None:
                with self._exclusive():
                    self._chunks = self._sync_chunks()
            return self._chunks

    def _sync_chunks(self) -> dict[str, list[Chunk]]:
        from finrag_pipeline.core.catalog import active_filings, load_filing
        from finrag_pipeline.core.chunking.chunker import chunk_filing
        from finrag_pipeline.core.records import load_pages, load_table_rows

        manifest = self.read_manifest()
        active = active_filings(self.warehouse)
        fingerprints = self.filing_fingerprints(active)
        out: dict[str, list[Chunk]] = {}
        for fid in active:
            entry = manifest["filings"].get(fid) or {}
            path = self._chunks_path(fid)
            if entry.get("fingerprint") == fingerprints[fid]:
                cached = self._read_chunks(path)
                if cached is not None and len(cached) == entry.get("n_chunks"):
                    out[fid] = cached
                    continue
            chunks = chunk_filing(load_filing(self.warehouse, fid), load_pages(self.warehouse, fid),
                                  load_table_rows(self.warehouse, fid), self.config)
            _atomic_write(path, json.dumps([c.to_row() for c in chunks], default=str))
            manifest["filings"][fid] = {"fingerprint": fingerprints[fid], "n_chunks": len(chunks),
                                        "n_leaves": sum(c.is_leaf for c in chunks), "indexed": {}}
            self._write_manifest(manifest)
            self.report["rechunked"].append(fid)
            out[fid] = chunks
        for fid in sorted(set(manifest["filings"]) - set(active)):
            # Gone from the catalog: its chunks go now, its index documents on each index's next sync.
            manifest["filings"].pop(fid)
            self._chunks_path(fid).unlink(missing_ok=True)
            self.report["removed"].append(fid)
        self._write_manifest(manifest)
        return out

    def _chunks_path(self, filing_id: str) -> Path:
        return self.chunks_dir / f"{filing_id}.json"

    @staticmethod
    def _read_chunks(path: Path) -> list[Chunk] | None:
        from finrag_pipeline.core.retrieval.resources import chunk_from_row

        try:
            rows = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return [chunk_from_row(r) for r in rows]

    def chunk_store(self):
        from finrag_pipeline.core.retrieval.resources import ChunkStore

        with self._lock:
            if self._store is None:
                self._store = ChunkStore(c for chunks in self.chunks().values() for c in chunks)
            return self._store

    # ---- indexes ------------------------------------------------------------------------------

    def tantivy(self):
        """The variant's TantivyIndex, synced with its chunks."""
        with self._lock:
            if "tantivy" not in self._indexes:
                from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

                self._indexes["tantivy"] = self._sync_index("tantivy", TantivyIndex(self.tantivy_dir), "")
            return self._indexes["tantivy"]

    def lance(self, embedder: Any = None):
        """The variant's LanceIndex (vectors of ``embedder``), synced with its chunks."""
        with self._lock:
            if "lance" not in self._indexes:
                from finrag_pipeline.core.indexing.lance_index import LanceIndex

                embedder = embedder if embedder is not None else self._resolve_embedder()
                index = LanceIndex(self.lancedb_dir, embedder)
                self._indexes["lance"] = self._sync_index("lance", index, embedder.name)
            return self._indexes["lance"]

    def _resolve_embedder(self) -> Any:
        from finrag_pipeline.core.retrieval.resources import _is_factory

        value = self._embedder
        if callable(value) and _is_factory(value):
            value = value()
        if value is None:
            from finrag_pipeline.core.indexing.embedder import load_embedder_config

            value = load_embedder_config().build()
        self._embedder = value
        return value

    def _sync_index(self, kind: str, index: Any, salt: str) -> Any:
        chunks = self.chunks()
        with self._exclusive():
            manifest = self.read_manifest()  # re-read: another process may have synced meanwhile
            for fid, filing_chunks in chunks.items():
                entry = manifest["filings"].get(fid)
                if entry is None:  # another process re-chunked it away: nothing to index here
                    continue
                want = entry["fingerprint"] + (f"|{salt}" if salt else "")
                if entry["indexed"].get(kind) == want and index.count(fid) == entry["n_leaves"]:
                    continue
                index.upsert_filing(fid, filing_chunks)
                entry["indexed"][kind] = want
                self._write_manifest(manifest)  # per filing: an interrupted build resumes
                self.report[kind].append(fid)
            for stale in sorted(set(index.filing_ids()) - set(chunks)):
                index.delete_filing(stale)
        return index

    # ---- retrieval ----------------------------------------------------------------------------

    def resources(self, base: Any = None):
        """RetrievalResources over this variant: its tantivy, lance and chunk store; the embedder,
        catalog, lexicon and LLM scorer shared with ``base`` (the default resources)."""
        from finrag_pipeline.core.retrieval.resources import CorpusCatalog, RetrievalResources

        res = RetrievalResources()
        res.tantivy = self.tantivy
        res.lance = lambda: self.lance(res.get("embedder"))
        res.chunk_store = self.chunk_store
        if base is not None:
            res.embedder = lambda: base.get("embedder")
            res.catalog = lambda: base.get("catalog")
            res.lexicon = base.lexicon
            res.score_pairs = base.score_pairs
            res.extras = dict(base.extras)
        else:
            res.embedder = self._resolve_embedder
            res.catalog = lambda: CorpusCatalog.from_warehouse(self.warehouse)
        return res


class VariantIndexes:
    """A session's chunking variants: one :class:`ChunkingVariantIndex` and one resources object per
    variant, and retrievers per (name, variant), each built once."""

    def __init__(self, paths: FinragPaths, warehouse: Any, base_resources: Any = None, *,
                 config_path: Path | None = None):
        self.paths = paths
        self.warehouse = warehouse
        self.base_resources = base_resources
        self.config_path = config_path
        self._lock = threading.RLock()
        self._variants: dict[str, ChunkingVariantIndex] = {}
        self._resources: dict[str, Any] = {}
        self._retrievers: dict[tuple[str, str], Any] = {}

    def get(self, variant: str) -> ChunkingVariantIndex:
        with self._lock:
            if variant not in self._variants:
                embedder = (lambda: self.base_resources.get("embedder")) if self.base_resources is not None else None
                self._variants[variant] = ChunkingVariantIndex(self.paths, self.warehouse, variant,
                                                               embedder=embedder, config_path=self.config_path)
            return self._variants[variant]

    def resources(self, variant: str):
        with self._lock:
            if variant not in self._resources:
                self._resources[variant] = self.get(variant).resources(self.base_resources)
            return self._resources[variant]

    def retriever(self, name: str, variant: str, overrides: Mapping[str, Any] | None = None) -> Any:
        """A named retriever of retrievers.yaml over the variant's indexes."""
        with self._lock:
            key = (name, variant)
            if key not in self._retrievers:
                from finrag_pipeline.core.retrieval.registry import build_named_retrievers

                self._retrievers[key] = build_named_retrievers(self.resources(variant), [name],
                                                               overrides=overrides)[name]
            return self._retrievers[key]


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)
