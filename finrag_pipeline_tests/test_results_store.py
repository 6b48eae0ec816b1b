"""Warehouse rows written as per-partition Parquet on a real S3-compatible server, loaded by one publisher.

Rows are the real parse of Apple's FY2022 10-K excerpt (4 pages) and its default chunks.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from finrag_pipeline.core.storage import results
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline.core.warehouse import Warehouse, rows_of
from finrag_pipeline_tests import _object_store

moto_endpoint = _object_store.moto_endpoint
store_config = _object_store.store_config
store = _object_store.store

EXCERPT = Path(__file__).parent / "data" / "apple_2022_excerpt.pdf"
TABLES = {"core.pages": "page_number", "core.table_rows": "table_id, row_index", "core.chunks": "chunk_id"}


@pytest.fixture(scope="module")
def apple_rows() -> dict[str, list[dict]]:
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.chunking.config import load_chunking_config
    from finrag_pipeline.core.ingest.parse import parse_filing

    parsed = parse_filing(EXCERPT)
    chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config("default"))
    out = {"core.pages": rows_of(parsed.pages), "core.table_rows": rows_of(parsed.table_rows),
           "core.chunks": rows_of(chunks)}
    assert len(out["core.pages"]) == 4 and len(out["core.table_rows"]) > 10 and len(out["core.chunks"]) > 10
    return out


FID = "AAPL-2022-10K"


def table_df(wh: Warehouse, table: str) -> pd.DataFrame:
    return wh.query_df(f"SELECT * FROM {table} ORDER BY filing_id, {TABLES[table]}")


def write_all(writer, rows: dict[str, list[dict]]) -> None:
    for table, table_rows in rows.items():
        writer.replace_rows(table, table_rows, where={"filing_id": FID})


def test_published_warehouse_equals_a_local_write(store: ObjectStore, apple_rows, tmp_path):
    local = Warehouse(tmp_path / "local.duckdb")
    write_all(local, apple_rows)
    sink = results.PartitionResults(store)
    write_all(sink, apple_rows)
    assert len(store.list("results/")) == 3
    assert sink.read_rows("core.pages", {"filing_id": FID})["page_number"].tolist() == [1, 2, 3, 4]

    published = Warehouse(tmp_path / "published.duckdb")
    report = results.publish_results(store, published)
    assert sorted(r.table for r in report.loaded) == sorted(TABLES) and report.skipped == 0
    for table in TABLES:
        pd.testing.assert_frame_equal(table_df(published, table), table_df(local, table))
    income = published.query_df("SELECT text FROM core.pages WHERE filing_id = ? AND page_number = 4", [FID])
    assert "394,328" in income["text"][0]  # Total net sales on the income statement page


def test_redelivered_steps_and_publisher_reruns_never_duplicate(store: ObjectStore, apple_rows, tmp_path):
    sink = results.PartitionResults(store)
    write_all(sink, apple_rows)
    write_all(sink, apple_rows)  # the whole step delivered twice
    assert len(store.list("results/")) == 3  # one object per (table, partition)
    wh = Warehouse(tmp_path / "wh.duckdb")
    first = results.publish_results(store, wh)
    again = results.publish_results(store, wh)
    assert len(first.loaded) == 3 and again.loaded == [] and again.skipped == 3
    n_chunks = len(apple_rows["core.chunks"])
    assert wh.query_df("SELECT count(*) AS n FROM core.chunks")["n"][0] == n_chunks
    # a re-run with different output replaces the partition's rows, it does not add to them
    sink.replace_rows("core.chunks", apple_rows["core.chunks"][:5], where={"filing_id": FID})
    third = results.publish_results(store, wh)
    assert [r.table for r in third.loaded] == ["core.chunks"] and third.skipped == 2
    assert wh.query_df("SELECT count(*) AS n FROM core.chunks")["n"][0] == 5
    assert wh.query_df("SELECT count(*) AS n FROM core.published_results")["n"][0] == 3


def test_killed_upload_and_killed_publisher_leave_no_partial_rows(store: ObjectStore, apple_rows, tmp_path):
    sink = results.PartitionResults(store)
    sink.replace_rows("core.pages", apple_rows["core.pages"], where={"filing_id": FID})
    wh = Warehouse(tmp_path / "wh.duckdb")
    results.publish_results(store, wh)
    pages_before = table_df(wh, "core.pages")

    # a worker killed mid-upload of the table rows: a multipart upload that never completes is invisible
    key = results.result_key("core.table_rows", {"filing_id": FID})
    client, bucket, full = store._client, store.bucket, store.config.full_key(key)
    upload = client.create_multipart_upload(Bucket=bucket, Key=full)
    client.upload_part(Bucket=bucket, Key=full, PartNumber=1, UploadId=upload["UploadId"], Body=b"x" * 1000)
    report = results.publish_results(store, wh)
    assert report.loaded == [] and table_df(wh, "core.table_rows").empty
    pd.testing.assert_frame_equal(table_df(wh, "core.pages"), pages_before)

    # an object the publisher cannot read (a truncated file written by something else at a result key):
    # it is reported and left unloaded, and every other object is still loaded
    store.put_bytes(key, b"not parquet")
    sink.replace_rows("core.chunks", apple_rows["core.chunks"], where={"filing_id": FID})
    with pytest.raises(results.ResultsPublishError, match="1 result object.*core.table_rows") as failed:
        results.publish_results(store, wh)
    assert [r.table for r in failed.value.report.loaded] == ["core.chunks"]
    assert table_df(wh, "core.table_rows").empty
    sink.replace_rows("core.table_rows", apple_rows["core.table_rows"], where={"filing_id": FID})  # the retry
    results.publish_results(store, wh)
    assert len(table_df(wh, "core.table_rows")) == len(apple_rows["core.table_rows"])
    assert len(table_df(wh, "core.chunks")) == len(apple_rows["core.chunks"])


def test_rows_outside_their_partition_are_refused(store: ObjectStore, apple_rows):
    sink = results.PartitionResults(store)
    with pytest.raises(ValueError, match="outside where filing_id"):
        sink.replace_rows("core.pages", apple_rows["core.pages"], where={"filing_id": "MSFT-2022-10K"})
    with pytest.raises(ValueError, match="unknown warehouse table"):
        sink.replace_rows("core.nope", [], where={"filing_id": FID})
    assert store.list() == []


def test_result_keys_depend_on_table_and_partition_only():
    a = results.result_key("eval.runs", {"run_id": ["r2", "r1"]})
    assert a == results.result_key("eval.runs", {"run_id": ("r1", "r2")})  # order of a list does not matter
    assert a != results.result_key("eval.runs", {"run_id": ["r1"]})
    assert a != results.result_key("eval.retrieval_results", {"run_id": ["r1", "r2"]})
    assert a.startswith("results/eval.runs/") and a.endswith(".parquet")


KILLED_WRITER = """
import os, signal, sys
import boto3
from boto3.s3.transfer import TransferConfig
endpoint, bucket, key, path = sys.argv[1:5]
client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="k",
                      aws_secret_access_key="s")
