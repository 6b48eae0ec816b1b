"""BM25 that many writers feed: per-filing shards on the object store, one publisher, published snapshots.

Layout (keys under the store's prefix; see docs/DEPLOYMENT.md, "Storage layout"):

* ``bm25/shards/<filing_id>/<sha256>.parquet``: a filing's leaf chunks (the documents tantivy indexes),
  content-addressed. Written by the worker that indexes the filing (:func:`write_filing_shard`).
* ``bm25/heads/<filing_id>.json``: which shard is the filing's current one, written AFTER the shard.
  A worker killed between the two leaves an unreferenced shard (removed by the publisher after
  ``orphan_grace``), never a head without its shard. :func:`remove_filing_shard` deletes the head.
* ``bm25/snapshots/<snapshot_id>.tar``: a whole tantivy index built by the publisher from every head's
  shard; ``snapshot_id`` is the sha256 of the sorted ``{filing_id: shard sha}`` manifest, so the same
  inputs give the same id and a re-run of the publisher rebuilds nothing.
* ``bm25/CURRENT.json``: the pointer searchers follow, replaced atomically (conditional PUT) by
  :func:`publish_bm25_snapshot` only after the snapshot object is complete.

A searcher (:func:`open_published_bm25`) reads the pointer, downloads that snapshot once into a local
cache folder named by its id (extracted to a temp folder, then renamed), and opens it read-only with
:class:`TantivyIndex`. Whatever workers write meanwhile, the searcher sees one published state: a
half-written filing is never in a snapshot, because a snapshot is built from complete shards only.

The publisher builds a snapshot with the documents ``TantivyIndex.upsert_filing`` builds in a local run,
and never one holding deleted documents (tantivy counts them in BM25 document frequencies until a merge),
so its BM25 scores equal a fresh index of the same documents. It builds incrementally when it can:

* ``reused``: the manifest equals a snapshot still in the store (a filing removed again): nothing is built;
* ``incremental``: filings were only added since the published snapshot: that snapshot is the base, and only
  the new filings' shards are indexed, as one new segment (the old segments are copied as they are);
* ``full``: a filing was replaced or removed, there is no base, or its format differs: every shard is
  indexed afresh, filings in sorted order, in one commit.

Either way the index is built in a temporary folder, uploaded complete, and only then published.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import tantivy

from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
from finrag_pipeline.core.ingest.registry import validate_filing_id
from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.storage.object_store import ObjectStore, PointerConflict

SHARDS = "bm25/shards"
HEADS = "bm25/heads"
SNAPSHOTS = "bm25/snapshots"
POINTER = "bm25/CURRENT.json"
ORPHAN_GRACE = timedelta(hours=1)
FETCH_THREADS = 16
# Part of every snapshot id: a new index schema or analyser (bump it) rebuilds the snapshot from the same shards.
SNAPSHOT_FORMAT = f"finrag-bm25-1/tantivy-{getattr(tantivy, '__version__', '?')}"
_SHARD_COLUMNS = [f for f in Chunk.__dataclass_fields__ if f != "metadata"]


@dataclass(frozen=True)
class ShardRef:
    filing_id: str
    shard_key: str
    sha256: str
    n_docs: int


@dataclass(frozen=True)
class PublishedSnapshot:
    snapshot_id: str
    snapshot_key: str
    filings: dict[str, str]     # filing_id -> shard sha256
    n_docs: int
    changed: bool               # False: the pointer already named this snapshot
    removed_orphans: int = 0
    build: str = "none"         # how the snapshot was made: none (unchanged) | reused | incremental | full


def _shard_table(filing_id: str, chunks: Iterable[Chunk]) -> pa.Table:
    leaves = sorted((c for c in chunks if c.is_leaf), key=lambda c: (c.position, c.chunk_id))
    foreign = {c.filing_id for c in leaves} - {filing_id}
    if foreign:
        raise ValueError(f"BM25 shard of {filing_id!r} got chunks of other filings: {sorted(foreign)}")
    rows = [{k: v for k, v in c.to_row().items() if k != "metadata"} for c in leaves]
    return pa.Table.from_pylist(rows, schema=_shard_schema())


def _shard_schema() -> pa.Schema:
    ints = {"fiscal_year", "page_start", "page_end", "char_start", "char_end", "position"}
    return pa.schema([pa.field(name, pa.int64() if name in ints else pa.bool_() if name == "is_leaf" else pa.string())
                      for name in _SHARD_COLUMNS])


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    # no timestamps or writer ids in the file: the same documents give the same bytes (and key)
    pq.write_table(table, buf, compression="zstd", write_statistics=False, store_schema=False)
    return buf.getvalue()


def _chunks_of(table: pa.Table) -> list[Chunk]:
    return [Chunk(**row) for row in table.to_pylist()]


def write_filing_shard(store: ObjectStore, filing_id: str, chunks: Iterable[Chunk]) -> ShardRef:
    """Upload ``filing_id``'s leaf chunks as its BM25 shard, then point its head at it (worker side).

    Idempotent: a retried or duplicated step writes the same shard key and the same head.
    """
    validate_filing_id(filing_id)
    table = _shard_table(filing_id, chunks)
    data = _parquet_bytes(table)
    sha = hashlib.sha256(data).hexdigest()
    key = f"{SHARDS}/{filing_id}/{sha}.parquet"
    store.put_bytes(key, data)  # always PUT: refreshes its age, so the orphan sweep never races this head
    ref = ShardRef(filing_id, key, sha, table.num_rows)
    store.put_bytes(f"{HEADS}/{filing_id}.json", json.dumps(ref.__dict__, sort_keys=True).encode())
    return ref


def remove_filing_shard(store: ObjectStore, filing_id: str) -> None:
    """Take ``filing_id`` out of the next published snapshot (its shards go with the orphan sweep)."""
    validate_filing_id(filing_id)
    store.delete(f"{HEADS}/{filing_id}.json")


def current_heads(store: ObjectStore) -> dict[str, ShardRef]:
    keys = [info.key for info in store.list(f"{HEADS}/")]
    with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:  # one small GET per filing: in parallel
        refs = [ShardRef(**json.loads(data)) for data in pool.map(store.get_bytes, keys)]
    return {ref.filing_id: ref for ref in refs}


def snapshot_id_of(filings: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps([SNAPSHOT_FORMAT, sorted(filings.items())]).encode()).hexdigest()[:32]


def build_index_from_shards(store: ObjectStore, heads: dict[str, ShardRef], index_dir: Path,
                            shard_cache: Path) -> int:
    """A fresh tantivy index at ``index_dir`` holding every head's shard; returns the document count."""
    index = TantivyIndex(index_dir)
    with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:  # immutable shards: each downloaded once
        list(pool.map(lambda ref: store.fetch_cached(ref.shard_key, shard_cache), heads.values()))

    def documents():
        for filing_id in sorted(heads):
            yield filing_id, _chunks_of(pq.read_table(store.fetch_cached(heads[filing_id].shard_key, shard_cache)))

    return index.upsert_filings(documents())  # one commit for the whole snapshot


