"""One seam between local and distributed storage (core/storage/seam.py): both implementations have the
interface's methods, the mode is decided in one place, and no caller outside core/storage branches on it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from _excerpt_corpus import build_excerpt_home

from finrag_pipeline.core.completion import check_filings
from finrag_pipeline.core.storage.distributed import DistributedStorage
from finrag_pipeline.core.storage.interface import Storage
from finrag_pipeline.core.storage.seam import LocalStorage, storage_for

ROOT = Path(__file__).resolve().parents[1] / "finrag_pipeline"


def _methods(cls) -> set[str]:
    return {n for n, v in inspect.getmembers(cls, callable) if not n.startswith("_")}


def test_both_storages_implement_the_whole_interface():
    interface = {n for n in Storage.__dict__ if not n.startswith("_") and callable(Storage.__dict__[n])}
    assert interface >= {"write_bm25", "open_bm25", "open_lance", "bm25_counts", "lance_counts", "upload_filing",
                         "local_filing", "partition_warehouse", "results", "publish_results", "publish_bm25"}
    assert interface <= _methods(LocalStorage)
    assert interface <= _methods(DistributedStorage)


def test_no_caller_outside_storage_branches_on_the_mode():
    offenders = []
    for path in ROOT.rglob("*.py"):
        if "core/storage" in path.as_posix():
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"storage is (not )?None|DistributedStorage|object_store_config\(", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_local_mode_is_local_storage(tmp_path, monkeypatch):
    from finrag_pipeline.core.paths import FinragPaths

    monkeypatch.setenv("FINRAG_DEPLOYMENT", "local")
    storage = storage_for(FinragPaths.from_env(tmp_path).ensure())
    assert isinstance(storage, LocalStorage) and storage.kind == "local"
    assert storage.results() is None


def test_local_storage_writes_counts_and_removes_a_filing(tmp_path):
    corpus = build_excerpt_home(tmp_path / "home")   # indexes the 4-page Apple FY2022 excerpt into Tantivy
    storage = LocalStorage(corpus.paths)
    fid = corpus.filing_id
    leaves = corpus.leaves()
    assert storage.bm25_counts([fid, "NONE-2020-10K"]) == {fid: len(leaves), "NONE-2020-10K": 0}
    written = storage.write_bm25(fid, leaves)    # a re-run replaces, never duplicates
    assert written.n_docs == len(leaves) and storage.bm25_counts([fid])[fid] == len(leaves)
    assert storage.bm25_filing_ids() == [fid] and storage.publish_bm25() is None
    assert storage.lance_counts([fid]) == {fid: 0}   # no vector table was built
    completeness = check_filings(corpus.warehouse, storage, [fid])[fid]
    assert completeness.tantivy_docs == len(leaves) and completeness.lance_rows == 0
    assert f"0 LanceDB rows for {len(leaves)} leaf chunks" in completeness.problems
    storage.remove_bm25(fid)
    assert storage.bm25_counts([fid])[fid] == 0
