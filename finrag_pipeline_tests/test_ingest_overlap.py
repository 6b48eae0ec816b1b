"""The overlapped ingest (embedding in a background thread while the next filing is parsed: local_runs.
_ingest_overlapped, core/indexing/embedding_prefetch.py) against one run per filing: the same rows in
every ingest table, the same Tantivy documents, the same LanceDB rows with bit-identical vectors, the
same checks. Two small real filings (page excerpts of Apple's FY2022 and Walmart's FY2021 10-K PDFs),
each ingested into its own FINRAG_HOME with its own, empty embedding cache."""

import shutil
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

DATA = Path(__file__).parent / "data"
FILES = ("apple_2022_excerpt.pdf", "walmart_2021_excerpt.pdf")
pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Columns that name a run or a moment, not content.
_VOLATILE = {"registered_at", "ingested_at", "generated_at", "created_at", "updated_at", "dagster_run_id",
             "stored_path", "source_path", "path", "run_id"}
_TABLES = ("core.filings", "core.pages", "core.table_rows", "core.chunks", "qa.items")  # (PDFs: no XBRL facts)


def _ingest(tmp_path_factory, mp: pytest.MonkeyPatch, overlap: bool):
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    home = tmp_path_factory.mktemp("overlap" if overlap else "sequential")
    corpus = tmp_path_factory.mktemp("corpus")
    for name in FILES:
        shutil.copy(DATA / name, corpus)
    mp.setenv("FINRAG_HOME", str(home))
    mp.setenv("FINRAG_EMBEDDING_CACHE", str(home / "embeddings.sqlite"))  # nothing cached: everything is encoded
    paths = FinragPaths.from_env(str(home)).ensure()
    instance = dg.DagsterInstance.ephemeral()
    messages: list[str] = []
    report = run_pipeline([corpus], paths, instance, defs, evaluate=False, build_marts=False,
                          progress=messages.append, overlap_embedding=overlap)
    return {"paths": paths, "instance": instance, "report": report, "messages": messages,
            "wh": Warehouse(paths.warehouse)}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        yield _ingest(tmp_path_factory, mp, overlap=False), _ingest(tmp_path_factory, mp, overlap=True)
    finally:
        mp.undo()


def _rows(wh: Warehouse, table: str) -> list[tuple]:
    df = wh.query_df(f"SELECT * FROM {table}")
    df = df[[c for c in df.columns if c not in _VOLATILE]]
    return sorted(tuple(repr(v) for v in row) for row in df.itertuples(index=False))


def _vectors(paths: FinragPaths) -> dict[str, tuple[str, np.ndarray]]:
    import lancedb

    table = lancedb.connect(str(paths.lancedb_dir)).open_table("chunks").to_arrow()
    return {cid: (text, np.asarray(vec, dtype=np.float32)) for cid, text, vec in
            zip(table["chunk_id"].to_pylist(), table["text"].to_pylist(), table["vector"].to_pylist(), strict=True)}


def test_both_paths_ingest_both_filings_and_the_overlap_embedded_ahead(both):
    sequential, overlapped = both
    for run in both:
        assert not run["report"].failed and not run["report"].failed_checks
        assert len([r for r in run["report"].registrations if r.ok]) == 2
    background = [m for m in overlapped["messages"] if "texts embedded in the background" in m]
    assert len(background) == 2, overlapped["messages"]  # both filings' vectors came from the thread
    assert all(int(m.split(": ")[1].split()[0]) > 8 for m in background)
    assert not [m for m in sequential["messages"] if "background" in m]


def test_same_rows_in_every_ingest_table(both):
    sequential, overlapped = both
    for table in _TABLES:
        rows = _rows(sequential["wh"], table)
        assert rows, table  # a table both paths left empty would compare equal
        assert rows == _rows(overlapped["wh"], table), table


def test_same_vectors_bit_for_bit_and_same_bm25_documents(both):
    sequential, overlapped = both
    seq, ovl = _vectors(sequential["paths"]), _vectors(overlapped["paths"])
    assert len(seq) > 20 and seq.keys() == ovl.keys()
    for cid, (text, vector) in seq.items():
        assert ovl[cid][0] == text
        assert np.array_equal(ovl[cid][1], vector), cid
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    counts = [{fid: TantivyIndex(str(run["paths"].tantivy_dir)).count(fid)
               for fid in run["wh"].query_df("SELECT filing_id FROM core.filings")["filing_id"]} for run in both]
    assert counts[0] == counts[1] and all(counts[0].values())


def test_same_checks_and_every_ingest_asset_materialized(both):
    def checks(run):
        return sorted((a, c, p, ok) for a, c, p, ok, _sev in run["report"].checks)

    sequential, overlapped = both
    assert checks(sequential) == checks(overlapped)
    assert ("vector_index", "vector_index_rows_equal_leaf_chunks") in {c[:2] for c in checks(overlapped)}
    fids = set(overlapped["wh"].query_df("SELECT filing_id FROM core.filings")["filing_id"])
    for asset in ("pages", "chunks", "bm25_index", "vector_index", "qa_set"):
        assert overlapped["instance"].get_materialized_partitions(dg.AssetKey(asset)) >= fids, asset
