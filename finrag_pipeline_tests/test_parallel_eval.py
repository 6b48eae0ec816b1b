"""Filings evaluated in parallel write the rows a serial run writes; one dense search serves every retriever.

The integration tests run on a copy of the demo home (FINRAG_DEMO_HOME, default <repo>/.finrag: the eight
sample filings ingested, QA sets generated; skipped without it): its warehouse, indexes and ONNX query
export are copied to a temporary home, which is the only one written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from finrag_pipeline.core.evaluation.prepared import (
    PreparedEvaluation,
    discard_prepared,
    has_prepared,
    matrix_key,
    offer_prepared,
    take_prepared,
)
from finrag_pipeline.core.parallel_eval import ParallelEvalConfig, worker_count
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.progress import ProgressEvent, relay, reporting_to

DEMO_HOME = Path(os.environ.get("FINRAG_DEMO_HOME") or REPO_ROOT / ".finrag")
needs_demo = pytest.mark.skipif(not (DEMO_HOME / "warehouse.duckdb").exists() or not (DEMO_HOME / "indexes").exists(),
                                reason=f"no demo home at {DEMO_HOME} (make demo, or FINRAG_DEMO_HOME)")

# what a re-measurement changes; every other column must be equal between serial and parallel runs
# re-measured or recorded per run, not results: timings, the Dagster run, the checkout (git describe --dirty)
TIMING_COLUMNS = {"latency_ms", "evaluated_at", "started_at", "finished_at", "dagster_run_id", "code_version"}


# ---------------------------------------------------------------------------------------------
# Units


def test_worker_count_is_the_configured_number_or_the_cores_and_never_more_than_the_filings():
    assert worker_count(ParallelEvalConfig(), 8, cores=2) == 2
    assert worker_count(ParallelEvalConfig(), 1, cores=2) == 1
    assert worker_count(ParallelEvalConfig(workers=4), 3, cores=2) == 3
    assert worker_count(ParallelEvalConfig(workers=1), 8, cores=16) == 1
    assert worker_count(ParallelEvalConfig(), 0, cores=2) == 1
    with pytest.raises(ValueError):
        ParallelEvalConfig(workers=0)
    with pytest.raises(ValueError):
        ParallelEvalConfig(executor="fibers")


def test_prepared_rows_are_handed_over_once_and_only_for_the_same_matrix_and_inputs(tmp_path):
    from finrag_pipeline.core.evaluation.runner import EvalMatrix

    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["bm25"], "top_k": [5]}})
    other = matrix.narrow(top_k=[3])
    rows = [{"run_id": "r1", "qa_id": "q1"}]

    def prepared(fid, fingerprint="f1"):
        return PreparedEvaluation("retrieval", fid, matrix_key(matrix), fingerprint, [{"run_id": "r1"}], rows, 1.0,
                                  "pid 1")

    offer_prepared(tmp_path, [prepared("A-2024-10K"), prepared("B-2024-10K"), prepared("C-2024-10K", "")])
    assert has_prepared(tmp_path, "retrieval", "A-2024-10K") and not has_prepared(tmp_path, "answers", "A-2024-10K")
    assert take_prepared(tmp_path, "retrieval", "A-2024-10K", matrix, "f1").rows == rows
    assert take_prepared(tmp_path, "retrieval", "A-2024-10K", matrix, "f1") is None  # used once
    assert take_prepared(tmp_path, "retrieval", "B-2024-10K", other, "f1") is None  # another matrix
    assert not has_prepared(tmp_path, "retrieval", "B-2024-10K")  # dropped, not kept for later
    assert take_prepared(tmp_path, "retrieval", "C-2024-10K", matrix, "") is None  # computed while inputs changed
    offer_prepared(tmp_path, [prepared("D-2024-10K")])
    assert take_prepared(tmp_path, "retrieval", "D-2024-10K", matrix, "f2") is None  # the inputs changed
    offer_prepared(tmp_path, [prepared("E-2024-10K")])
    discard_prepared(tmp_path)
    assert not has_prepared(tmp_path, "retrieval", "E-2024-10K")


def test_rows_computed_while_the_inputs_changed_are_never_handed_over(tmp_path):
    from finrag_pipeline.core.evaluation.runner import EvalMatrix

    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["bm25"], "top_k": [5]}})
    # the worker marks such rows with an empty fingerprint; a session's fingerprint is never empty
    offer_prepared(tmp_path, [PreparedEvaluation("retrieval", "A-2024-10K", matrix_key(matrix), "", [], [], 1.0, "x")])
    assert take_prepared(tmp_path, "retrieval", "A-2024-10K", matrix, "data|config|{}") is None


def test_relayed_worker_events_reach_the_sinks_under_ids_of_their_own():
    events: list[ProgressEvent] = []
    relay(ProgressEvent(1, "nothing listens", 0, 1, "x", 0.0), origin="pid 9")  # no sink: no error
    with reporting_to(events.append):
        for origin in ("pid 1", "pid 2"):  # two workers' first tasks have the same id in their processes
            relay(ProgressEvent(1, f"evaluate retrieval {origin}", 0, 4, "searches", 0.0), origin=origin)
        relay(ProgressEvent(1, "evaluate retrieval pid 1", 4, 4, "searches", 0.0, "dense corpus", True), "pid 1")
        relay(ProgressEvent(1, "evaluate answers pid 1", 0, 2, "answers", 0.0), "pid 1")  # id 1 reused after the end
    ids = [e.task_id for e in events]
    assert ids[0] != ids[1] and ids[2] == ids[0] and ids[3] not in ids[:3]
    assert [e.name for e in events] == ["evaluate retrieval pid 1", "evaluate retrieval pid 2",
                                        "evaluate retrieval pid 1", "evaluate answers pid 1"]
    assert events[2].finished and events[2].detail == "dense corpus"


def test_the_shared_search_fetches_its_depth_once_and_hands_each_caller_its_prefix():
    from finrag_pipeline.core.retrieval.resources import RetrievalResources

    ranking = [(f"c{i:02d}", 1.0 - i / 100) for i in range(60)]
    asked: list[int] = []

    def search(k):
        asked.append(k)
        return ranking[:k]

    res = RetrievalResources(search_memo_size=8, shared_search_depth=50)
    first, reused = res.shared_search("q", 10, search)
    assert first == ranking[:10] and reused is None and asked == [50]
    second, reused = res.shared_search("q", 50, search)  # the hybrids' fetch_k: no second search
    assert second == ranking[:50] and reused is not None and asked == [50]
    third, _ = res.shared_search("q", 60, search)  # deeper than the depth: searched again
    assert third == ranking and asked == [50, 60]
    off = RetrievalResources(shared_search_depth=50)  # no memo (a single search): exactly k
    assert off.shared_search("q", 10, search)[0] == ranking[:10] and asked[-1] == 10


# ---------------------------------------------------------------------------------------------
# On a copy of the demo home


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory):
    home = tmp_path_factory.mktemp("demo") / "home"
    home.mkdir()
    for name in ("warehouse.duckdb", "indexes", "filings"):
        src = DEMO_HOME / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, home / name)
    if (DEMO_HOME / "cache" / "onnx").exists():  # the query encoder's export: not re-exported per test
        shutil.copytree(DEMO_HOME / "cache" / "onnx", home / "cache" / "onnx")
    return home


def _two_filings(home: Path) -> list[str]:
    from finrag_pipeline.core.warehouse import Warehouse

    df = Warehouse(home / "warehouse.duckdb").query_df(
        "SELECT filing_id, count(*) AS n FROM qa.items WHERE status = 'accepted' GROUP BY ALL ORDER BY n, filing_id")
    return df["filing_id"].tolist()[:2]


def _rows(home: Path, table: str, filings: list[str]) -> pd.DataFrame:
    from finrag_pipeline.core.warehouse import Warehouse

    marks = ",".join("?" * len(filings))
    df = Warehouse(home / "warehouse.duckdb").query_df(
        f"SELECT * FROM {table} WHERE filing_id IN ({marks})", filings)
    df = df.drop(columns=[c for c in df.columns if c in TIMING_COLUMNS])
    keys = [c for c in ("run_id", "qa_id", "config_name") if c in df.columns]
    return df.sort_values(keys).reset_index(drop=True)


@needs_demo
@pytest.mark.slow
def test_parallel_evaluation_writes_the_serial_rows_and_a_rerun_replaces_them(demo_copy, monkeypatch):
    """Two demo filings, a narrowed matrix (lexical, dense, fusion, decomposition; both scopes; answers):
    serial, then two worker processes, then two threads, then processes again: eval.runs,
    eval.retrieval_results and eval.answer_results hold the same rows each time (latencies and timestamps
    aside), no duplicate, and the metric means are equal."""
    from finrag_pipeline.core.evaluation.runner import aggregate
    from finrag_pipeline.defs.local_runs import evaluate_filings, get_instance

    home = demo_copy
    monkeypatch.setenv("FINRAG_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.definitions import defs

    paths = FinragPaths.from_env(str(home)).ensure()
    instance = get_instance(paths)
    filings = _two_filings(home)
    narrowed = {"retrievers": ["bm25", "dense", "hybrid_rrf", "decomposed_routed"], "top_k": [3, 10],
                "scopes": ["filing", "corpus"], "models": ["extractive"]}
    tables = ("eval.runs", "eval.retrieval_results", "eval.answer_results")

    def run(workers, executor=None):
        results = evaluate_filings(defs, instance, filings, trigger="cli", narrowed=narrowed, workers=workers,
                                   executor=executor)
        assert all(r.success for r in results.values())
        return {t: _rows(home, t, filings) for t in tables}

    serial = run(1)
    assert len(serial["eval.retrieval_results"]) > 0 and len(serial["eval.answer_results"]) > 0
    assert set(serial["eval.retrieval_results"]["filing_id"]) == set(filings)
    assert (serial["eval.retrieval_results"]["status"] != "error").all()
    for workers, executor in ((2, "processes"), (2, "threads"), (2, "processes")):
        parallel = run(workers, executor)
        for table in tables:
            pd.testing.assert_frame_equal(parallel[table], serial[table], check_dtype=False, obj=f"{table} {executor}")
    means = [aggregate(frame["eval.retrieval_results"], by=["scope", "config_name"], metrics=["ndcg_page", "hit_page"])
             for frame in (serial, parallel)]
    pd.testing.assert_frame_equal(means[0], means[1])
    # the rows of one run id exist once: the re-runs replaced them
    dup = serial["eval.retrieval_results"].duplicated(["run_id", "qa_id"]).sum()
    assert dup == 0 and len(parallel["eval.retrieval_results"]) == len(serial["eval.retrieval_results"])


@needs_demo
@pytest.mark.slow
def test_worker_processes_report_progress_per_filing_and_configuration(demo_copy, monkeypatch):
    from finrag_pipeline.core.indexing.embedder import load_embedder_config
    from finrag_pipeline.core.parallel_eval import SessionRecipe, prepare_evaluations
    from finrag_pipeline.core.session import FinragSession

    monkeypatch.setenv("FINRAG_HOME", str(demo_copy))
    filings = _two_filings(demo_copy)
    session = FinragSession.open(str(demo_copy))
    matrix = session.eval_matrix(retrievers=["bm25", "dense"], top_k=[5], scopes=["filing"])
    events: list[ProgressEvent] = []
    with reporting_to(events.append):
        prepared = prepare_evaluations(SessionRecipe(str(demo_copy), None, load_embedder_config()), filings, matrix,
                                       kinds=["retrieval"], workers=2)
    assert sorted(p.filing_id for p in prepared) == sorted(filings)
    assert len({p.worker for p in prepared}) in (1, 2) and all(p.worker.startswith("pid ") for p in prepared)
    assert all(p.worker != f"pid {os.getpid()}" for p in prepared)
    finished = {e.name for e in events if e.finished}
    assert finished == {f"evaluate retrieval {fid}" for fid in filings}
    details = {e.detail for e in events}
    assert {"bm25 filing", "dense filing"} <= details
    # the same rows as this process computes itself
    for p in prepared:
        _runs, rows = session.compute_retrieval(p.filing_id, matrix)
        strip = [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]
        assert [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in p.rows] == strip


@needs_demo
@pytest.mark.slow
def test_the_shared_dense_search_returns_what_each_retriever_searched_alone(demo_copy, monkeypatch):
    """Every dense-using retriever of the default matrix, on one demo filing's accepted questions in both
    scopes: with the evaluation session's shared search (one dense search per question and filter, at
    depth 50) each returns exactly the ids, order and scores it returns with its own searches; and dense
    at k=10 and hybrid_rrf's dense base at fetch_k=50 are one search."""
    from finrag_pipeline.core.evaluation.runner import EvalMatrix, scope_filters
    from finrag_pipeline.core.records import load_qa_items
    from finrag_pipeline.core.retrieval.registry import build_named_retrievers
    from finrag_pipeline.core.retrieval.resources import RetrievalResources
    from finrag_pipeline.core.session import FinragSession

    monkeypatch.setenv("FINRAG_HOME", str(demo_copy))
    session = FinragSession.open(str(demo_copy))
    names = [n for n in EvalMatrix.load().retrieval.retrievers if n not in ("bm25", "sanity_random")]
    assert {"dense", "hybrid_rrf", "decomposed_routed"} <= set(names)
    shared = session.resources
    assert shared.search_memo_size > 0 and shared.shared_search_depth == 50
    alone = RetrievalResources.from_paths(session.paths, warehouse=session.warehouse)  # no memo
    alone.lance, alone.embedder, alone.chunk_store = (shared.get("lance"), shared.get("embedder"),
                                                      shared.get("chunk_store"))
    alone.tantivy, alone.catalog = shared.get("tantivy"), shared.get("catalog")
    with_memo = {n: session.retriever(n) for n in names}
    without = build_named_retrievers(alone, names)
    lance = shared.get("lance")
    searches: list[int] = []
    original = lance.search
    monkeypatch.setattr(lance, "search", lambda *a, **kw: searches.append(a[1]) or original(*a, **kw))
    fid = _two_filings(demo_copy)[0]
    items = load_qa_items(session.warehouse, fid)
    assert len(items) >= 10
    compared = 0
    for scope in ("filing", "corpus"):
        filters = scope_filters(scope, fid)
        for item in items:
            searches.clear()
            with_memo["dense"].retrieve(item.question, 10, filters)
            with_memo["hybrid_rrf"].retrieve(item.question, 10, filters)
            assert searches == [50], (item.question, searches)  # one search served dense@10 and fetch_k=50
            for name in names:
                got = with_memo[name].retrieve(item.question, 10, filters).hits
                own = without[name].retrieve(item.question, 10, filters).hits
                assert [(h.chunk_id, round(h.score, 6)) for h in got] == [(h.chunk_id, round(h.score, 6)) for h in own], (
                    name, scope, item.question)
                compared += 1
    assert compared == 2 * len(items) * len(names)


