"""Chunking variants in the evaluation matrix: own indexes under FINRAG_HOME/indexes/variants/<variant>."""

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _excerpt_corpus import (  # noqa: E402
    INCOME_STATEMENT_PAGE,
    build_excerpt_home,
    excerpt_qa_items,
)

from finrag_pipeline.core.chunking.chunker import chunk_filing  # noqa: E402
from finrag_pipeline.core.chunking.config import load_chunking_config  # noqa: E402
from finrag_pipeline.core.evaluation.runner import (  # noqa: E402
    EvalMatrix,
    RetrievalMatrix,
    run_retrieval_eval,
)
from finrag_pipeline.core.session import FinragSession  # noqa: E402
from finrag_pipeline.core.variants import ChunkingVariantIndex, is_default_chunking, variants_root  # noqa: E402

CHUNK_METRICS = [f"{n}_chunk" for n in ("hit", "mrr", "precision", "recall", "ap", "ndcg")]
PAGE_METRICS = [f"{n}_page" for n in ("hit", "mrr", "precision", "recall", "ap", "ndcg")] + ["all_evidence_hit"]


@pytest.fixture(scope="module")
def embedder():
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    return load_embedder_config().build()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    return build_excerpt_home(tmp_path_factory.mktemp("variants-home"), embedder=embedder, with_lance=True)


def _small_leaves(corpus):
    return [c for c in chunk_filing(corpus.parsed.meta, corpus.parsed.pages, corpus.parsed.table_rows,
                                    load_chunking_config("small")) if c.is_leaf]


def test_is_default_chunking():
    assert is_default_chunking(None) and is_default_chunking("default")
    assert not is_default_chunking("small")


def test_retrieval_eval_compares_default_and_small_chunking(corpus):
    session = FinragSession.open(str(corpus.paths.home))
    items = excerpt_qa_items(corpus)
    matrix = EvalMatrix(retrieval=RetrievalMatrix(retrievers=["bm25"], top_k=[3, 5], chunking=[None, "small"],
                                                  scopes=["filing"]))
    runs, rows = run_retrieval_eval(items, session.retriever_factory, matrix, "filing", corpus.filing_id,
                                    "test-state", n_filings_in_corpus=1, version="test")

    assert {r["chunking"] for r in rows} == {None, "small"}
    assert len(rows) == len(items) * 2 * 2  # questions x chunkings x k
    assert {r["status"] for r in runs} == {"ok"}
    for r in rows:
        assert r["status"] == "ok", r
        assert r["n_retrieved"] > 0
        assert all(r[m] is not None for m in PAGE_METRICS), r
        if r["chunking"] is None:
            assert all(r[m] is not None for m in CHUNK_METRICS), r
            assert r["notes"] is None
        else:
            assert all(r[m] is None for m in CHUNK_METRICS), r
            assert "another chunking" in r["notes"]
    # The income-statement page is found for the net-sales question under both chunkings.
    for chunking in (None, "small"):
        (row,) = [r for r in rows if r["qa_id"] == "q-net-sales" and r["k"] == 5 and r["chunking"] == chunking]
        assert row["hit_page"] == 1.0, row

    # The variant's own indexes, chunk store and manifest.
    variant = session.variants.get("small")
    root = variants_root(corpus.paths) / "small"
    assert variant.root == root and (root / "tantivy").is_dir() and (root / "chunks" / "AAPL-2022-10K.json").exists()
    leaves = variant.chunk_store().leaves()
    assert len(leaves) == len(_small_leaves(corpus)) > len(corpus.leaves())
    assert {c.chunk_id for c in leaves} == {c.chunk_id for c in _small_leaves(corpus)}
    assert variant.tantivy().count() == len(leaves)
    assert variant.tantivy().count(corpus.filing_id) == len(leaves)
    manifest = json.loads((root / "manifest.json").read_text())
    entry = manifest["filings"][corpus.filing_id]
    assert entry["n_leaves"] == len(leaves) and entry["indexed"]["tantivy"] == entry["fingerprint"]
    assert manifest["config_fingerprint"] == load_chunking_config("small").fingerprint()
    # A BM25-only matrix never built the variant's vector index.
    assert "lance" not in entry["indexed"] and variant.report["lance"] == []
    # The default index is untouched by the variant.
    assert session.resources.get("tantivy").count() == len(corpus.leaves())


