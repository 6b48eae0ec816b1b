"""Chunking variants: the per-(filing, variant) build and the read side of a variant's indexes.

The pipeline indexes ONE chunking (``core.chunks``, FINRAG_HOME/indexes/{tantivy,lancedb}); the QA
evidence cites its chunk ids. Every other variant of ``assets_config/ingest.yaml`` (``small``, ``large``,
...) is a value of the ``chunking`` partition dimension of the Dagster assets ``variant_chunks``,
``variant_bm25_index`` and ``variant_vector_index`` (defs/index/variants.py), one partition per
(filing, variant). They call the build functions here, which write::

    core.variant_chunks                                   # rows per (chunking, filing_id), with the config fingerprint
    FINRAG_HOME/indexes/variants/<variant>/tantivy/       # TantivyIndex of the variant's leaf chunks
    FINRAG_HOME/indexes/variants/<variant>/lancedb/       # LanceIndex of the same leaves

Dagster's partitions are the bookkeeping: nothing here builds lazily. A retriever over a variant
(:class:`VariantIndexes`) reads what was built; :func:`missing_builds` says, per (filing, variant),
what is not there (no chunks, chunks of other settings, an index short of the leaf count), and
:func:`require_built` turns that into :class:`VariantNotBuilt`, the error an evaluation stops with.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from finrag_pipeline.core.chunking.config import ChunkingConfig, chunking_variants, load_chunking_config
from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.paths import FinragPaths

DEFAULT_CHUNKING = "default"
VARIANT_CHUNKS_TABLE = "core.variant_chunks"
# A variant name is a directory name and a Dagster partition key ("|" and "," separate keys there).
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
BUILD_ASSETS = ("variant_chunks", "variant_bm25_index", "variant_vector_index")


def is_default_chunking(name: str | None) -> bool:
    """None / "default": the chunking the pipeline indexes (and the QA evidence uses)."""
    return name in (None, "", DEFAULT_CHUNKING)


def check_variant_name(name: str) -> str:
    if is_default_chunking(name):
        raise ValueError("the default chunking is the pipeline's own index, not a variant")
    if not _SAFE_NAME.match(name):
        raise ValueError(f"chunking variant name {name!r} must match {_SAFE_NAME.pattern} "
                         "(it names a directory and a Dagster partition)")
    return name


def variant_names(path: Path | None = None) -> list[str]:
    """The non-default variants of ingest.yaml (``chunking.variants`` minus ``default_variant``), in file
    order: the values of the ``chunking`` partition dimension. A bad name is an error naming it."""
    default = load_chunking_config(None, path=path).name
    return [check_variant_name(n) for n in chunking_variants(path) if n != default and not is_default_chunking(n)]


def variants_root(paths: FinragPaths) -> Path:
    return Path(paths.home) / "indexes" / "variants"


def tantivy_dir(paths: FinragPaths, variant: str) -> Path:
    return variants_root(paths) / check_variant_name(variant) / "tantivy"


def lancedb_dir(paths: FinragPaths, variant: str) -> Path:
    return variants_root(paths) / check_variant_name(variant) / "lancedb"


def partition_key(filing_id: str, variant: str) -> str:
    """The Dagster key of a (filing, variant) partition: dimensions in name order, "chunking|filing"."""
    return f"{variant}|{filing_id}"


# ---- build: one (filing, variant) ---------------------------------------------------------------


def chunk_filing_variant(warehouse: Any, filing_id: str, config: ChunkingConfig) -> list[Chunk]:
    """The filing's pages and table rows (as parsed for the default chunking) cut by ``config``."""
    from finrag_pipeline.core.catalog import load_filing
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.records import load_pages, load_table_rows

    return chunk_filing(load_filing(warehouse, filing_id), load_pages(warehouse, filing_id),
                        load_table_rows(warehouse, filing_id), config)


def write_variant_chunks(warehouse: Any, filing_id: str, config: ChunkingConfig, chunks: Sequence[Chunk]) -> int:
    """Replace the (filing, variant) rows of core.variant_chunks (idempotent)."""
    variant = check_variant_name(config.name)
    rows = [{"chunking": variant, "chunking_fingerprint": config.fingerprint(), **c.to_row()} for c in chunks]
    return warehouse.replace_rows(VARIANT_CHUNKS_TABLE, rows, where={"chunking": variant, "filing_id": filing_id})


