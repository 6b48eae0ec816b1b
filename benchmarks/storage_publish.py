"""Benchmark: distributed-mode storage costs per filing (object store = a local moto server).

    PYTHONPATH=. .venv/bin/python benchmarks/storage_publish.py [--filings 50]

The documents are the default chunks and pages of two real 10-K excerpts (Apple FY2022, Walmart FY2021),
copied under --filings distinct filing ids. Measures, with core/storage:
  * worker side: one filing's BM25 shard (write_filing_shard) and its ingest rows (PartitionResults);
  * publisher side: the BM25 snapshot build + upload + pointer swap (a full rebuild from every shard),
    the results publisher loading every object into DuckDB, and a no-change re-run of both;
  * searcher side: opening a new snapshot (download + extract) and one search.
moto runs in this process, so network costs of a real S3 are not included.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

from moto.server import ThreadedMotoServer

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.chunking.config import load_chunking_config
from finrag_pipeline.core.ingest.parse import parse_filing
from finrag_pipeline.core.object_store_config import ObjectStoreConfig
from finrag_pipeline.core.storage import bm25_shards
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline.core.storage.results import PartitionResults, publish_results
from finrag_pipeline.core.warehouse import Warehouse, rows_of

DATA = Path(__file__).resolve().parents[1] / "finrag_pipeline_tests" / "data"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--filings", type=int, default=50)
    args = ap.parse_args()
    sources = []
    for name in ("apple_2022_excerpt.pdf", "walmart_2021_excerpt.pdf"):
        parsed = parse_filing(DATA / name)
        chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config("default"))
        sources.append((parsed, chunks))

    with socket.socket() as sock:  # a free port
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(BENCH_S3_KEY="k", BENCH_S3_SECRET="s")
    store = ObjectStore(ObjectStoreConfig(endpoint_url=f"http://127.0.0.1:{port}", bucket="bench", prefix="b",
                                          access_key_env="BENCH_S3_KEY", secret_key_env="BENCH_S3_SECRET",
                                          allow_http=True))
    store.ensure_bucket()
    shard_s, rows_s, n_docs = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        sink = PartitionResults(store)
        for i in range(args.filings):
            parsed, chunks = sources[i % 2]
            fid = f"CO{i:04d}-2022-10K"
            mine = [dataclasses.replace(c, filing_id=fid, chunk_id=f"{fid}-{c.chunk_id}") for c in chunks]
            t0 = time.perf_counter()
            n_docs += bm25_shards.write_filing_shard(store, fid, mine).n_docs
            shard_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            sink.replace_rows("core.pages", [dict(r, filing_id=fid) for r in rows_of(parsed.pages)], {"filing_id": fid})
            sink.replace_rows("core.chunks", rows_of(mine), {"filing_id": fid})
            rows_s.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        published = bm25_shards.publish_bm25_snapshot(store, Path(tmp) / "pub")
        publish_bm25_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = bm25_shards.publish_bm25_snapshot(store, Path(tmp) / "pub")
        republish_s = time.perf_counter() - t0
        # one filing arrives after the publish: the next publish starts from the snapshot (incremental)
        parsed, chunks = sources[0]
        fid = "CO9999-2022-10K"
        bm25_shards.write_filing_shard(store, fid, [dataclasses.replace(c, filing_id=fid, chunk_id=f"{fid}-{c.chunk_id}")
                                                    for c in chunks])
        t0 = time.perf_counter()
        added = bm25_shards.publish_bm25_snapshot(store, Path(tmp) / "pub")
        publish_added_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = bm25_shards.open_published_bm25(store, Path(tmp) / "cache")
        open_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = index.search("total net sales fiscal 2022", k=10)
        search_ms = (time.perf_counter() - t0) * 1000

        wh = Warehouse(Path(tmp) / "wh.duckdb")
        t0 = time.perf_counter()
        report = publish_results(store, wh)
        publish_rows_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        publish_results(store, wh)
        republish_rows_s = time.perf_counter() - t0
    server.stop()

    print(f"filings: {args.filings}, BM25 documents: {n_docs} ({n_docs / args.filings:.0f} per filing), "
          f"result objects: {len(report.loaded)} ({report.n_rows} rows)")
    print(f"worker: BM25 shard {statistics.median(shard_s) * 1000:.0f} ms/filing (median), "
          f"ingest rows (pages + chunks) {statistics.median(rows_s) * 1000:.0f} ms/filing")
    print(f"BM25 publisher: full rebuild {publish_bm25_s:.2f} s ({publish_bm25_s / args.filings * 1000:.0f} ms/filing), "
          f"no-change re-run {republish_s:.2f} s (changed={again.changed}); snapshot {published.snapshot_id[:12]}; "
          f"one filing added: {publish_added_s:.2f} s ({added.build})")
    print(f"results publisher: {publish_rows_s:.2f} s ({publish_rows_s / args.filings * 1000:.0f} ms/filing), "
          f"no-change re-run {republish_rows_s:.2f} s")
    print(f"searcher: open a new snapshot {open_s:.2f} s, one search {search_ms:.1f} ms ({len(hits)} hits)")


if __name__ == "__main__":
    main()