def test_variant_dense_index_reuses_embeddings(corpus):
    session = FinragSession.open(str(corpus.paths.home))
    variant = session.variants.get("small")
    index = variant.lance()
    leaves = variant.chunk_store().leaves()
    assert index.count() == len(leaves)
    # Table rows read the same under every chunking: only (some) prose windows needed the model.
    n_prose = sum(c.chunk_type == "prose" for c in leaves)
    assert index.last_encoded <= n_prose < len(leaves)
    hits = session.retriever_factory("dense", "small").search("total net sales fiscal 2022", 5, None)
    assert hits and all(h.chunk_id in {c.chunk_id for c in leaves} for h in hits)
    assert any(h.page_start == INCOME_STATEMENT_PAGE for h in hits)


def test_variant_rebuilds_only_changed_filings(tmp_path):
    from finrag_pipeline.core.catalog import mark_removed

    corpus = build_excerpt_home(tmp_path / "home")
    fid = corpus.filing_id

    first = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small")
    n = first.tantivy().count(fid)
    assert n == len(_small_leaves(corpus))
    assert first.report["rechunked"] == [fid] and first.report["tantivy"] == [fid]

    # Nothing changed: a new session reads the stored chunks and leaves the index alone.
    again = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small")
    assert again.tantivy().count(fid) == n
    assert again.report == {"rechunked": [], "tantivy": [], "lance": [], "removed": []}
    assert len(again.chunk_store()) == len(first.chunk_store())

    # The index lost the filing behind the manifest's back: the count check repairs it.
    again.tantivy().delete_filing(fid)
    repaired = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small")
    assert repaired.tantivy().count(fid) == n and repaired.report["tantivy"] == [fid]
    assert repaired.report["rechunked"] == []

    # A re-parse changed a page (same bytes, same content hash): re-chunked and re-indexed.
    corpus.warehouse.execute("UPDATE core.pages SET text = text || ' Zanzibarian supply disruptions persisted.' "
                             "WHERE filing_id = ? AND page_number = 2", [fid])
    changed = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small")
    assert changed.tantivy().search("zanzibarian", 3)
    assert changed.report["rechunked"] == [fid] and changed.report["tantivy"] == [fid]

    # Another variant lives in its own directory and does not disturb "small".
    large = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "large")
    assert large.tantivy().count(fid) == len(large.chunk_store().leaves()) < n
    assert ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small").tantivy().count(fid) > 0

    # Removed from the catalog: dropped from the variant's chunks and index.
    mark_removed(corpus.warehouse, fid)
    removed = ChunkingVariantIndex(corpus.paths, corpus.warehouse, "small")
    assert removed.tantivy().count() == 0
    assert removed.report["removed"] == [fid] and len(removed.chunk_store()) == 0


def test_unknown_variant_is_a_recorded_error(corpus):
    session = FinragSession.open(str(corpus.paths.home))
    items = excerpt_qa_items(corpus)[:1]
    matrix = EvalMatrix(retrieval=RetrievalMatrix(retrievers=["bm25"], top_k=[3], chunking=["no_such_variant"],
                                                  scopes=["filing"]))
    runs, rows = run_retrieval_eval(items, session.retriever_factory, matrix, "filing", corpus.filing_id,
                                    "test-state", version="test")
    assert rows[0]["status"] == "error" and "no_such_variant" in rows[0]["error"]
    assert runs[0]["status"] == "error"