@needs_demo
@pytest.mark.slow
def test_finrag_eval_with_workers_prints_no_bars_when_piped_and_records_each_filing_run(demo_copy, monkeypatch):
    """`finrag eval --workers 2` with its output captured (not a terminal): the plain table, no cursor movement or
    colour codes; one evaluate_filing run per filing recorded by Dagster, and the rows those runs wrote."""
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.warehouse import Warehouse

    monkeypatch.setenv("FINRAG_HOME", str(demo_copy))
    monkeypatch.setenv("DAGSTER_HOME", str(demo_copy / "dagster_home"))
    filings = _two_filings(demo_copy)
    args = ["--home", str(demo_copy), "eval", "--workers", "2", "--config", "bm25", "--config", "dense", "--k", "5",
            "--scope", "filing", *[x for f in filings for x in ("--filing", f)]]
    out = CliRunner().invoke(main, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\r" not in out.output
    assert "bm25@5" in out.output and "dense@5" in out.output
    runs = Warehouse(demo_copy / "warehouse.duckdb").query_df(
        "SELECT filing_id, config_name, dagster_run_id FROM eval.runs WHERE kind = 'retrieval' AND scope = 'filing' "
        "AND config_name IN ('bm25@5', 'dense@5') AND filing_id IN (?, ?)", filings)
    assert len(runs) == 4 and runs["dagster_run_id"].notna().all()
    assert runs.groupby("filing_id")["dagster_run_id"].nunique().eq(1).all()  # each filing: its own run wrote both
    assert runs["dagster_run_id"].nunique() == 2
