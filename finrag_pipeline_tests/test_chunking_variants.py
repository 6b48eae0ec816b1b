"""Chunking variants as a partition dimension: (filing x chunking) partitions of variant_chunks,
variant_bm25_index and variant_vector_index, materialized through Dagster on two real 10-K excerpts
(Apple FY2022, Walmart FY2021); evaluation reads them and never builds them."""

import os

import dagster as dg
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
from finrag_pipeline.core.evaluation.runner import EvalMatrix, RetrievalMatrix, run_retrieval_eval  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402
from finrag_pipeline.core.variants import (  # noqa: E402
    VariantNotBuilt,
    check_variant_name,
    drop_filings_not_in,
    is_default_chunking,
    load_variant_chunks,
    missing_builds,
    open_tantivy,
    variant_names,
    variants_root,
    write_variant_chunks,
)

DATA = os.path.join(os.path.dirname(__file__), "data")
WALMART = os.path.join(DATA, "walmart_2021_excerpt.pdf")
CHUNK_METRICS = [f"{n}_chunk" for n in ("hit", "mrr", "precision", "recall", "ap", "ndcg")]
PAGE_METRICS = [f"{n}_page" for n in ("hit", "mrr", "precision", "recall", "ap", "ndcg")] + ["all_evidence_hit"]
BUILT = ("small", "large")