def _add_shards_to_base(store: ObjectStore, base_key: str, added: dict[str, ShardRef], index_dir: Path,
                        shard_cache: Path, tmp: Path) -> int:
    """The base snapshot extracted into ``index_dir`` plus ``added`` filings' documents in one commit."""
    with tarfile.open(store.get_file(base_key, tmp / "base.tar")) as tar:
        tar.extractall(index_dir, filter="data")  # refuses absolute paths and '..'
    index = TantivyIndex(index_dir)
    with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:
        list(pool.map(lambda ref: store.fetch_cached(ref.shard_key, shard_cache), added.values()))
    index.upsert_filings((fid, _chunks_of(pq.read_table(store.fetch_cached(added[fid].shard_key, shard_cache))))
                         for fid in sorted(added))
    return index.count()


def _build_plan(current_payload: dict[str, Any] | None, filings: dict[str, str]) -> tuple[str, list[str]]:
    """("incremental", the added filings) when the published snapshot is a valid base, else ("full", all)."""
    base = (current_payload or {}).get("filings")
    if (current_payload is None or base is None or current_payload.get("format") != SNAPSHOT_FORMAT
            or any(filings.get(fid) != sha for fid, sha in base.items())):  # replaced or removed: deletions
        return "full", sorted(filings)
    return "incremental", sorted(set(filings) - set(base))


