"""ObjectStore against a real S3-compatible server (moto server mode): objects, pointers, errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from finrag_pipeline.core.object_store_config import ObjectStoreConfig, ObjectStoreCredentialsMissing
from finrag_pipeline.core.storage import mode
from finrag_pipeline.core.storage.object_store import (
    ObjectNotFound,
    ObjectStore,
    ObjectStoreAuthError,
    ObjectStoreUnavailable,
    PointerConflict,
    sha256_bytes,
)
from finrag_pipeline_tests import _object_store
from finrag_pipeline_tests._object_store import ACCESS_ENV, SECRET_ENV, free_port

# the shared moto server and per-test bucket (fixtures)
moto_endpoint = _object_store.moto_endpoint
store_config = _object_store.store_config
store = _object_store.store


def test_put_get_list_delete_roundtrip(store: ObjectStore, tmp_path):
    store.put_bytes("a/one.bin", b"first")
    store.put_bytes("a/two.bin", b"second!")
    store.put_bytes("b/three.bin", b"3")
    assert store.get_bytes("a/one.bin") == b"first"
    listed = store.list("a/")
    assert [(o.key, o.size) for o in listed] == [("a/one.bin", 5), ("a/two.bin", 7)]
    assert [o.key for o in store.list()] == ["a/one.bin", "a/two.bin", "b/three.bin"]
    # keys really live under the configured prefix in the bucket
    assert store.config.full_key("a/one.bin") == "run/a/one.bin"

    local = store.get_file("a/two.bin", tmp_path / "x" / "two.bin")
    assert local.read_bytes() == b"second!"
    assert not list((tmp_path / "x").glob(".*part*"))  # no temp file left behind

    store.put_bytes("a/one.bin", b"replaced")
    assert store.get_bytes("a/one.bin") == b"replaced"
    store.delete("a/one.bin")
    assert not store.exists("a/one.bin") and store.exists("a/two.bin")
    store.delete("a/one.bin")  # deleting a missing key is not an error
    with pytest.raises(ObjectNotFound, match="a/one.bin"):
        store.get_bytes("a/one.bin")
    assert store.delete_many(["a/two.bin", "b/three.bin"]) == 2
    assert store.list() == []


def test_content_addressed_put_is_idempotent(store: ObjectStore, tmp_path):
    data = b"filing bytes" * 100
    key = store.put_content_addressed("filings", data, suffix=".pdf")
    assert key == f"filings/{sha256_bytes(data)}.pdf"
    etag = store.head(key).etag
    assert store.put_content_addressed("filings", data, suffix=".pdf") == key  # a retried step
    assert store.head(key).etag == etag and len(store.list("filings/")) == 1
    cached = store.fetch_cached(key, tmp_path / "cache")
    assert cached.read_bytes() == data and cached == tmp_path / "cache" / key


def test_invalid_keys_are_refused(store: ObjectStore):
    for bad in ("", "/abs", "a/../b"):
        with pytest.raises(ValueError, match="invalid object key"):
            store.put_bytes(bad, b"x")


def test_pointer_publish_is_conditional(store: ObjectStore):
    assert store.read_pointer("bm25/CURRENT.json") is None
    etag1 = store.publish_pointer("bm25/CURRENT.json", {"snapshot": "s1"}, expected_etag=None)
    first = store.read_pointer("bm25/CURRENT.json")
    assert first.payload == {"snapshot": "s1"} and first.etag == etag1
    # a second "first publish" loses: the pointer exists already
    with pytest.raises(PointerConflict):
        store.publish_pointer("bm25/CURRENT.json", {"snapshot": "other"}, expected_etag=None)
    store.publish_pointer("bm25/CURRENT.json", {"snapshot": "s2"}, expected_etag=first.etag)
    # a publisher holding the stale ETag cannot overwrite s2
    with pytest.raises(PointerConflict):
        store.publish_pointer("bm25/CURRENT.json", {"snapshot": "stale"}, expected_etag=first.etag)
    assert store.read_pointer("bm25/CURRENT.json").payload == {"snapshot": "s2"}


def test_unreachable_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(ACCESS_ENV, "k")
    monkeypatch.setenv(SECRET_ENV, "s")
    port = free_port()  # nothing listens there
    cfg = ObjectStoreConfig(endpoint_url=f"http://127.0.0.1:{port}", bucket="nowhere", access_key_env=ACCESS_ENV,
                            secret_key_env=SECRET_ENV, allow_http=True)
    s = ObjectStore(cfg, connect_timeout=0.5, max_attempts=1)
    with pytest.raises(ObjectStoreUnavailable, match=rf"unreachable .*127.0.0.1:{port} bucket nowhere"):
        s.check()
    with pytest.raises(ObjectStoreUnavailable):
        s.get_bytes("x")


def test_missing_bucket_and_missing_credentials(store_config: ObjectStoreConfig, monkeypatch):
    missing = store_config.model_copy(update={"bucket": "no-such-bucket-here"})
    with pytest.raises(ObjectStoreUnavailable, match="bucket no-such-bucket-here does not exist"):
        ObjectStore(missing).get_bytes("x")
    monkeypatch.delenv(SECRET_ENV)
    with pytest.raises(ObjectStoreCredentialsMissing, match=SECRET_ENV):
        ObjectStore(store_config)


def test_wrong_credentials_are_a_clear_error(tmp_path, monkeypatch):
    """A moto server with authentication on (INITIAL_NO_AUTH_ACTION_COUNT=0) refuses unknown keys."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("moto server did not start")
                time.sleep(0.2)
        monkeypatch.setenv(ACCESS_ENV, "AKIAWRONGWRONGWRONG1")
        monkeypatch.setenv(SECRET_ENV, "wrong-secret")
        cfg = ObjectStoreConfig(endpoint_url=f"http://127.0.0.1:{port}", bucket="secured", access_key_env=ACCESS_ENV,
                                secret_key_env=SECRET_ENV, allow_http=True)
        with pytest.raises(ObjectStoreAuthError, match=rf"refused the credentials from \${ACCESS_ENV}"):
            ObjectStore(cfg, max_attempts=1).put_bytes("k", b"v")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_config_validation_and_lance_options(monkeypatch):
    with pytest.raises(ValueError, match="allow_http"):
        ObjectStoreConfig(endpoint_url="http://minio:9000", bucket="bkt")
    with pytest.raises(ValueError, match="'..'"):
        ObjectStoreConfig(bucket="bkt", prefix="a/../b")
    cfg = ObjectStoreConfig(endpoint_url="http://minio:9000/", bucket="bkt", prefix="/team/finrag/",
                            allow_http=True, access_key_env="K", secret_key_env="S", region="eu-west-1")
    assert cfg.uri("lancedb") == "s3://bkt/team/finrag/lancedb"
    monkeypatch.setenv("K", "ak")
    monkeypatch.setenv("S", "sk")
    assert cfg.lance_storage_options() == {
        "aws_access_key_id": "ak", "aws_secret_access_key": "sk", "aws_region": "eu-west-1",
        "aws_endpoint": "http://minio:9000", "allow_http": "true"}


