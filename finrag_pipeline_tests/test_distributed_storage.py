"""Distributed mode's storage facade against a real S3-compatible server: filing bytes, LanceDB on s3://,
the embedding cache on the store, and the local default untouched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from finrag_pipeline.core.indexing.lance_index import LanceIndex
from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.storage.distributed import DistributedStorage, FilingBytesMismatch
from finrag_pipeline.core.storage.embedding_cache import vector_key
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline_tests import _object_store
from finrag_pipeline_tests._retrieval_fakes import HashEmbedder

moto_endpoint = _object_store.moto_endpoint
store_config = _object_store.store_config
store = _object_store.store

DATA = Path(__file__).parent / "data"


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that counts the texts it really encodes."""

    def __init__(self):
        super().__init__()
        self.encoded = 0

    def encode(self, texts, batch_size=32, show_progress=False):
        self.encoded += len(texts)
        return super().encode(texts, batch_size, show_progress)


def chunk(fid: str, n: int, text: str) -> Chunk:
    return Chunk(chunk_id=f"{fid}-{n}", filing_id=fid, ticker=fid.split("-")[0], company="X", fiscal_year=2022,
                 form_type="10-K", section="Item 7", page_start=1, page_end=1, chunk_type="prose", text=text,
                 position=n)


TEXTS = ["Total net sales were $394,328 million in fiscal 2022.", "Net income was $99,803 million.",
         "Global and regional economic conditions could materially adversely affect the Company.",
         "Walmart's consolidated revenues were $559.2 billion."]


def storage_for(store: ObjectStore, home: Path) -> DistributedStorage:
    return DistributedStorage(store, FinragPaths.from_env(home).ensure())


def test_filing_bytes_reach_another_worker_intact(store: ObjectStore, tmp_path):
    registrar = storage_for(store, tmp_path / "registrar")
    pdf = DATA / "apple_2022_excerpt.pdf"
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
    stored = registrar.paths.filings_store / f"AAPL-2022-10K-{sha[:12]}.pdf"
    shutil.copyfile(pdf, stored)
    stored.with_name(stored.name + ".yaml").write_text("ticker: AAPL\n")
    key = registrar.upload_filing(stored)
    assert key == f"filings/{stored.name}" and registrar.upload_filing(stored) == key  # re-registration
    assert registrar.local_filing(stored, sha) == stored  # the registering machine keeps its own copy

    # core.filings.source_path names the registering machine's path, which a worker does not have
    remote_path = f"/registrar-host/finrag/filings/{stored.name}"
    worker = storage_for(store, tmp_path / "worker")
    local = worker.local_filing(remote_path, sha)
    assert local.parent == worker.paths.filings_store and local.read_bytes() == pdf.read_bytes()
    assert local.with_name(local.name + ".yaml").read_text() == "ticker: AAPL\n"
    assert not [p for p in local.parent.iterdir() if ".fetch" in p.name or ".part" in p.name]

    # bytes that do not match the registered hash are refused and not kept
    other = storage_for(store, tmp_path / "other")
    with pytest.raises(FilingBytesMismatch, match="registered as"):
        other.local_filing(remote_path, "0" * 64)
    assert not (other.paths.filings_store / stored.name).exists()


def test_lance_on_the_object_store_matches_a_local_table(store: ObjectStore, tmp_path):
    chunks = [chunk("AAPL-2022-10K", i, t) for i, t in enumerate(TEXTS[:3])] + [chunk("WMT-2021-10K", 0, TEXTS[3])]
    worker = storage_for(store, tmp_path / "w1")
    embedder = CountingEmbedder()
    remote = worker.open_lance(embedder)
    assert remote.upsert_filing("AAPL-2022-10K", chunks[:3]) == 3
    assert remote.upsert_filing("WMT-2021-10K", chunks[3:]) == 1
    assert embedder.encoded == 4
    assert any(o.key.startswith("lancedb/chunks.lance/") for o in store.list("lancedb/"))  # the table is on s3

    local = LanceIndex(tmp_path / "local-lance", HashEmbedder())
    for fid in ("AAPL-2022-10K", "WMT-2021-10K"):
        local.upsert_filing(fid, [c for c in chunks if c.filing_id == fid])

    # another worker (another home, empty local cache) sees the same table and embeds nothing again
    other_embedder = CountingEmbedder()
    other = storage_for(store, tmp_path / "w2").open_lance(other_embedder)
    assert other.count() == 4 and other.filing_ids() == ["AAPL-2022-10K", "WMT-2021-10K"]
    assert other.upsert_filing("AAPL-2022-10K", chunks[:3]) == 3
    assert other_embedder.encoded == 0 and other.count() == 4  # vectors from the store's cache, no duplicates
    for query in ("net income", "economic conditions", "consolidated revenues"):
        got = [(h[0], round(h[1], 6)) for h in _hits(other, query)]
        assert got == [(h[0], round(h[1], 6)) for h in _hits(local, query)] and got