def publish_bm25_snapshot(store: ObjectStore, work_dir: str | os.PathLike, *,
                          orphan_grace: timedelta = ORPHAN_GRACE) -> PublishedSnapshot:
    """The single publisher step: build a snapshot of every filing's current shard and point searchers at it.

    The pointer changes only after the snapshot object is complete, and only if no other publisher
    moved it meanwhile (:class:`PointerConflict` otherwise: re-run the step). Unreferenced shards
    older than ``orphan_grace`` and snapshots other than the current and previous one are deleted.
    """
    work_dir = Path(work_dir)
    current = store.read_pointer(POINTER)
    heads = current_heads(store)
    filings = {fid: ref.sha256 for fid, ref in sorted(heads.items())}
    snapshot_id = snapshot_id_of(filings)
    snapshot_key = f"{SNAPSHOTS}/{snapshot_id}.tar"
    if current is not None and current.payload.get("snapshot_id") == snapshot_id:
        removed = _sweep(store, heads, current.payload, None, orphan_grace)
        return PublishedSnapshot(snapshot_id, snapshot_key, filings, int(current.payload["n_docs"]), False, removed)

    if store.exists(snapshot_key):  # the id names its manifest and format: an object under it is complete
        build, n_docs = "reused", sum(ref.n_docs for ref in heads.values())
    else:
        build, added = _build_plan(current.payload if current else None, filings)
        with tempfile.TemporaryDirectory(dir=_mkdir(work_dir)) as tmp:
            index_dir, shard_cache = Path(tmp) / "index", work_dir / "shard-cache"
            if build == "incremental":
                n_docs = _add_shards_to_base(store, current.payload["snapshot_key"], {f: heads[f] for f in added},
                                             index_dir, shard_cache, Path(tmp))
            else:
                n_docs = build_index_from_shards(store, heads, index_dir, shard_cache)
            tar_path = Path(tmp) / "snapshot.tar"
            with tarfile.open(tar_path, "w") as tar:
                for path in sorted(index_dir.iterdir()):
                    if path.name.endswith(".lock"):  # tantivy's lock files are per process, not index data
                        continue
                    tar.add(path, arcname=path.name)
            store.put_file(snapshot_key, tar_path)

    payload: dict[str, Any] = {"snapshot_id": snapshot_id, "snapshot_key": snapshot_key, "filings": filings,
                               "n_docs": n_docs, "format": SNAPSHOT_FORMAT, "build": build,
                               "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
                               "previous_snapshot_key": current.payload.get("snapshot_key") if current else None}
    try:
        store.publish_pointer(POINTER, payload, expected_etag=current.etag if current else None)
    except PointerConflict:
        raise PointerConflict("another BM25 publisher moved bm25/CURRENT.json while this one built "
                              f"{snapshot_id}; run the publisher again") from None
    removed = _sweep(store, heads, payload, current.payload if current else None, orphan_grace)
    return PublishedSnapshot(snapshot_id, snapshot_key, filings, n_docs, True, removed, build)


def _sweep(store: ObjectStore, heads: dict[str, ShardRef], published: dict[str, Any],
           previous: dict[str, Any] | None, grace: timedelta) -> int:
    """Delete shards no head names and snapshots no searcher can still be opening (old enough only)."""
    cutoff = datetime.now(UTC) - grace
    keep = {ref.shard_key for ref in heads.values()}
    keep_snapshots = {published.get("snapshot_key"), published.get("previous_snapshot_key")}
    if previous:
        keep_snapshots.add(previous.get("snapshot_key"))
    stale = [o.key for o in store.list(f"{SHARDS}/") if o.key not in keep and o.last_modified < cutoff]
    stale += [o.key for o in store.list(f"{SNAPSHOTS}/") if o.key not in keep_snapshots and o.last_modified < cutoff]
    return store.delete_many(stale) if stale else 0


def open_published_bm25(store: ObjectStore, cache_dir: str | os.PathLike) -> TantivyIndex | None:
    """The published BM25 snapshot as a local :class:`TantivyIndex` (searcher side); None before any publish.

    Downloaded once per snapshot id into ``cache_dir/<snapshot_id>`` (complete or absent: extracted to a
    temp folder, then renamed). Open it again after a publish to see the new snapshot.
    """
    pointer = store.read_pointer(POINTER)
    if pointer is None:
        return None
    snapshot_id = pointer.payload["snapshot_id"]
    cache_dir = _mkdir(Path(cache_dir))
    target = cache_dir / snapshot_id
    if not target.is_dir():
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            tar_path = store.get_file(pointer.payload["snapshot_key"], Path(tmp) / "snapshot.tar")
            extracted = Path(tmp) / "index"
            with tarfile.open(tar_path) as tar:
                tar.extractall(extracted, filter="data")  # refuses absolute paths and '..'
            try:
                os.rename(extracted, target)
            except OSError:  # another process of this machine won the race: its copy is identical
                if not target.is_dir():
                    raise
    return TantivyIndex(target)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def clear_snapshot_cache(cache_dir: str | os.PathLike, keep: str | None = None) -> None:
    """Remove cached snapshots other than ``keep`` (a searcher that restarted on a newer one)."""
    for path in Path(cache_dir).iterdir() if Path(cache_dir).is_dir() else []:
        if path.is_dir() and path.name != keep:
            shutil.rmtree(path, ignore_errors=True)