def load_variant_chunks(warehouse: Any, variant: str, filing_id: str | None = None, *,
                        leaves_only: bool = False, active_only: bool = False) -> list[Chunk]:
    """The variant's chunks of one filing (or of every filing; ``active_only``: filings not removed)."""
    from finrag_pipeline.core.retrieval.resources import chunk_from_row

    clauses, params = ["chunking = ?"], [variant]
    if filing_id is not None:
        clauses.append("filing_id = ?")
        params.append(filing_id)
    if leaves_only:
        clauses.append("is_leaf")
    if active_only:
        clauses.append("filing_id IN (SELECT filing_id FROM core.filings WHERE NOT coalesce(removed, FALSE))")
    df = warehouse.query_df(f"SELECT * FROM {VARIANT_CHUNKS_TABLE} WHERE {' AND '.join(clauses)} "
                            "ORDER BY filing_id, position", params)
    return [chunk_from_row(r) for r in df.drop(columns=["chunking", "chunking_fingerprint"]).to_dict("records")]


def open_tantivy(paths: FinragPaths, variant: str):
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    return TantivyIndex(tantivy_dir(paths, variant))


def open_lance(paths: FinragPaths, variant: str, embedder: Any):
    """The variant's vector table, embedding through the home's one cache (the default index's): a text the
    default chunking or another variant embedded (every table row) is not embedded again."""
    from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
    from finrag_pipeline.core.indexing.lance_index import LanceIndex, embedding_cache_path

    cache = EmbeddingCache(embedding_cache_path(paths.lancedb_dir))
    return LanceIndex(lancedb_dir(paths, variant), embedder, cache=cache)


def drop_filings_not_in(paths: FinragPaths, warehouse: Any, active: Iterable[str],
                        variants: Iterable[str]) -> list[tuple[str, str]]:
    """Remove every filing outside ``active`` from the variants' chunks and indexes (what corpus_state
    does for the default indexes). Returns the (filing, variant) pairs removed."""
    active = set(active)
    removed: set[tuple[str, str]] = set()
    stale = warehouse.query_df(f"SELECT DISTINCT chunking, filing_id FROM {VARIANT_CHUNKS_TABLE}")
    for variant, fid in stale.itertuples(index=False):
        if fid not in active:
            warehouse.delete_rows(VARIANT_CHUNKS_TABLE, where={"chunking": variant, "filing_id": fid})
            removed.add((fid, variant))
    for variant in variants:
        if tantivy_dir(paths, variant).exists():
            index = open_tantivy(paths, variant)
            for fid in set(index.filing_ids()) - active:
                index.delete_filing(fid)
                removed.add((fid, variant))
        table = _lance_table(paths, variant)
        if table is not None:
            for fid in set(_lance_counts(table)) - active:
                table.delete(f"filing_id = {_sql_literal(fid)}")
                removed.add((fid, variant))
    return sorted(removed)


# ---- what is built ------------------------------------------------------------------------------


class VariantNotBuilt(RuntimeError):
    """Some (filing, variant) partitions an evaluation or a retriever needs were not built."""

    def __init__(self, missing: Mapping[tuple[str, str], str]):
        self.missing = dict(missing)
        pairs = "; ".join(f"({fid}, {variant}): {why}" for (fid, variant), why in sorted(self.missing.items()))
        keys = ", ".join(partition_key(fid, v) for fid, v in sorted(self.missing))
        super().__init__(
            f"chunking variant partitions not built (evaluation does not build them): {pairs}. Materialize "
            f"{', '.join(BUILD_ASSETS)} for partitions [{keys}] (automation does; or `finrag variants build`).")


def missing_builds(paths: FinragPaths, warehouse: Any, variants: Iterable[str], filing_ids: Iterable[str],
                   *, kinds: Sequence[str] = ("tantivy", "lance")) -> dict[tuple[str, str], str]:
    """Per (filing, variant) whose build is not complete, why: no chunks, chunks of other settings than
    ingest.yaml's, or an index (``kinds``) whose documents for the filing differ from its leaf chunks.
    Reads the warehouse and the index files only (no embedder)."""
    filing_ids = sorted(set(filing_ids))
    missing: dict[tuple[str, str], str] = {}
    for variant in dict.fromkeys(variants):
        if is_default_chunking(variant):
            continue
        fingerprint = load_chunking_config(variant).fingerprint()  # unknown variant: ConfigError naming it
        built = warehouse.query_df(
            f"SELECT filing_id, any_value(chunking_fingerprint) AS fp, count(DISTINCT chunking_fingerprint) AS n_fp, "
            f"count(*) FILTER (WHERE is_leaf) AS leaves FROM {VARIANT_CHUNKS_TABLE} WHERE chunking = ? GROUP BY filing_id",
            [variant])
        chunks = {r["filing_id"]: r for r in built.to_dict("records")}
        bm25 = open_tantivy(paths, variant) if "tantivy" in kinds and tantivy_dir(paths, variant).exists() else None
        table = _lance_table(paths, variant) if "lance" in kinds else None
        vectors = _lance_counts(table) if table is not None else {}
        for fid in filing_ids:
            row = chunks.get(fid)
            if row is None:
                missing[(fid, variant)] = "no chunks"
                continue
            if row["n_fp"] != 1 or row["fp"] != fingerprint:
                missing[(fid, variant)] = (f"chunked with settings {row['fp']}, ingest.yaml now says {fingerprint}")
                continue
            leaves = int(row["leaves"])
            if "tantivy" in kinds:
                n = bm25.count(fid) if bm25 is not None else 0
                if n != leaves:
                    missing[(fid, variant)] = f"BM25 index holds {n} of {leaves} leaf chunks"
                    continue
            if "lance" in kinds and vectors.get(fid, 0) != leaves:
                missing[(fid, variant)] = f"vector index holds {vectors.get(fid, 0)} of {leaves} leaf chunks"
    return missing