def test_mode_defaults_to_local_and_reads_deployment_yaml(tmp_path, monkeypatch):
    monkeypatch.delenv("FINRAG_DEPLOYMENT", raising=False)
    # the service URLs distributed mode also requires (core/deployment.py checks them when present)
    monkeypatch.setenv("FINRAG_POSTGRES_URL", "postgresql://u:p@127.0.0.1:5432/dagster")
    monkeypatch.setenv("FINRAG_BROKER_URL", "redis://127.0.0.1:6379/0")
    (tmp_path / "deployment.yaml").write_text(
        "mode: local\ndistributed:\n  object_store:\n    endpoint_url: http://127.0.0.1:9000\n"
        "    bucket: finrag\n    allow_http: true\n")
    assert mode.object_store_config(tmp_path) is None
    monkeypatch.setenv("FINRAG_DEPLOYMENT", "distributed")  # the env var overrides the YAML's mode
    cfg = mode.object_store_config(tmp_path)
    assert cfg is not None and cfg.bucket == "finrag" and cfg.endpoint_url == "http://127.0.0.1:9000"
    (tmp_path / "deployment.yaml").write_text("mode: distributed\ndistributed:\n  object_store: null\n")
    assert mode.object_store_config(tmp_path) is None  # distributed on a shared filesystem
    monkeypatch.setenv("FINRAG_DEPLOYMENT", "cluster")
    with pytest.raises((ValueError, RuntimeError), match="'cluster'"):
        mode.object_store_config(tmp_path)
