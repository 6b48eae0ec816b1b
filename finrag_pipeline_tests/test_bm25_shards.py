"""BM25 with many writers: per-filing shards on a real S3-compatible server, one publisher, snapshots.

The documents are the default chunks of two real 10-K excerpts (Apple FY2022, Walmart FY2021).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
from finrag_pipeline.core.models import Chunk, SearchFilters
from finrag_pipeline.core.storage import bm25_shards as shards
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline_tests import _object_store

moto_endpoint = _object_store.moto_endpoint
store_config = _object_store.store_config
store = _object_store.store

DATA = Path(__file__).parent / "data"
QUERIES = ["total net sales", "net income 99,803", "global and regional economic conditions",
           "$394,328", "Walmart consolidated revenues", "risk factors", "cash dividends per share"]


@pytest.fixture(scope="module")
def real_chunks() -> dict[str, list[Chunk]]:
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.chunking.config import load_chunking_config
    from finrag_pipeline.core.ingest.parse import parse_filing

    out = {}
    for name in ("apple_2022_excerpt.pdf", "walmart_2021_excerpt.pdf"):
        parsed = parse_filing(DATA / name)
        out[parsed.meta.filing_id] = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows,
                                                  load_chunking_config("default"))
    assert len(out) == 2 and all(sum(c.is_leaf for c in cs) > 5 for cs in out.values())
    return out


def local_index(path: Path, chunks_by_filing: dict[str, list[Chunk]]) -> TantivyIndex:
    index = TantivyIndex(path)
    for fid in sorted(chunks_by_filing):
        index.upsert_filing(fid, chunks_by_filing[fid])
    return index


def results(index: TantivyIndex, query: str, **kwargs) -> list[tuple[str, float]]:
    return [(cid, score) for cid, score, _ in index.search(query, k=20, **kwargs)]


def test_published_snapshot_searches_like_a_local_index(store: ObjectStore, real_chunks, tmp_path):
    assert shards.open_published_bm25(store, tmp_path / "cache") is None  # nothing published yet
    for fid, chunks in real_chunks.items():
        ref = shards.write_filing_shard(store, fid, chunks)
        assert ref.n_docs == sum(c.is_leaf for c in chunks)
    published = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert published.changed and published.n_docs == sum(c.is_leaf for cs in real_chunks.values() for c in cs)

    searcher = shards.open_published_bm25(store, tmp_path / "cache")
    local = local_index(tmp_path / "local", real_chunks)
    assert searcher.filing_ids() == sorted(real_chunks) and searcher.count() == local.count()
    apple = next(f for f in real_chunks if f.startswith("AAPL"))
    n_compared = 0
    for query in QUERIES:
        expected = results(local, query)
        assert results(searcher, query) == expected, query  # same ranked ids, same scores
        filtered = results(local, query, filters=SearchFilters(filing_ids=(apple,)))
        assert results(searcher, query, filters=SearchFilters(filing_ids=(apple,))) == filtered
        n_compared += len(expected)
    assert n_compared > 50  # the queries really hit documents
    _, _, top = searcher.search("net income 99,803", k=1)[0]
    assert top["filing_id"] == apple and "99,803" in top["text"]  # the figure on Apple's income statement


def test_redelivered_and_rerun_steps_change_nothing(store: ObjectStore, real_chunks, tmp_path):
    fid, chunks = next(iter(real_chunks.items()))
    first = shards.write_filing_shard(store, fid, chunks)
    second = shards.write_filing_shard(store, fid, chunks)  # the same step delivered twice
    assert first == second and [o.key for o in store.list("bm25/shards/")] == [first.shard_key]
    published = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    again = shards.publish_bm25_snapshot(store, tmp_path / "pub")  # publisher re-run
    assert not again.changed and again.snapshot_id == published.snapshot_id
    assert len(store.list("bm25/snapshots/")) == 1
    index = shards.open_published_bm25(store, tmp_path / "cache")
    assert index.count(fid) == sum(c.is_leaf for c in chunks)  # no duplicate documents


def test_killed_writers_leave_the_published_snapshot_unchanged(store: ObjectStore, real_chunks, tmp_path):
    (apple, apple_chunks), (walmart, walmart_chunks) = sorted(real_chunks.items())
    shards.write_filing_shard(store, apple, apple_chunks)
    before = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    searcher_before = shards.open_published_bm25(store, tmp_path / "cache")

    # 1. a worker killed in the middle of a multipart upload of Walmart's shard: parts, no completion
    client, bucket = store._client, store.bucket
    upload = client.create_multipart_upload(Bucket=bucket, Key=store.config.full_key(f"bm25/shards/{walmart}/x.parquet"))
    client.upload_part(Bucket=bucket, Key=store.config.full_key(f"bm25/shards/{walmart}/x.parquet"), PartNumber=1,
                       UploadId=upload["UploadId"], Body=b"half a shard" * 1000)
    # 2. a worker killed after its shard upload but before its head: the shard is an orphan
    table = shards._shard_table(walmart, walmart_chunks)
    orphan = store.put_content_addressed(f"bm25/shards/{walmart}", shards._parquet_bytes(table), suffix=".parquet")

    after = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert not after.changed and after.snapshot_id == before.snapshot_id and after.removed_orphans == 0
    searcher = shards.open_published_bm25(store, tmp_path / "cache")
    assert searcher.filing_ids() == [apple] and searcher.count() == searcher_before.count()
    assert results(searcher, "Walmart consolidated revenues") == results(searcher_before, "Walmart consolidated revenues")
    assert store.exists(orphan)  # younger than the grace period: a live worker may be about to write its head

    swept = shards.publish_bm25_snapshot(store, tmp_path / "pub", orphan_grace=timedelta(0))
    assert swept.removed_orphans == 1 and not store.exists(orphan)
    assert [o.key for o in store.list("bm25/shards/")] == [shards.current_heads(store)[apple].shard_key]


def test_searchers_keep_their_snapshot_until_a_complete_one_is_published(store: ObjectStore, real_chunks, tmp_path):
    (apple, apple_chunks), (walmart, walmart_chunks) = sorted(real_chunks.items())
    shards.write_filing_shard(store, apple, apple_chunks)
    first = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    old = shards.open_published_bm25(store, tmp_path / "cache")
    shards.write_filing_shard(store, walmart, walmart_chunks)  # written, not yet published
    assert shards.open_published_bm25(store, tmp_path / "cache").filing_ids() == [apple]
    second = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert second.changed and second.snapshot_id != first.snapshot_id
    assert shards.open_published_bm25(store, tmp_path / "cache").filing_ids() == [apple, walmart]
    assert old.filing_ids() == [apple]  # an open searcher still reads its own snapshot

    # removing a filing leaves no orphaned index entries in the next snapshot
    shards.remove_filing_shard(store, walmart)
    third = shards.publish_bm25_snapshot(store, tmp_path / "pub", orphan_grace=timedelta(0))
    assert third.snapshot_id == first.snapshot_id  # same documents, same snapshot id
    index = shards.open_published_bm25(store, tmp_path / "cache")
    assert index.filing_ids() == [apple] and index.count(walmart) == 0
    assert results(index, "Walmart consolidated revenues") == results(old, "Walmart consolidated revenues")


def test_shard_refuses_foreign_chunks_and_bad_ids(store: ObjectStore, real_chunks):
    (apple, apple_chunks), (walmart, _) = sorted(real_chunks.items())
    with pytest.raises(ValueError, match="chunks of other filings"):
        shards.write_filing_shard(store, walmart, apple_chunks)
    with pytest.raises(ValueError, match="not a valid filing id"):
        shards.write_filing_shard(store, "../escape", apple_chunks)
    assert store.list() == []


def test_added_filings_publish_incrementally_with_the_scores_of_a_full_build(store: ObjectStore, real_chunks,
                                                                             tmp_path, monkeypatch):
    (apple, apple_chunks), (walmart, walmart_chunks) = sorted(real_chunks.items())
    shards.write_filing_shard(store, apple, apple_chunks)
    first = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert first.build == "full"  # nothing to start from
    old = shards.open_published_bm25(store, tmp_path / "cache")

    # a publisher that dies while adding Walmart: nothing is published, searchers keep the old snapshot
    shards.write_filing_shard(store, walmart, walmart_chunks)
    indexed: list[list[str]] = []
    real_upsert = TantivyIndex.upsert_filings

    def upsert_then_die(self, filings):
        filings = list(filings)
        indexed.append([fid for fid, _ in filings])
        real_upsert(self, filings[:1])
        raise OSError("publisher killed")

    monkeypatch.setattr(TantivyIndex, "upsert_filings", upsert_then_die)
    with pytest.raises(OSError, match="publisher killed"):
        shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert indexed == [[walmart]]  # only the added filing was being indexed, not Apple again
    assert store.read_pointer(shards.POINTER).payload["snapshot_id"] == first.snapshot_id
    assert shards.open_published_bm25(store, tmp_path / "cache").filing_ids() == [apple]
    monkeypatch.setattr(TantivyIndex, "upsert_filings", real_upsert)

    second = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert second.changed and second.build == "incremental"
    assert second.n_docs == sum(c.is_leaf for cs in real_chunks.values() for c in cs)
    searcher = shards.open_published_bm25(store, tmp_path / "cache")
    fresh = shards.build_index_from_shards(store, shards.current_heads(store), tmp_path / "fresh", tmp_path / "sc")
    full = TantivyIndex(tmp_path / "fresh")
    assert fresh == searcher.count() == second.n_docs and searcher.filing_ids() == [apple, walmart]
    n_compared = 0
    for query in QUERIES:  # same ranked ids and the same BM25 scores as a full rebuild of the same shards
        expected = results(full, query)
        assert results(searcher, query) == expected, query
        n_compared += len(expected)
    assert n_compared > 50
    assert results(old, "Walmart consolidated revenues") != results(searcher, "Walmart consolidated revenues")


def test_a_replaced_filing_is_rebuilt_in_full_and_an_earlier_manifest_is_reused(store: ObjectStore, real_chunks,
                                                                                tmp_path):
    (apple, apple_chunks), (walmart, walmart_chunks) = sorted(real_chunks.items())
    shards.write_filing_shard(store, apple, apple_chunks)
    shards.write_filing_shard(store, walmart, walmart_chunks)
    both = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    # Walmart re-ingested with fewer chunks: an incremental build would keep its deleted documents in the
    # BM25 statistics, so the publisher rebuilds everything
    fewer = [c for c in walmart_chunks if c.is_leaf][: sum(c.is_leaf for c in walmart_chunks) // 2]
    shards.write_filing_shard(store, walmart, fewer)
    replaced = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert replaced.build == "full" and replaced.n_docs == sum(c.is_leaf for c in apple_chunks) + len(fewer)
    searcher = shards.open_published_bm25(store, tmp_path / "cache")
    local = local_index(tmp_path / "local", {apple: apple_chunks, walmart: fewer})
    for query in QUERIES:
        assert results(searcher, query) == results(local, query), query
    # back to the first manifest: its snapshot object is still in the store and is published as it is
    shards.write_filing_shard(store, walmart, walmart_chunks)
    again = shards.publish_bm25_snapshot(store, tmp_path / "pub")
    assert again.build == "reused" and again.snapshot_id == both.snapshot_id and again.n_docs == both.n_docs
    assert shards.open_published_bm25(store, tmp_path / "cache").count(walmart) == sum(c.is_leaf for c in walmart_chunks)
