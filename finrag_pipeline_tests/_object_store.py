"""A real S3-compatible server for tests: moto's ThreadedMotoServer on a free local port."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from finrag_pipeline.core.object_store_config import ObjectStoreConfig
from finrag_pipeline.core.storage.object_store import ObjectStore

ACCESS_ENV = "FINRAG_TEST_S3_KEY"
SECRET_ENV = "FINRAG_TEST_S3_SECRET"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


_bucket_counter = iter(range(1, 1_000_000))


@pytest.fixture
def store_config(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> ObjectStoreConfig:
    """A fresh bucket per test on the shared server, credentials in env vars."""
    monkeypatch.setenv(ACCESS_ENV, "testing-key")
    monkeypatch.setenv(SECRET_ENV, "testing-secret")
    return ObjectStoreConfig(endpoint_url=moto_endpoint, bucket=f"finrag-test-{next(_bucket_counter)}",
                             prefix="run", access_key_env=ACCESS_ENV, secret_key_env=SECRET_ENV,
                             allow_http=True)


@pytest.fixture
def store(store_config: ObjectStoreConfig) -> ObjectStore:
    s = ObjectStore(store_config)
    s.ensure_bucket()
    return s
