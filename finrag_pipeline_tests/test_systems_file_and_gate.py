"""Outside systems of kind ``file`` and ``python``, the regression gate (CLI and blocking asset check), and
`finrag eval --system` / `finrag systems list` (issue 27).

The home holds the evidence pages of the hand-written analyst set (data/external/evidence_pages.json: the
pages of eight sample 10-Ks as the project's parser reads them) with their chunks and a BM25 index, and
the analyst questions imported through the FinanceBench importer (test_external_qa.py checks them).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from _question_fixtures import fixture_context
from click.testing import CliRunner
from test_external_qa import PAGES, SET

from finrag_pipeline.core.evaluation.runner import EvalMatrix
from finrag_pipeline.core.evaluation.systems import SystemsConfig
from finrag_pipeline.core.models import stable_id

HERE = Path(__file__).parent


def _per_page_context(doc: str):
    """The filing's evidence pages chunked one page at a time: only a few pages of each filing are here, and a
    window over the gap (pages 46..57) would put a chunk on pages that are not in this corpus."""
    from finrag_pipeline.core.chunking import chunk_filing
    from finrag_pipeline.core.qa.importers import FilingContext

    base = fixture_context(doc, PAGES[doc], with_chunks=False)
    chunks = []
    for page in base.pages:   # offsets restart on each page: the page number keeps the ids apart
        def fresh(chunk_id, n=page.page_number):
            return stable_id(chunk_id, n) if chunk_id else None

        chunks += [dataclasses.replace(c, chunk_id=fresh(c.chunk_id), parent_id=fresh(c.parent_id))
                   for c in chunk_filing(base.meta, [page], [])]
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    return FilingContext(base.meta, base.pages, chunks)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from finrag_pipeline.core.catalog import write_filing
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.qa.importers import import_financebench
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    path = tmp_path_factory.mktemp("analyst-pages-home")
    paths = FinragPaths.from_env(path).ensure()
    wh = Warehouse(paths.warehouse)
    contexts = [_per_page_context(doc) for doc in sorted(PAGES)]
    index = TantivyIndex(paths.tantivy_dir)
    for c in contexts:
        fid = c.meta.filing_id
        write_filing(wh, c.meta)
        wh.replace_rows("core.pages", rows_of(c.pages), where={"filing_id": fid})
        wh.replace_rows("core.chunks", rows_of(c.chunks), where={"filing_id": fid})
        index.upsert_filing(fid, c.chunks)
    items = import_financebench(SET, contexts).items
    for fid in {i.filing_id for i in items}:
        wh.replace_rows("qa.items", rows_of([i for i in items if i.filing_id == fid]), where={"filing_id": fid})
    fids = sorted(c.meta.filing_id for c in contexts)
    wh.replace_rows("core.corpus_versions", [{"corpus_state": "analyst-pages", "filing_ids": json.dumps(fids),
                                              "n_filings": len(fids), "n_chunks": 0, "embedder": "none"}], where={})
    return {"path": path, "items": items, "fids": fids, "pages": {c.meta.filing_id: c.pages for c in contexts}}


@pytest.fixture(scope="module")
def session(home):
    from finrag_pipeline.core.session import FinragSession

    return FinragSession.open(str(home["path"]))


MATRIX = dict(retrievers=["bm25"], top_k=[5], scopes=["filing"], answers__scope="filing")


def _reference_file(tmp: Path, items, pages, *, skip: str | None = None) -> Path:
    """The analysts' reference answers as a file system: every other line keyed by qa_id, the others by the
    question text (re-cased and re-spaced: matched after normalisation); the evidence pages as contexts;
    a question without evidence is declined (what a correct system does)."""
    lines = []
    for n, item in enumerate(items):
        if item.qa_id == skip:
            continue
        text_of = {p.page_number: p.text for p in pages[item.filing_id]}
        evidence = sorted({(p.filing_id, p.page) for g in item.evidence for p in g})
        record = {"answer": item.reference_answer,
                  "contexts": [{"filing_id": f, "page": p, "text": text_of[p][:400]} for f, p in evidence],
                  "citations": [{"filing_id": f, "page": p} for f, p in evidence],
                  "abstained": not evidence, "latency_ms": 12.5}
        record.update({"qa_id": item.qa_id} if n % 2 == 0 else {"question": "  " + item.question.upper() + " "})
        lines.append(json.dumps(record))
    lines.insert(3, "{not json")   # a broken line is reported, the others still count
    path = tmp / "reference.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _evaluate(session, fids, name, systems, **narrow):
    matrix = EvalMatrix.load().narrow(**{**MATRIX, **narrow})
    for fid in fids:
        session.evaluate_system(fid, name, matrix, systems=systems)


def test_file_of_the_analysts_reference_answers_scores_one_on_correctness(home, session, tmp_path):
    path = _reference_file(tmp_path, home["items"], home["pages"])
    systems = SystemsConfig.model_validate({"systems": {"analysts": {"kind": "file", "path": str(path)}}})
    _evaluate(session, home["fids"], "analysts", systems)
    answers = session.warehouse.query_df("SELECT * FROM eval.answer_current WHERE model = 'analysts'")
    assert len(answers) == len(home["items"]) >= 30          # every question has its row
    answerable = answers[answers["answerable"]]
    assert len(answerable) >= 27
    # correctness is 1.0 wherever the scorer computes it (never 0); where the item has no figure or choice to
    # compare (narrative questions) it is NULL, "not computable", which lowers coverage and not the mean
    computed = answerable[answerable["correctness"].notna()]
    assert (computed["correctness"] == 1.0).all(), computed.loc[computed["correctness"] != 1.0,
                                                                ["qa_id", "answer", "notes"]].to_dict("records")
    assert len(computed) >= 15 and computed["correctness"].mean() == 1.0
    not_computed = answerable[answerable["correctness"].isna()]
    assert all("asks for no value or choice" in json.loads(n)["correctness"] for n in not_computed["notes"])
    assert (answerable["citation_recall"] == 1.0).all()
    unanswerable = answers[~answers["answerable"]]
    assert len(unanswerable) >= 2 and (unanswerable["abstention_correct"] == 1.0).all()
    assert set(answers["system_kind"]) == {"file"} and (answers["latency_ms"] == 12.5).all()
    retrieval = session.warehouse.query_df("SELECT * FROM eval.retrieval_current WHERE retriever = 'analysts'")
    scored = retrieval[retrieval["status"] == "ok"]
    assert len(scored) == len(answerable) and (scored["all_evidence_hit"] == 1.0).all()
    assert (scored["n_contexts_unmapped"] == 0).all() and (scored["mapping_confidence"] > 0.6).all()


def test_a_knows_nothing_file_scores_zero_and_a_missing_line_is_a_missing_answer(home, session, tmp_path):
    missing = home["items"][0].qa_id
    path = _reference_file(tmp_path, home["items"], home["pages"], skip=missing)
    lazy = tmp_path / "lazy.jsonl"   # the same questions, answered "I don't know", with a random page
    lazy.write_text("".join(json.dumps({"qa_id": i.qa_id, "answer": "I do not know.",
                                        "contexts": [{"text": "unrelated words about weather and sports"}]}) + "\n"
                            for i in home["items"]), encoding="utf-8")
    systems = SystemsConfig.model_validate({"systems": {"partial": {"kind": "file", "path": str(path)},
                                                        "lazy": {"kind": "file", "path": str(lazy)}}})
    _evaluate(session, home["fids"], "partial", systems)
    _evaluate(session, home["fids"], "lazy", systems)
    rows = session.warehouse.query_df("SELECT * FROM eval.answer_current WHERE model = 'partial'")
    row = rows[rows["qa_id"] == missing].iloc[0]
    assert row["response_state"] == "missing_answer" and row["correctness"] == 0.0
    assert "line 4: invalid JSON" in row["error"]
    retrieval = session.warehouse.query_df(
        "SELECT * FROM eval.retrieval_current WHERE retriever = 'partial' AND qa_id = ?", [missing]).iloc[0]
    assert retrieval["status"] == "error" and retrieval["system_state"] == "missing_answer"
    lazy_rows = session.warehouse.query_df("SELECT * FROM eval.answer_current WHERE model = 'lazy' AND answerable")
    assert len(lazy_rows) >= 27 and lazy_rows["correctness"].fillna(0).max() == 0.0
    lazy_retrieval = session.warehouse.query_df("SELECT * FROM eval.retrieval_current WHERE retriever = 'lazy' "
                                                "AND status = 'ok'")
    assert (lazy_retrieval["hit_page"] == 0.0).all() and (lazy_retrieval["n_contexts_unmapped"] == 1).all()
    assert (lazy_retrieval["system_state"] == "contexts_not_in_corpus").all()


PY = "_reference_system:bm25_system"


@pytest.fixture(scope="module")
def gated(home, session):
    """bm25 as a python system; the same function under another name; and a degraded copy that drops
    every other context, starting with its first."""
    h = str(home["path"])
    systems = SystemsConfig.model_validate({"systems": {
        "bm25_sys": {"kind": "python", "target": PY, "options": {"home": h}},
        "bm25_same": {"kind": "python", "target": PY, "options": {"home": h}},
        "bm25_half": {"kind": "python", "target": PY, "options": {"home": h, "drop": "half"}}}})
    for name in systems.systems:
        _evaluate(session, home["fids"], name, systems)
    return systems


def _gate(home, *args):
    from finrag_pipeline.cli import main

    return CliRunner().invoke(main, ["--home", str(home["path"]), "gate", *args])


def test_gate_flags_the_degraded_system_and_passes_an_identical_one(home, session, gated):
    degraded = _gate(home, "--baseline", "bm25_sys@5", "--candidate", "bm25_half@5", "--metric", "mrr_page")
    print(degraded.output)   # the figures docs/SYSTEMS.md quotes (pytest -s)
    assert degraded.exit_code == 1, degraded.output
    assert "FAIL" in degraded.output and "regressed" in degraded.output
    # the flipped questions are listed with their ids and values
    flipped = [line for line in degraded.output.splitlines() if line.strip().startswith("regressed")]
    assert flipped and all(" -> " in line for line in flipped)
    same = _gate(home, "--baseline", "bm25_sys@5", "--candidate", "bm25_same@5", "--metric", "mrr_page")
    assert same.exit_code == 0 and "PASS" in same.output and "difference 0.0000" in same.output
    # a tolerated drop larger than the whole interval passes the degraded system
    tolerant = _gate(home, "--baseline", "bm25_sys@5", "--candidate", "bm25_half@5", "--metric", "mrr_page",
                     "--max-drop", "1.0")
    assert tolerant.exit_code == 0, tolerant.output
    # the built-in bm25 and the system wrapping it are the same on every question
    builtin = EvalMatrix.load().narrow(**MATRIX)
    for fid in home["fids"]:
        session.evaluate_retrieval(fid, builtin)
    wrapped = _gate(home, "--baseline", "bm25@5", "--candidate", "bm25_sys@5", "--metric", "hit_page", "--json")
    assert wrapped.exit_code == 0
    result = json.loads(wrapped.output)
    assert result["mean_diff"] == 0.0 and result["flipped"] == [] and result["n_pairs"] >= 27


def test_gate_by_run_id_and_bad_inputs(home, session, gated):
    run = session.warehouse.query_df("SELECT run_id, filing_id FROM eval.runs WHERE config_name = 'bm25_sys@5' "
                                     "AND kind = 'retrieval' ORDER BY filing_id LIMIT 1").iloc[0]
    by_run = _gate(home, "--baseline", run["run_id"], "--candidate", "bm25_same@5", "--metric", "hit_page", "--json")
    assert by_run.exit_code == 0
    assert json.loads(by_run.output)["n_pairs"] == int(session.warehouse.query_df(
        "SELECT count(*) AS n FROM eval.retrieval_results WHERE run_id = ? AND status = 'ok'",
        [run["run_id"]])["n"].iloc[0])
    unknown = _gate(home, "--baseline", "nope@5", "--candidate", "bm25_same@5")
    assert unknown.exit_code == 2 and "neither a run id nor a configuration" in unknown.output
    bad_metric = _gate(home, "--baseline", "bm25_sys@5", "--candidate", "bm25_same@5", "--metric", "speed")
    assert bad_metric.exit_code == 2 and "unknown metric" in bad_metric.output


def test_regression_gates_asset_check_blocks_on_a_regression(home, gated, tmp_path, monkeypatch):
    import dagster as dg

    from finrag_pipeline.defs.evaluation.systems import regression_gates
    from finrag_pipeline.defs.resources import FinragResource

    finrag = FinragResource(home=str(home["path"]))

    def check(gates) -> dg.AssetCheckResult:
        yaml_path = tmp_path / "systems.yaml"
        yaml_path.write_text(json.dumps({"systems": {}, "gates": gates}), encoding="utf-8")
        monkeypatch.setenv("FINRAG_SYSTEMS_YAML", str(yaml_path))
        return regression_gates(dg.build_asset_check_context(), finrag=finrag)

    assert regression_gates.check_specs and next(iter(regression_gates.check_specs)).blocking
    failed = check([{"baseline": "bm25_sys@5", "candidate": "bm25_half@5", "metric": "mrr_page"}])
    assert not failed.passed and failed.severity == dg.AssetCheckSeverity.ERROR
    passed = check([{"baseline": "bm25_sys@5", "candidate": "bm25_same@5", "metric": "mrr_page"}])
    assert passed.passed
    absent = check([{"baseline": "bm25_sys@5", "candidate": "not_run_yet@5", "metric": "mrr_page"}])
    assert not absent.passed and absent.severity == dg.AssetCheckSeverity.WARN


def test_cli_systems_list_and_eval_system_through_dagster(home, tmp_path, monkeypatch):
    from finrag_pipeline.cli import main

    path = _reference_file(tmp_path, home["items"], home["pages"])
    yaml_path = tmp_path / "systems.yaml"
    yaml_path.write_text(json.dumps({"systems": {"analysts": {"kind": "file", "path": str(path),
                                                              "description": "reference answers"}}}))
    monkeypatch.setenv("FINRAG_SYSTEMS_YAML", str(yaml_path))
    monkeypatch.setenv("DAGSTER_HOME", str(home["path"] / "dagster_home"))
    runner = CliRunner()
    listed = runner.invoke(main, ["--home", str(home["path"]), "systems", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)["systems"] == [
        {"name": "analysts", "kind": "file", "endpoint": str(path), "k": None, "description": "reference answers"}]
    fid = home["fids"][0]
    out = runner.invoke(main, ["--home", str(home["path"]), "eval", "--system", "analysts", "--filing", fid,
                               "--k", "5", "--scope", "filing", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    correctness = [m for m in data["metrics"] if m["metric"] == "correctness"][0]
    assert correctness["config_name"] == "analysts@5" and correctness["mean"] == 1.0
    unknown = runner.invoke(main, ["--home", str(home["path"]), "eval", "--system", "nope"])
    assert unknown.exit_code != 0 and "unknown system 'nope'; valid: analysts" in unknown.output


def test_outside_systems_sit_in_the_leaderboard_marts_and_the_report(home, session, gated, tmp_path):
    from _synthetic_warehouse import run_dbt_build

    from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics
    from finrag_pipeline.core.evaluation.runner import StatsConfig
    from finrag_pipeline.core.reporting.report import build_report

    path = _reference_file(tmp_path, home["items"], home["pages"])
    _evaluate(session, home["fids"], "analysts_file",
              SystemsConfig.model_validate({"systems": {"analysts_file": {"kind": "file", "path": str(path)}}}))
    for fid in home["fids"]:   # a built-in configuration beside them
        session.evaluate_retrieval(fid, EvalMatrix.load().narrow(**MATRIX))
    wh = session.warehouse
    build_eval_statistics(wh, StatsConfig(n_boot=200, n_perm=200))
    boot = wh.query_df("SELECT DISTINCT config_name FROM eval.leaderboard WHERE kind = 'retrieval'")
    assert {"bm25_sys@5", "bm25_half@5"} <= set(boot["config_name"])   # bootstrap intervals, as any config
    built = run_dbt_build(wh.path, tmp_path / "dbt")
    assert built.returncode == 0, built.stdout[-3000:]
    board = wh.query_df("SELECT config_name, system_kind, hit_page_mean, mrr_page_mean, n_questions, "
                        "mrr_page_boot_ci_low FROM marts.mart_retriever_leaderboard WHERE scope = 'filing'")
    kinds = dict(zip(board["config_name"], board["system_kind"], strict=True))
    assert kinds["bm25_sys@5"] == "python" and kinds["analysts_file@5"] == "file"
    by_name = board.set_index("config_name")
    assert by_name.loc["bm25_half@5", "mrr_page_mean"] < by_name.loc["bm25_sys@5", "mrr_page_mean"]
    assert by_name.loc["bm25_sys@5", "mrr_page_boot_ci_low"] is not None
    answers = wh.query_df("SELECT model, system_kind, correctness_mean FROM marts.mart_answer_quality "
                          "WHERE model = 'analysts_file'").iloc[0]
    assert answers["system_kind"] == "file" and answers["correctness_mean"] == 1.0
    html = build_report(wh.path, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "bm25_half@5" in html and "analysts_file" in html
    assert "bm25_sys (outside system: python)" in html   # the leaderboard says what it is
    # the web explorer's leaderboard (over the analysts' snapshot) names them too
    from starlette.testclient import TestClient

    from finrag_pipeline.core.warehouse import publish_snapshot
    from finrag_pipeline.web.app import create_app

    publish_snapshot(wh, session.paths.warehouse_snapshot)
    app = create_app(str(home["path"]))
    app.state.explorer.refresh()
    with TestClient(app) as client:
        page = client.get("/leaderboard", params={"scope": "filing"})
    assert page.status_code == 200
    assert ">bm25_half@5</a> <span class=\"muted system-kind\">outside system: python</span>" in page.text
    assert ">bm25@5</a>" in page.text and ">bm25@5</a> <span class=\"muted system-kind\">" not in page.text


@pytest.mark.parametrize("metric", ["hit_page", "all_evidence_hit", "ndcg_page"])
def test_gate_flags_the_degraded_system_on_the_page_metrics(home, gated, metric):
    degraded = _gate(home, "--baseline", "bm25_sys@5", "--candidate", "bm25_half@5", "--metric", metric)
    print(degraded.output)
    assert degraded.exit_code == 1, degraded.output