def _add_filing(corpus, pdf):
    """Parse ``pdf`` and write its rows and default chunks beside the Apple excerpt (as the ingest assets do)."""
    from finrag_pipeline.core.catalog import write_filing
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.ingest.parse import parse_filing
    from finrag_pipeline.core.warehouse import rows_of

    parsed = parse_filing(pdf)
    fid, wh = parsed.meta.filing_id, corpus.warehouse
    write_filing(wh, parsed.meta)
    wh.replace_rows("core.pages", rows_of(parsed.pages), where={"filing_id": fid})
    wh.replace_rows("core.table_rows", rows_of(parsed.table_rows), where={"filing_id": fid})
    chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config("default"))
    wh.replace_rows("core.chunks", rows_of(chunks), where={"filing_id": fid})
    TantivyIndex(corpus.paths.tantivy_dir).upsert_filing(fid, chunks)
    return parsed, chunks


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two filings; (filing x {small, large}) materialized by the build_chunking_variants job."""
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import build_variant_partitions

    home = tmp_path_factory.mktemp("variants-home")
    saved = os.environ.get("FINRAG_HOME")
    os.environ["FINRAG_HOME"] = str(home)  # the code location's FinragResource reads it
    try:
        corpus = build_excerpt_home(home)
        walmart, walmart_chunks = _add_filing(corpus, WALMART)
        filings = {corpus.filing_id: (corpus.parsed, corpus.chunks), walmart.meta.filing_id: (walmart, walmart_chunks)}
        instance = dg.DagsterInstance.ephemeral()
        results = build_variant_partitions(defs, instance, [(f, v) for f in filings for v in BUILT], trigger="cli")
        assert all(r.success for r in results.values()), results
        yield corpus, filings, defs, instance, results
    finally:
        if saved is None:
            os.environ.pop("FINRAG_HOME", None)
        else:
            os.environ["FINRAG_HOME"] = saved


def _materialized(results, fid, variant):
    events = results[(fid, variant)].get_asset_materialization_events()
    return {e.asset_key.to_user_string(): (e.partition, {k: v.value for k, v in e.materialization.metadata.items()})
            for e in events}


def test_variant_names_come_from_ingest_yaml():
    assert variant_names() == ["small", "large", "no_overlap", "prose_only"]
    assert is_default_chunking(None) and is_default_chunking("default") and not is_default_chunking("small")
    for bad in ("a|b", "x,y", "../up", "default"):
        with pytest.raises(ValueError):
            check_variant_name(bad)


def test_partitions_hold_each_variant_chunked_and_indexed(built):
    corpus, filings, _defs, _instance, results = built
    for fid, (parsed, default_chunks) in filings.items():
        default_leaves = [c for c in default_chunks if c.is_leaf]
        leaves = {}
        for variant in BUILT:
            done = _materialized(results, fid, variant)
            assert set(done) == {"variant_chunks", "variant_bm25_index", "variant_vector_index"}
            assert {p for p, _ in done.values()} == {f"{variant}|{fid}"}
            stored = load_variant_chunks(corpus.warehouse, variant, fid)
            leaves[variant] = [c for c in stored if c.is_leaf]
            expected = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config(variant))
            assert [c.chunk_id for c in stored] == [c.chunk_id for c in expected]
            n = len(leaves[variant])
            assert done["variant_chunks"][1]["leaves"] == n and done["variant_chunks"][1]["chunks"] == len(stored)
            assert done["variant_bm25_index"][1]["documents"] == n == open_tantivy(corpus.paths, variant).count(fid)
            assert done["variant_vector_index"][1]["rows"] == n
        # small windows (500 chars) give more prose chunks than the default (1000), large (2000) fewer;
        # table rows are one chunk each whatever the window size, with the same ids
        prose = {name: sum(c.chunk_type == "prose" for c in ls)
                 for name, ls in (("default", default_leaves), *leaves.items())}
        assert prose["small"] > prose["default"] > prose["large"] > 0, (fid, prose)
        rows = {name: {c.chunk_id for c in ls if c.chunk_type == "table_row"}
                for name, ls in (("default", default_leaves), *leaves.items())}
        assert rows["small"] == rows["default"] == rows["large"] and rows["default"], fid
        max_chars = max(len(c.text) for c in leaves["small"] if c.chunk_type == "prose")
        assert max_chars < max(len(c.text) for c in default_leaves if c.chunk_type == "prose")
    # each variant in its own directory; the default index untouched
    assert {p.name for p in variants_root(corpus.paths).iterdir()} == set(BUILT)
    assert missing_builds(corpus.paths, corpus.warehouse, BUILT, filings) == {}


def test_variant_indexes_are_searchable(built):
    corpus, filings, *_ = built
    session = FinragSession.open(str(corpus.paths.home))
    small_ids = {c.chunk_id for c in load_variant_chunks(corpus.warehouse, "small")}
    for retriever in ("bm25", "dense"):
        hits = session.retriever_factory(retriever, "small").search("total net sales fiscal 2022", 5, None)
        assert hits and {h.chunk_id for h in hits} <= small_ids, retriever
        assert any(h.filing_id == corpus.filing_id and h.page_start == INCOME_STATEMENT_PAGE for h in hits), retriever
    # the variant's BM25 index holds both filings
    assert set(open_tantivy(corpus.paths, "small").filing_ids()) == set(filings)


def test_rematerializing_a_partition_is_idempotent(built):
    from finrag_pipeline.defs.local_runs import build_variant_partitions

    corpus, _filings, defs, instance, _results = built
    fid = corpus.filing_id

    def state():
        rows = corpus.warehouse.query_df(
            "SELECT count(*) AS n, count(DISTINCT chunk_id) AS ids, count(*) FILTER (WHERE is_leaf) AS leaves "
            "FROM core.variant_chunks "
            "WHERE chunking = 'small' AND filing_id = ?", [fid]).iloc[0]
        session = FinragSession.open(str(corpus.paths.home))
        return (int(rows["n"]), int(rows["ids"]), int(rows["leaves"]), open_tantivy(corpus.paths, "small").count(fid),
                session.variants.get("small").lance().count(fid))

    before = state()
    again = build_variant_partitions(defs, instance, [(fid, "small")], trigger="cli")
    assert again[(fid, "small")].success
    after = state()
    n, ids, leaves, bm25, vectors = after
    assert after == before and n == ids > leaves == bm25 == vectors > 0
    assert instance.get_materialized_partitions(dg.AssetKey("variant_chunks")) >= {f"small|{fid}", f"large|{fid}"}


def test_retrieval_eval_compares_default_and_small_chunking(built):
    corpus, *_ = built
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
        assert r["status"] == "ok" and r["n_retrieved"] > 0, r
        assert all(r[m] is not None for m in PAGE_METRICS), r
        if r["chunking"] is None:
            assert all(r[m] is not None for m in CHUNK_METRICS) and r["notes"] is None, r
        else:
            assert all(r[m] is None for m in CHUNK_METRICS) and "another chunking" in r["notes"], r
    for chunking in (None, "small"):
        (row,) = [r for r in rows if r["qa_id"] == "q-net-sales" and r["k"] == 5 and r["chunking"] == chunking]
        assert row["hit_page"] == 1.0, row


def test_evaluation_naming_an_unbuilt_variant_fails_naming_it(built):
    from finrag_pipeline.defs.local_runs import evaluate_filings, first_error

    corpus, filings, defs, instance, _ = built
    corpus.warehouse.replace_rows("qa.items", [i.to_row() for i in excerpt_qa_items(corpus)],
                                  where={"filing_id": corpus.filing_id})
    narrowed = {"retrievers": ["bm25"], "top_k": [5], "scopes": ["filing"], "chunking": ["default", "no_overlap"]}
    results = evaluate_filings(defs, instance, [corpus.filing_id], trigger="cli", narrowed=narrowed, answers=False)
    result = results[corpus.filing_id]
    assert not result.success
    message = first_error(result)
    assert f"({corpus.filing_id}, no_overlap): no chunks" in message and f"no_overlap|{corpus.filing_id}" in message
    assert "does not build" in message
    # nothing was built behind Dagster's back, and no result row was written
    assert not (variants_root(corpus.paths) / "no_overlap").exists()
    assert load_variant_chunks(corpus.warehouse, "no_overlap") == []
    n = corpus.warehouse.query_df("SELECT count(*) AS n FROM eval.retrieval_results WHERE chunking = 'no_overlap'")
    assert int(n.iloc[0, 0]) == 0
    # the same matrix over a built variant runs, through the same job
    narrowed["chunking"] = ["default", "small"]
    ok = evaluate_filings(defs, instance, [corpus.filing_id], trigger="cli", narrowed=narrowed, answers=False)
    assert ok[corpus.filing_id].success, first_error(ok[corpus.filing_id])
    df = corpus.warehouse.query_df("SELECT chunking, count(*) AS n FROM eval.retrieval_results GROUP BY chunking")
    assert dict(zip(df["chunking"].fillna("default"), df["n"], strict=True)) == {"default": 3, "small": 3}


def test_a_stale_or_partial_build_is_named(built, tmp_path):
    corpus, filings, *_ = built
    session = FinragSession.open(str(corpus.paths.home))
    walmart = next(f for f in filings if f != corpus.filing_id)
    # settings changed since the build: the stored fingerprint no longer matches ingest.yaml
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "ingest.yaml").write_text(
        "chunking:\n  base: {chunk_size: 1000, overlap: 150}\n  variants: {default: {}, small: {chunk_size: 400}}\n")
    session.config_dir = str(config_dir)
    with session.configured(), pytest.raises(VariantNotBuilt) as err:
        session.variants.require(["small"], filings)
    assert set(err.value.missing) == {(f, "small") for f in filings}
    assert "chunked with settings" in str(err.value)
    # a filing whose BM25 documents went missing
    open_tantivy(corpus.paths, "large").delete_filing(walmart)
    try:
        missing = missing_builds(corpus.paths, corpus.warehouse, ["large"], filings)
        assert list(missing) == [(walmart, "large")] and missing[(walmart, "large")].startswith("BM25 index holds 0 of")
    finally:
        open_tantivy(corpus.paths, "large").upsert_filing(
            walmart, load_variant_chunks(corpus.warehouse, "large", walmart, leaves_only=True))


def test_removed_filings_leave_the_variants(tmp_path):
    corpus = build_excerpt_home(tmp_path / "home")
    fid = corpus.filing_id
    config = load_chunking_config("small")
    chunks = chunk_filing(corpus.parsed.meta, corpus.parsed.pages, corpus.parsed.table_rows, config)
    write_variant_chunks(corpus.warehouse, fid, config, chunks)
    write_variant_chunks(corpus.warehouse, fid, config, chunks)  # idempotent: replaced, not appended
    assert len(load_variant_chunks(corpus.warehouse, "small", fid)) == len(chunks)
    open_tantivy(corpus.paths, "small").upsert_filing(fid, chunks)
    assert drop_filings_not_in(corpus.paths, corpus.warehouse, [fid], ["small"]) == []
    assert drop_filings_not_in(corpus.paths, corpus.warehouse, [], ["small"]) == [(fid, "small")]
    assert load_variant_chunks(corpus.warehouse, "small") == [] and open_tantivy(corpus.paths, "small").count() == 0


def test_unknown_variant_is_a_recorded_error(built):
    corpus, *_ = built
    session = FinragSession.open(str(corpus.paths.home))
    items = excerpt_qa_items(corpus)[:1]
    matrix = EvalMatrix(retrieval=RetrievalMatrix(retrievers=["bm25"], top_k=[3], chunking=["no_such_variant"],
                                                  scopes=["filing"]))
    runs, rows = run_retrieval_eval(items, session.retriever_factory, matrix, "filing", corpus.filing_id,
                                    "test-state", version="test")
    assert rows[0]["status"] == "error" and "no_such_variant" in rows[0]["error"]
    assert runs[0]["status"] == "error"


def test_cli_builds_and_evaluates_variants_through_dagster(built, monkeypatch):
    import json

    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.defs.local_runs import get_instance

    corpus, filings, *_ = built
    home, fid = str(corpus.paths.home), corpus.filing_id
    monkeypatch.setenv("FINRAG_HOME", home)
    monkeypatch.setenv("DAGSTER_HOME", str(corpus.paths.dagster_home))
    corpus.warehouse.replace_rows("qa.items", [i.to_row() for i in excerpt_qa_items(corpus)], where={"filing_id": fid})

    def cli(*args):
        result = CliRunner().invoke(main, ["--home", home, *args], catch_exceptions=True)
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result

    status = {(r["filing_id"], r["chunking"]): r for r in json.loads(cli("variants", "status", "--json").stdout)}
    assert len(status) == len(filings) * 4
    assert all(status[(f, v)]["built"] for f in filings for v in BUILT)
    assert status[(fid, "prose_only")] == {"filing_id": fid, "chunking": "prose_only", "built": False,
                                           "why": "no chunks"}
    assert "every partition is built" in cli("variants", "build", "--variant", "small").stdout

    # eval naming an unbuilt variant: its partitions are built first by the variants job, then evaluated
    rows = json.loads(cli("eval", "--config", "bm25", "--k", "5", "--scope", "filing", "--filing", fid,
                          "--chunking", "default", "--chunking", "prose_only", "--json").stdout)
    assert {r["config_name"] for r in rows} == {"bm25@5", "bm25@5[prose_only]"}
    assert missing_builds(corpus.paths, corpus.warehouse, ["prose_only"], [fid]) == {}
    instance = get_instance(corpus.paths)
    assert instance.get_materialized_partitions(dg.AssetKey("variant_vector_index")) >= {f"prose_only|{fid}"}
    runs = instance.get_run_records(dg.RunsFilter(job_name="build_chunking_variants", tags={"finrag/trigger": "cli"}))
    assert {r.dagster_run.tags.get("dagster/partition") for r in runs} == {f"prose_only|{fid}"}
    assert {r.dagster_run.tags.get("finrag/filing") for r in runs} == {fid}
    # prose_only has no table-row chunks: the filing's prose only
    leaves = load_variant_chunks(corpus.warehouse, "prose_only", fid, leaves_only=True)
    assert leaves and {c.chunk_type for c in leaves} == {"prose"}


def test_pipeline_builds_the_variants_its_matrix_names_before_evaluating(built, tmp_path):
    from finrag_pipeline.core.config import using_config_dir
    from finrag_pipeline.core.paths import REPO_ROOT
    from finrag_pipeline.defs.local_runs import PipelineReport, _build_variants_the_matrix_names

    corpus, filings, defs, instance, _ = built
    config = tmp_path / "config"
    config.mkdir()
    (config / "eval_matrix.yaml").write_text((REPO_ROOT / "assets_config" / "eval_matrix.yaml").read_text()
                                             .replace("chunking: [null]", "chunking: [null, no_overlap]"))
    fid = corpus.filing_id
    assert (fid, "no_overlap") in missing_builds(corpus.paths, corpus.warehouse, ["no_overlap"], [fid])
    report, said = PipelineReport(), []
    with using_config_dir(config):
        _build_variants_the_matrix_names(defs, instance, corpus.paths, corpus.warehouse, [fid], report, said.append,
                                         "cli")
    assert report.failed == {} and said == ["building 1 chunking-variant partition(s) the evaluation matrix needs"]
    assert missing_builds(corpus.paths, corpus.warehouse, ["no_overlap"], [fid]) == {}
    assert f"no_overlap|{fid}" in instance.get_materialized_partitions(dg.AssetKey("variant_bm25_index"))