sent = [0]
def progress(n):
    sent[0] += n
    if sent[0] >= 6 * 1024 * 1024:  # the worker dies with its upload half done
        os.kill(os.getpid(), signal.SIGKILL)
client.upload_file(path, bucket, key, Callback=progress, Config=TransferConfig(
    multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024, max_concurrency=1, use_threads=False))
"""


def test_worker_killed_mid_upload_leaves_the_warehouse_unchanged(store: ObjectStore, tmp_path):
    """A real process, SIGKILLed after 6 of ~12 MB of its result object: nothing visible, nothing loaded;
    the retried step then publishes exactly one copy of its rows."""
    import secrets
    import subprocess
    import sys

    rows = [{"filing_id": FID, "page_number": i, "text": secrets.token_hex(6000), "char_count": 12000}
            for i in range(1, 2001)]  # random hex: ~12 MB after zstd
    key, data, n = results.encode_result("core.pages", rows, {"filing_id": FID})
    assert len(data) > 10 * 1024 * 1024 and n == 2000
    wh = Warehouse(tmp_path / "wh.duckdb")
    results.PartitionResults(store).replace_rows("core.table_rows", [], where={"filing_id": FID})
    results.publish_results(store, wh)  # an earlier publish: the ledger holds one object

    blob = tmp_path / "result.parquet"
    blob.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, store.config.endpoint_url, store.bucket,
                           store.config.full_key(key), str(blob)], env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == -9  # killed, not finished
    assert not store.exists(key)
    report = results.publish_results(store, wh)
    assert report.loaded == [] and report.skipped == 1 and table_df(wh, "core.pages").empty

    results.PartitionResults(store).replace_rows("core.pages", rows, where={"filing_id": FID})  # Dagster's retry
    results.PartitionResults(store).replace_rows("core.pages", rows, where={"filing_id": FID})  # and a redelivery
    assert [r.table for r in results.publish_results(store, wh).loaded] == ["core.pages"]
    loaded = table_df(wh, "core.pages")
    assert len(loaded) == 2000 and loaded["page_number"].is_unique


def test_partition_warehouse_reads_its_own_pending_rows(store: ObjectStore, apple_rows, tmp_path):
    """A filing's step writes its ingest rows to the store and its next steps read them back at once;
    other filings' published rows stay visible; other tables still go to the DuckDB file."""
    from finrag_pipeline.core.records import load_chunks, load_pages
    from finrag_pipeline.core.storage.partition_warehouse import PartitionWarehouse

    path = tmp_path / "wh.duckdb"
    other_pages = [dict(r, filing_id="MSFT-2022-10K") for r in apple_rows["core.pages"][:2]]
    Warehouse(path).replace_rows("core.pages", other_pages, where={"filing_id": "MSFT-2022-10K"})
    Warehouse(path).replace_rows("core.pages", apple_rows["core.pages"][:1], where={"filing_id": FID})  # stale
    sink = results.PartitionResults(store)
    wh = PartitionWarehouse(path, sink, FID)
    for table, rows in apple_rows.items():
        wh.replace_rows(table, rows, where={"filing_id": FID})
    wh.replace_rows("core.ingest_log", [{"filing_id": FID, "status": "parsed"}], where={"filing_id": FID})

    plain = Warehouse(path)
    assert len(load_pages(plain, FID)) == 1 and load_chunks(plain, FID) == []  # nothing published yet
    assert [p.page_number for p in load_pages(wh, FID)] == [1, 2, 3, 4]
    assert "394,328" in load_pages(wh, FID)[3].text
    assert len(load_chunks(wh, FID, leaves_only=True)) == sum(r["is_leaf"] for r in apple_rows["core.chunks"])
    counts = wh.query_df("SELECT filing_id, count(*) AS n FROM core.pages GROUP BY 1 ORDER BY 1")
    assert counts.values.tolist() == [[FID, 4], ["MSFT-2022-10K", 2]]
    assert plain.query_df("SELECT count(*) AS n FROM core.ingest_log")["n"][0] == 1  # straight to DuckDB
    assert sorted(o.key.split("/")[1] for o in store.list("results/")) == sorted(TABLES)

    results.publish_results(store, plain)
    pd.testing.assert_frame_equal(table_df(plain, "core.pages"), table_df(wh, "core.pages"))
    assert len(load_pages(plain, FID)) == 4


def test_partition_warehouse_with_an_empty_partition(store: ObjectStore, apple_rows, tmp_path):
    """A filing without XBRL writes zero fact rows: its stale facts disappear, before and after publishing."""
    from finrag_pipeline.core.records import load_facts
    from finrag_pipeline.core.storage.partition_warehouse import PartitionWarehouse

    path = tmp_path / "wh.duckdb"
    Warehouse(path).replace_rows("core.xbrl_facts", [{"filing_id": FID, "fact_id": "f1", "concept": "us-gaap:Revenues",
                                                      "value": 1.0}], where={"filing_id": FID})
    wh = PartitionWarehouse(path, results.PartitionResults(store), FID)
    wh.replace_rows("core.xbrl_facts", [], where={"filing_id": FID})
    assert load_facts(wh, FID) == [] and len(load_facts(Warehouse(path), FID)) == 1
    results.publish_results(store, Warehouse(path))
    assert load_facts(Warehouse(path), FID) == []