def require_built(paths: FinragPaths, warehouse: Any, variants: Iterable[str], filing_ids: Iterable[str],
                  **kwargs: Any) -> None:
    missing = missing_builds(paths, warehouse, variants, filing_ids, **kwargs)
    if missing:
        raise VariantNotBuilt(missing)


def _lance_table(paths: FinragPaths, variant: str):
    """The variant's LanceDB table opened without an embedder (counts and deletes only), or None."""
    directory = lancedb_dir(paths, variant)
    if not directory.exists():
        return None
    import lancedb

    from finrag_pipeline.core.indexing.lance_index import TABLE_NAME

    db = lancedb.connect(str(directory))
    try:
        return db.open_table(TABLE_NAME)
    except (FileNotFoundError, ValueError):
        return None


def _lance_counts(table: Any) -> dict[str, int]:
    if table.count_rows() == 0:
        return {}
    column = table.search().select(["filing_id"]).limit(None).to_arrow()["filing_id"].to_pylist()
    counts: dict[str, int] = {}
    for fid in column:
        counts[fid] = counts.get(fid, 0) + 1
    return counts


def _sql_literal(value: str) -> str:
    from finrag_pipeline.core.indexing.lance_index import sql_literal

    return sql_literal(value)


# ---- read: retrievers over a variant --------------------------------------------------------------


class ChunkingVariantIndex:
    """One variant's built indexes and chunks, opened on first use (never built here).

    ``embedder`` is an ``Embedder`` or a zero-argument factory (called only when the LanceIndex is first
    needed); it must be the one the variant_vector_index asset embedded with (the Dagster resource's).
    """

    def __init__(self, paths: FinragPaths, warehouse: Any, variant: str, *, embedder: Any = None):
        self.variant = check_variant_name(variant)
        self.paths = paths
        self.warehouse = warehouse
        self.root = variants_root(paths) / variant
        self._embedder = embedder
        self._lock = threading.RLock()
        self._indexes: dict[str, Any] = {}
        self._store: Any = None

    def chunk_store(self):
        from finrag_pipeline.core.retrieval.resources import ChunkStore

        with self._lock:
            if self._store is None:
                self._store = ChunkStore(load_variant_chunks(self.warehouse, self.variant, active_only=True))
            return self._store

    def tantivy(self):
        with self._lock:
            if "tantivy" not in self._indexes:
                self._indexes["tantivy"] = open_tantivy(self.paths, self.variant)
            return self._indexes["tantivy"]

    def lance(self, embedder: Any = None):
        with self._lock:
            if "lance" not in self._indexes:
                self._indexes["lance"] = open_lance(self.paths, self.variant,
                                                    embedder if embedder is not None else self._resolve_embedder())
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

    def resources(self, base: Any = None):
        """RetrievalResources over this variant: its tantivy, lance and chunk store; the embedder,
        catalog, lexicon and LLM scorer shared with ``base`` (the default resources)."""
        from finrag_pipeline.core.query_understanding import CorpusCatalog
        from finrag_pipeline.core.retrieval.resources import RetrievalResources

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

    def __init__(self, paths: FinragPaths, warehouse: Any, base_resources: Any = None):
        self.paths = paths
        self.warehouse = warehouse
        self.base_resources = base_resources
        self._lock = threading.RLock()
        self._variants: dict[str, ChunkingVariantIndex] = {}
        self._resources: dict[str, Any] = {}
        self._retrievers: dict[tuple[str, str], Any] = {}

    def get(self, variant: str) -> ChunkingVariantIndex:
        with self._lock:
            if variant not in self._variants:
                load_chunking_config(variant)  # an unknown variant is an error naming the valid ones
                embedder = (lambda: self.base_resources.get("embedder")) if self.base_resources is not None else None
                self._variants[variant] = ChunkingVariantIndex(self.paths, self.warehouse, variant, embedder=embedder)
            return self._variants[variant]

    def require(self, variants: Iterable[str], filing_ids: Iterable[str]) -> None:
        """Raise :class:`VariantNotBuilt` naming every (filing, variant) of these that is not built."""
        require_built(self.paths, self.warehouse, [v for v in variants if not is_default_chunking(v)], filing_ids)

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