def _hits(index: LanceIndex, query: str):
    return [(cid, score) for cid, score, *_ in index.search(query, k=4)]


def test_embedding_cache_on_the_store_is_shared_between_workers(store: ObjectStore, tmp_path):
    a = storage_for(store, tmp_path / "a").embedding_cache()
    b = storage_for(store, tmp_path / "b").embedding_cache()
    vectors = {"ab" * 32: np.arange(4, dtype=np.float32), "cd" * 32: np.ones(4, dtype=np.float32)}
    a.put_many("sentence-transformers/all-MiniLM-L6-v2", vectors)
    assert store.exists(vector_key("sentence-transformers/all-MiniLM-L6-v2", "ab" * 32))
    got = b.get_many("sentence-transformers/all-MiniLM-L6-v2", ["ab" * 32, "cd" * 32, "ef" * 32])
    assert sorted(got) == ["ab" * 32, "cd" * 32]
    np.testing.assert_array_equal(got["ab" * 32], vectors["ab" * 32])
    assert b.get_many("other-embedder", ["ab" * 32]) == {}  # keyed by embedder too


def test_local_mode_has_no_distributed_storage(tmp_path, monkeypatch):
    from finrag_pipeline.core.storage import seam
    from finrag_pipeline.core.storage.mode import object_store_config

    monkeypatch.setenv("FINRAG_DEPLOYMENT", "local")
    assert isinstance(seam.storage_for(FinragPaths.from_env(tmp_path)), seam.LocalStorage)
    assert object_store_config() is None


def test_concurrent_lance_writers_on_the_store_lose_nothing(store: ObjectStore, tmp_path):
    """Four workers (own homes, own connections) upsert four filings at once: Lance's conditional commits
    on the object store keep every filing (a lost commit would drop a filing's rows silently)."""
    from concurrent.futures import ThreadPoolExecutor

    fids = [f"CO{i}-2022-10K" for i in range(4)]
    storage_for(store, tmp_path / "init").open_lance(HashEmbedder())  # create the table once

    def work(i: int) -> int:
        index = storage_for(store, tmp_path / f"w{i}").open_lance(HashEmbedder())
        return index.upsert_filing(fids[i], [chunk(fids[i], n, f"{t} ({fids[i]})") for n, t in enumerate(TEXTS)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(work, range(4))) == [4, 4, 4, 4]
    reader = storage_for(store, tmp_path / "reader").open_lance(HashEmbedder())
    assert reader.filing_ids() == fids and all(reader.count(f) == 4 for f in fids)


def test_registration_with_the_store_down_fails_loudly_and_quarantines_nothing(tmp_path, monkeypatch):
    """Object store unreachable, or the deployment misconfigured: registration raises a clear error and
    records no failure for the file (it is not the file's fault; the next attempt registers it)."""
    from finrag_pipeline.core.catalog import register_file
    from finrag_pipeline.core.storage.errors import ObjectStoreUnavailable
    from finrag_pipeline.core.storage.mode import DeploymentConfigError
    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline_tests._object_store import free_port

    paths = FinragPaths.from_env(tmp_path / "home").ensure()
    wh = Warehouse(paths.warehouse)
    deployment = tmp_path / "deployment.yaml"
    monkeypatch.setenv("FINRAG_DEPLOYMENT_YAML", str(deployment))
    monkeypatch.setenv("FINRAG_DEPLOYMENT", "distributed")
    monkeypatch.setenv("FINRAG_POSTGRES_URL", "postgresql://u:p@127.0.0.1:5432/dagster")
    monkeypatch.setenv("FINRAG_BROKER_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("FINRAG_TEST_S3_KEY", "k")
    monkeypatch.setenv("FINRAG_TEST_S3_SECRET", "s")
    store_yaml = ("mode: local\ndistributed:\n  object_store:\n    endpoint_url: http://127.0.0.1:{port}\n"
                  "    bucket: finrag\n    access_key_env: FINRAG_TEST_S3_KEY\n    secret_key_env: FINRAG_TEST_S3_SECRET\n")
    deployment.write_text(store_yaml.format(port=free_port()))  # plain http without allow_http
    with pytest.raises(DeploymentConfigError, match="allow_http"):
        register_file(DATA / "apple_2022_excerpt.pdf", paths, wh)
    deployment.write_text(store_yaml.format(port=free_port()) + "    allow_http: true\n")  # nothing listens
    with pytest.raises(ObjectStoreUnavailable, match="unreachable"):
        register_file(DATA / "apple_2022_excerpt.pdf", paths, wh)
    assert wh.query_df("SELECT count(*) AS n FROM core.ingest_failures")["n"][0] == 0
    assert wh.query_df("SELECT count(*) AS n FROM core.filings")["n"][0] == 0
    monkeypatch.setenv("FINRAG_DEPLOYMENT", "local")  # the same file registers once storage is reachable
    assert register_file(DATA / "apple_2022_excerpt.pdf", paths, wh).status == "registered"
