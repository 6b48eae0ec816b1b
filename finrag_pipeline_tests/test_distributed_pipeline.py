"""The Dagster assets in distributed mode (object store on a real moto server) against local mode, same input.

Apple's FY2022 10-K excerpt is registered, ingested and indexed (ingest_filing + refresh_corpus_state jobs)
once per mode; the parse step of the distributed run reads the filing's bytes from the object store (the
registering machine's copy is removed first, as on another worker). Then BM25 searches, LanceDB rows and
retrieval evaluation rows (written as Parquet, loaded by the publisher) must equal the local run's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

# imported in local mode (at collection): the jobs keep the in-process executor in both runs below
from finrag_pipeline.definitions import defs
from finrag_pipeline_tests import _object_store

moto_endpoint = _object_store.moto_endpoint
DATA = Path(__file__).parent / "data"
FID = "AAPL-2022-10K"
QUERIES = ["total net sales", "net income 99,803", "global and regional economic conditions", "iPhone revenue"]
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _run(home: Path, corpus: Path, *, distributed_config: Path | None, monkeypatch) -> dict:
    from finrag_pipeline.defs.evaluation.assets import retrieval_eval
    from finrag_pipeline.defs.local_runs import run_pipeline
    from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

    monkeypatch.setenv("FINRAG_HOME", str(home))
    if distributed_config is not None:
        monkeypatch.setenv("FINRAG_DEPLOYMENT", "distributed")
        monkeypatch.setenv("FINRAG_CONFIG_DIR", str(distributed_config))
        # distributed mode names its services; this test checks the storage layer with the code
        # location's jobs executed in process (test_distributed.py runs the Celery workers)
        monkeypatch.setenv("FINRAG_POSTGRES_URL", "postgresql+psycopg2://unused@127.0.0.1:1/unused")
        monkeypatch.setenv("FINRAG_BROKER_URL", "redis://127.0.0.1:1/0")
    else:
        monkeypatch.setenv("FINRAG_DEPLOYMENT", "local")
    paths = FinragPaths.from_env(str(home)).ensure()
    instance = dg.DagsterInstance.ephemeral()
    finrag = FinragResource()
    storage = finrag.storage()
    assert storage.kind == ("local" if distributed_config is None else "object_store")
    if storage.kind == "object_store":
        # register on "another machine": the parse step must fetch the bytes from the object store
        from finrag_pipeline.core.catalog import register_file

        reg = register_file(corpus / "apple_2022_excerpt.pdf", paths, Warehouse(paths.warehouse))
        assert reg.ok and storage.store.exists(f"filings/{Path(reg.meta.source_path).name}")
        shutil.rmtree(paths.filings_store)
    report = run_pipeline([corpus], paths, instance, defs, evaluate=False, build_marts=False,
                          progress=lambda _m: None)
    assert report.failed == {}, report.failed
    result = dg.materialize([retrieval_eval], partition_key=FID, instance=instance, resources={
        "finrag": finrag, "embedder": EmbedderResource()},
        run_config={"ops": {"retrieval_eval": {"config": {"retrievers": ["bm25", "dense"], "top_k": [5]}}}})
    assert result.success
    finrag.publish_distributed_results()  # distributed: the publisher loads the Parquet rows; local: no-op
    wh = Warehouse(paths.warehouse)
    bm25 = finrag.tantivy()
    return {
        "storage": storage, "paths": paths, "wh": wh,
        "search": {q: [(cid, score) for cid, score, _ in bm25.search(q, k=10)] for q in QUERIES},
        "bm25_docs": bm25.count(FID), "lance_rows": finrag.lance(EmbedderResource().get()).count(FID),
        "pages": wh.query_df("SELECT page_number, text FROM core.pages ORDER BY page_number").values.tolist(),
        "leaves": int(wh.query_df("SELECT count(*) FROM core.chunks WHERE filing_id = ? AND is_leaf", [FID]).iloc[0, 0]),
        "retrieval": wh.query_df(
            "SELECT * EXCLUDE (evaluated_at, latency_ms) FROM eval.retrieval_results "
            "ORDER BY run_id, qa_id, config_name, k"),
        "runs": wh.query_df("SELECT run_id, kind, config_name, filing_id, scope, n_questions, status "
                            "FROM eval.runs ORDER BY run_id"),
    }


def test_distributed_run_equals_local_run(tmp_path, moto_endpoint, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(DATA / "apple_2022_excerpt.pdf", corpus)
    local = _run(tmp_path / "local", corpus, distributed_config=None, monkeypatch=monkeypatch)

    monkeypatch.setenv("FINRAG_TEST_S3_KEY", "k")
    monkeypatch.setenv("FINRAG_TEST_S3_SECRET", "s")
    # the service URLs core/deployment.py requires in distributed mode (not contacted by this test)
    monkeypatch.setenv("FINRAG_POSTGRES_URL", "postgresql://u:p@127.0.0.1:5432/dagster")
    monkeypatch.setenv("FINRAG_BROKER_URL", "redis://127.0.0.1:6379/0")
    config = tmp_path / "config"  # the repo's configuration plus a deployment.yaml naming the object store
    shutil.copytree(ASSETS_CONFIG_DIR, config)
    (config / "deployment.yaml").write_text(
        "mode: local\ndistributed:\n  object_store:\n"
        f"    endpoint_url: {moto_endpoint}\n    bucket: finrag-pipeline\n    prefix: it\n"
        "    access_key_env: FINRAG_TEST_S3_KEY\n    secret_key_env: FINRAG_TEST_S3_SECRET\n    allow_http: true\n")
    from finrag_pipeline.core.object_store_config import ObjectStoreConfig
    from finrag_pipeline.core.storage.object_store import ObjectStore

    ObjectStore(ObjectStoreConfig(endpoint_url=moto_endpoint, bucket="finrag-pipeline", prefix="it",
                                  access_key_env="FINRAG_TEST_S3_KEY", secret_key_env="FINRAG_TEST_S3_SECRET",
                                  allow_http=True)).ensure_bucket()
    dist = _run(tmp_path / "dist", corpus, distributed_config=config, monkeypatch=monkeypatch)

    store = dist["storage"].store
    # the data lives on the object store, not in the worker's local index folders
    assert not any(dist["paths"].tantivy_dir.iterdir()) and not any(dist["paths"].lancedb_dir.iterdir())
    assert [o.key for o in store.list("bm25/heads/")] == [f"bm25/heads/{FID}.json"]
    assert store.read_pointer("bm25/CURRENT.json").payload["filings"].keys() == {FID}
    assert store.list("results/eval.retrieval_results/") and store.list("results/eval.runs/")
    for table in ("core.pages", "core.table_rows", "core.xbrl_facts", "core.chunks"):  # ingest rows too
        assert len(store.list(f"results/{table}/")) == 1, table
    assert dist["pages"] == local["pages"] and local["pages"]
    assert any(o.key.startswith("lancedb/") for o in store.list("lancedb/"))

    assert local["leaves"] > 10 and dist["leaves"] == local["leaves"]
    assert dist["bm25_docs"] == local["bm25_docs"] == local["leaves"]
    assert dist["lance_rows"] == local["lance_rows"] == local["leaves"]
    assert all(local["search"][q] for q in QUERIES[:3])
    assert dist["search"] == local["search"]  # same ranked ids, same BM25 scores
    assert len(local["retrieval"]) > 0 and len(local["runs"]) > 0
    pd.testing.assert_frame_equal(dist["runs"], local["runs"])
    pd.testing.assert_frame_equal(dist["retrieval"], local["retrieval"])
