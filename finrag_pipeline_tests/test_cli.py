"""The `finrag` command line end to end, through click's CliRunner, on a small real corpus.

Corpus: the 4-page excerpt of Apple's FY2022 10-K PDF (physical pages 1, 8, 31, 32 of the original:
cover, Item 1A, the Item 8 index and the Consolidated Statements of Operations, which is page 4
here) and Apple's FY2024 inline-XBRL 10-K. The excerpt is copied as ``APPLE_2022_10K.pdf`` so the
FinanceBench fixture's ``doc_name`` finds it (the importer matches the original file name's stem).
Beside them sit two bad files: an empty PDF and an HTML page that is not a filing.

One `finrag ingest --no-eval` per module (embedding a whole 10-K costs 30-60 s on 2 cores); the
tests then run in file order on that FINRAG_HOME, ending with `finrag remove`.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from finrag_pipeline.cli import main
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR, FinragPaths
from finrag_pipeline.core.scoring.metric_registry import BOARD_RETRIEVAL_METRICS
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).parent / "data"
FB_FIXTURE = DATA / "financebench_sample.jsonl"
A22, A24 = "AAPL-2022-10K", "AAPL-2024-10K"
INCOME_STATEMENT_PAGE = 4   # excerpt page 4 = physical page 32 of the FY2022 10-K (printed "29")
DATA_TABLES = ("core.filings", "core.pages", "core.table_rows", "core.xbrl_facts", "core.chunks", "qa.items")


class Cli:
    """`finrag --home HOME ...` in this process; fails the test on a non-zero exit unless told not to."""

    def __init__(self, home: Path):
        self.home = home
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True):
        result = self.runner.invoke(main, ["--home", str(self.home), *args], catch_exceptions=True)
        if ok:
            assert result.exit_code == 0, (args, result.output, result.exception)
        return result

    def json(self, *args: str):
        return json.loads(self(*args, "--json").stdout)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home = tmp_path_factory.mktemp("finrag_home")
    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copy(DATA / "apple_2022_excerpt.pdf", corpus / "APPLE_2022_10K.pdf")
    shutil.copy(SAMPLE_FILINGS_DIR / "aapl-10-k-2024-11-01.html", corpus)
    (corpus / "empty.pdf").write_bytes(b"")
    (corpus / "bakery.html").write_text(
        "<html><head><title>Bakery</title></head><body><h1>Our bread</h1>"
        "<p>Sourdough baked daily since 1998.</p></body></html>", encoding="utf-8")
    # the CLI exports FINRAG_HOME / DAGSTER_HOME for the code location's resources: undo afterwards
    mp = pytest.MonkeyPatch()
    mp.setenv("FINRAG_HOME", str(home))
    mp.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    cli = Cli(home)
    first = cli("ingest", "--no-eval", str(corpus))
    yield {"cli": cli, "corpus": corpus, "first": first, "wh": Warehouse(home / "warehouse.duckdb"),
           "paths": FinragPaths.from_env(str(home))}
    mp.undo()


def _count(wh: Warehouse, sql: str, params=()) -> int:
    return int(wh.query_df(sql, list(params)).iloc[0, 0])


def _counts(wh: Warehouse) -> dict[str, int]:
    return {t: _count(wh, f"SELECT count(*) FROM {t}") for t in DATA_TABLES}


# ---------------------------------------------------------------------------------------------
# ingest


def test_ingest_lists_both_filings_and_rejects_bad_files(env):
    out, wh = env["first"].stdout, env["wh"]
    assert env["first"].exit_code == 0
    table = out.split("\nFilings\n", 1)[1].split("\n\n", 1)[0]
    assert A22 in table and A24 in table
    # the bad files are reported with their status and did not stop the good ones
    assert "rejected empty.pdf: [empty]" in out
    assert "rejected bakery.html: [not_a_filing]" in out
    log = wh.query_df("SELECT original_name, status, filing_id FROM core.ingest_log WHERE stage = 'register'")
    status = dict(zip(log["original_name"], log["status"], strict=True))
    assert status == {"APPLE_2022_10K.pdf": "registered", "aapl-10-k-2024-11-01.html": "registered",
                      "empty.pdf": "empty", "bakery.html": "not_a_filing"}
    parsed = wh.query_df("SELECT filing_id FROM core.ingest_log WHERE stage = 'parse' AND status = 'parsed'")
    assert sorted(parsed["filing_id"]) == [A22, A24]
    # what landed: the excerpt has its 4 pages and the income statement on page 4
    assert _count(wh, "SELECT count(*) FROM core.pages WHERE filing_id = ?", [A22]) == 4
    row = wh.query_df("SELECT page_number, cells FROM core.table_rows WHERE filing_id = ? "
                      "AND row_label = 'Total net sales'", [A22])
    assert row["page_number"].tolist() == [INCOME_STATEMENT_PAGE] and "394,328" in row["cells"].iloc[0]
    for fid in (A22, A24):
        assert _count(wh, "SELECT count(*) FROM core.chunks WHERE filing_id = ? AND is_leaf", [fid]) > 0
        assert _count(wh, "SELECT count(*) FROM qa.items WHERE filing_id = ?", [fid]) > 0


def test_reingest_reports_duplicates_and_changes_nothing(env):
    cli, wh = env["cli"], env["wh"]
    before = _counts(wh)
    chunk_ids = set(wh.query_df("SELECT chunk_id FROM core.chunks")["chunk_id"])
    result = cli("ingest", "--no-eval", str(env["corpus"]))
    assert f"APPLE_2022_10K.pdf: duplicate -> {A22}" in result.stdout
    assert f"aapl-10-k-2024-11-01.html: duplicate -> {A24}" in result.stdout
    assert "rejected empty.pdf: [empty]" in result.stdout   # still reported, still harmless
    assert _counts(wh) == before
    assert set(wh.query_df("SELECT chunk_id FROM core.chunks")["chunk_id"]) == chunk_ids
    dup = wh.query_df("SELECT filing_id FROM core.ingest_log WHERE status = 'duplicate'")
    assert sorted(dup["filing_id"]) == [A22, A24]


# ---------------------------------------------------------------------------------------------
# search and ask


def test_search_bm25_json(env):
    data = env["cli"].json("search", "total net sales fiscal 2022", "--retriever", "bm25", "-k", "20")
    assert data["retriever"] == "bm25" and "total" in data["timings_ms"]
    hits = data["hits"]
    assert len(hits) == 20 and [h["rank"] for h in hits] == list(range(1, 21))
    for h in hits:
        assert h["pages"] and all(isinstance(p, int) for p in h["pages"])
        assert h["filing_id"] in (A22, A24) and h["chunk_id"] and h["text"]
    # Across the corpus the FY2022 figure also sits in the FY2024 10-K's three-year columns, and those
    # chunks outrank the excerpt's income statement (plain BM25 does not match "fiscal 2022" to
    # "FY2022"): the top 5 carry the figure, the FY2022 statement page is further down.
    assert any("394,328" in h["text"] for h in hits[:5])
    places = [(h["filing_id"], p) for h in hits for p in h["pages"]]
    assert (A22, INCOME_STATEMENT_PAGE) in places


def test_search_with_filing_filter(env):
    cli = env["cli"]
    data = cli.json("search", "total net sales fiscal 2022", "--retriever", "bm25", "--filing", A22)
    hits = data["hits"]
    assert 0 < len(hits) <= 5 and {h["filing_id"] for h in hits} == {A22}
    assert INCOME_STATEMENT_PAGE in {p for h in hits[:5] for p in h["pages"]}
    # plain BM25 may put a prose page that says "fiscal 2022" first; the figure's row must be near the top
    with_figure = [h for h in hits[:3] if "394,328" in h["text"]]
    assert with_figure and INCOME_STATEMENT_PAGE in with_figure[0]["pages"]
    other = cli.json("search", "total net sales fiscal 2022", "--retriever", "bm25", "--filing", A24)
    assert {h["filing_id"] for h in other["hits"]} == {A24}
    # the text view shows filing, page and the stage timings
    text = cli("search", "total net sales fiscal 2022", "--retriever", "bm25", "--filing", A22).stdout
    assert f"{A22}  p.{INCOME_STATEMENT_PAGE}" in text and "stages: bm25:" in text


def test_ask_json(env):
    cli = env["cli"]
    data = cli.json("ask", "What were Apple's total net sales in fiscal 2022?", "--retriever", "bm25",
                    "--filing", A22)
    assert data["response_state"] == "answered"
    assert "394,328" in data["answer"]
    assert [A22, INCOME_STATEMENT_PAGE] in [c[:2] for c in data["citations"]]
    assert data["evidence"] and all(e["filing_id"] == A22 for e in data["evidence"])
    assert data["answer_ms"] >= 0 and "total" in data["retrieval_ms"]
    text = cli("ask", "What were Apple's total net sales in fiscal 2022?", "-r", "bm25", "--filing", A22).stdout
    assert "state: answered" in text and f"{A22} p.{INCOME_STATEMENT_PAGE}" in text


def test_ask_prints_why_an_llm_answer_failed(env):
    """A backend_error says why (it used to print the state alone)."""
    cli = env["cli"]
    data = cli.json("ask", "What were Apple's total net sales in fiscal 2022?", "-r", "bm25", "--filing", A22,
                    "--model", "mock-error")
    assert data["response_state"] == "backend_error" and "InternalServerError" in data["error"]
    text = cli("ask", "What were Apple's total net sales in fiscal 2022?", "-r", "bm25", "--filing", A22,
               "--model", "mock-error").stdout
    assert "state: backend_error\nerror: " in text and "InternalServerError" in text


# ---------------------------------------------------------------------------------------------
# eval and sql


def test_eval_bm25_at_5_json(env):
    cli, wh = env["cli"], env["wh"]
    rows = cli.json("eval", "--config", "bm25", "--k", "5")
    assert {(r["scope"], r["config_name"]) for r in rows} == {("filing", "bm25@5"), ("corpus", "bm25@5")}
    assert {r["metric"] for r in rows} == set(BOARD_RETRIEVAL_METRICS)   # the registry's board list
    for r in rows:
        assert 0.0 <= r["ci_low"] <= r["mean"] <= r["ci_high"] <= 1.0, r
        assert r["n_scored"] > 0 and r["n_error"] == 0
    hit = {r["scope"]: r["mean"] for r in rows if r["metric"] == "hit_page"}
    assert hit["filing"] >= hit["corpus"] > 0.3
    # the rows are in the warehouse, one run per filing x scope; a re-run replaces them
    runs = wh.query_df("SELECT filing_id, scope FROM eval.runs WHERE config_name = 'bm25@5' AND kind = 'retrieval'")
    assert sorted(zip(runs["filing_id"], runs["scope"], strict=True)) == [
        (A22, "corpus"), (A22, "filing"), (A24, "corpus"), (A24, "filing")]
    n_results = _count(wh, "SELECT count(*) FROM eval.retrieval_results")
    assert n_results == 2 * _count(wh, "SELECT count(*) FROM qa.items WHERE status IN ('accepted', 'edited')")
    # each filing was one run of the code location's evaluate_filing job, tagged as started by the CLI
    import dagster as dg

    from finrag_pipeline.defs.local_runs import get_instance
    instance = get_instance(env["paths"])
    dagster_runs = wh.query_df("SELECT DISTINCT filing_id, dagster_run_id FROM eval.runs WHERE config_name = 'bm25@5'")
    assert len(dagster_runs) == 2
    for fid, run_id in zip(dagster_runs["filing_id"], dagster_runs["dagster_run_id"], strict=True):
        run = instance.get_run_by_id(run_id)
        assert run.job_name == "evaluate_filing" and run.tags["finrag/trigger"] == "cli"
        assert run.tags["dagster/partition"] == fid
        assert fid in instance.get_materialized_partitions(dg.AssetKey("retrieval_eval"))
    cli("eval", "--config", "bm25", "--k", "5", "--scope", "filing", "--filing", A22, "--json")
    assert _count(wh, "SELECT count(*) FROM eval.retrieval_results") == n_results
    assert _count(wh, "SELECT count(*) FROM eval.runs") == 4


def test_eval_in_two_worker_processes_writes_the_serial_rows(env):
    """`finrag eval --workers 2` (spawned worker processes compute, each filing's run writes) leaves the rows a
    serial `--workers 1` run wrote: same retrieval rows and metric values, no duplicate. Runs on this module's
    two-filing home, after test_eval_bm25_at_5_json (the same configuration: a re-run replaces its
    rows, so later counts hold), so CI checks it without a demo home (test_parallel_eval.py's demo tests skip there)."""
    cli, wh = env["cli"], env["wh"]
    timing = {"latency_ms", "evaluated_at", "started_at", "finished_at", "dagster_run_id", "code_version", "run_id"}

    def rows():
        df = wh.query_df("SELECT * FROM eval.retrieval_results WHERE retriever = 'bm25' AND k = 5")
        df = df.drop(columns=[c for c in df.columns if c in timing])
        return df.sort_values(["filing_id", "scope", "qa_id"]).reset_index(drop=True)

    serial_summary = cli.json("eval", "--config", "bm25", "--k", "5", "--workers", "1")
    serial = rows()
    parallel_summary = cli.json("eval", "--config", "bm25", "--k", "5", "--workers", "2")
    parallel = rows()
    assert len(serial) == 2 * _count(wh, "SELECT count(*) FROM qa.items WHERE status IN ('accepted', 'edited')") > 0
    pd.testing.assert_frame_equal(serial, parallel)
    assert {(r["scope"], r["metric"]): r["mean"] for r in serial_summary} == {
        (r["scope"], r["metric"]): r["mean"] for r in parallel_summary}


def test_sql_json(env):
    cli = env["cli"]
    assert cli.json("sql", "SELECT count(*) AS n FROM core.filings") == [{"n": 2}]
    rows = cli.json("sql", "SELECT filing_id, fiscal_year FROM core.filings ORDER BY filing_id", "--live")
    assert rows == [{"filing_id": A22, "fiscal_year": 2022}, {"filing_id": A24, "fiscal_year": 2024}]
    assert cli("sql", "SELECT * FROM no_such_table", ok=False).exit_code != 0


# ---------------------------------------------------------------------------------------------
# QA sets: export, review, import


def test_qa_export_review(env, tmp_path):
    cli, wh = env["cli"], env["wh"]
    n_items = _count(wh, "SELECT count(*) FROM qa.items")
    sheet = tmp_path / "review.csv"
    out = cli("qa", "export", A22, "--out", str(sheet)).stdout
    rows = list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    assert f"{len(rows)} questions" in out
    assert len(rows) == _count(wh, "SELECT count(*) FROM qa.items WHERE filing_id = ?", [A22]) > 2
    assert {r["filing_id"] for r in rows} == {A22} and all(r["decision"] == "" for r in rows)

    rejected, edited = rows[0]["qa_id"], rows[1]["qa_id"]
    new_question = "How much did Apple report for this line item in fiscal 2022 (edited by review)?"
    rows[0].update(decision="reject", note="ambiguous")
    rows[1].update(decision="edit", edited_question=new_question)
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = cli("qa", "review", str(sheet), "--reviewer", "analyst").stdout
    assert "2 questions updated, 2 reviews recorded" in out

    reviews = wh.query_df("SELECT qa_id, decision, reviewer, note, before, after FROM qa.reviews ORDER BY decision")
    assert reviews["qa_id"].tolist() == [edited, rejected]
    assert reviews["decision"].tolist() == ["edit", "reject"]
    assert set(reviews["reviewer"]) == {"analyst"}
    assert json.loads(reviews["after"].iloc[0])["question"] == new_question
    assert json.loads(reviews["before"].iloc[1])["status"] == "accepted"
    items = wh.query_df("SELECT qa_id, status, question FROM qa.items WHERE qa_id IN (?, ?)", [rejected, edited])
    by_id = {r["qa_id"]: r for r in items.to_dict("records")}
    assert by_id[rejected]["status"] == "rejected"
    assert by_id[edited]["status"] == "edited" and by_id[edited]["question"] == new_question
    assert _count(wh, "SELECT count(*) FROM qa.items") == n_items   # updated in place, nothing added

    from finrag_pipeline.core.records import load_qa_items
    accepted = {i.qa_id for i in load_qa_items(wh, A22)}
    assert rejected not in accepted and edited in accepted


def test_qa_import_financebench(env):
    cli, wh = env["cli"], env["wh"]
    records = [json.loads(line) for line in FB_FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    apple = [r for r in records if r["doc_name"] == "APPLE_2022_10K"]
    assert len(apple) == 3 and len(records) == 6   # the others: two Microsoft, one Netflix (not ingested)
    out = cli("qa", "import", str(FB_FIXTURE), "--format", "financebench").stdout
    assert "imported 3 questions" in out
    assert "'reason': 'filing_not_ingested', 'count': 3" in out
    # FinanceBench pages are 0-indexed pages of the WHOLE PDF (31 -> page 32, 51 -> page 52); the excerpt
    # has 4 pages, so all 4 evidence entries fall outside it and no evidence place is invented for them
    assert "'reason': 'page_out_of_range', 'count': 4" in out
    items = wh.query_df("SELECT filing_id, evidence, metadata, source FROM qa.items WHERE source = 'financebench'")
    assert set(items["filing_id"]) == {A22}
    ids = sorted(json.loads(m)["financebench_id"] for m in items["metadata"])
    assert ids == sorted(r["financebench_id"] for r in apple)
    for evidence in items["evidence"]:
        assert all(1 <= place["page"] <= 4 for group in json.loads(evidence) for place in group)
    # importing again replaces the same rows
    before = _count(wh, "SELECT count(*) FROM qa.items")
    cli("qa", "import", str(FB_FIXTURE), "--format", "financebench")
    assert _count(wh, "SELECT count(*) FROM qa.items") == before


def test_qa_import_analyst_set_onto_the_ingested_html_filing(env):
    """The hand-written external set through the real ingest: the Apple FY2024 HTML filing is ingested in
    full here, so its questions' evidence pages are checked against the parser's own pages."""
    cli, wh = env["cli"], env["wh"]
    analyst_set = DATA / "external" / "analyst_questions.jsonl"
    records = [json.loads(line) for line in analyst_set.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = {r["financebench_id"]: [e["evidence_page_num"] + 1 for e in r["evidence"]]
                for r in records if r["doc_name"] == "aapl-10-k-2024-11-01"}
    assert len(expected) == 6
    cli("qa", "import", str(analyst_set), "--format", "financebench")
    items = wh.query_df("SELECT question_type, evidence, metadata, status FROM qa.items "
                        f"WHERE source = 'financebench' AND filing_id = '{A24}'")
    assert len(items) == 6 and set(items["status"]) == {"accepted"}
    for evidence, metadata in zip(items["evidence"], items["metadata"], strict=True):
        meta = json.loads(metadata)
        assert [sorted({p["page"] for p in g}) for g in json.loads(evidence)] == [
            [page] for page in expected[meta["financebench_id"]]]
        assert all(ev["overlap"] >= 0.95 for ev in meta["evidence_pages"]), meta   # the text is on that page
        assert meta["external_set"] == "analyst_questions" and meta["leakage"]["band"] in ("low", "medium", "high")

    # the demo's path: run_pipeline imports the set after ingest (nothing new to ingest here)
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import get_instance, run_pipeline

    before = _count(wh, "SELECT count(*) FROM qa.items WHERE source = 'financebench'")
    messages: list[str] = []
    report = run_pipeline([], env["paths"], get_instance(env["paths"]), defs, evaluate=False, build_marts=False,
                          progress=messages.append, external_sets=[(analyst_set, "financebench")])
    assert "external_qa" in report.seconds
    assert any(m.startswith("external QA set analyst_questions.jsonl: ") for m in messages), messages
    assert _count(wh, "SELECT count(*) FROM qa.items WHERE source = 'financebench'") == before   # idempotent


# ---------------------------------------------------------------------------------------------
# remove (last: it changes the corpus)


def test_remove_filing(env):
    cli, wh, paths = env["cli"], env["wh"], env["paths"]
    assert cli("remove", "NOPE-1999-10K", ok=False).exit_code != 0
    out = cli("remove", A22).stdout
    assert f"removed {A22}; corpus state refreshed (ok)" in out
    removed = wh.query_df("SELECT filing_id, removed FROM core.filings ORDER BY filing_id")
    assert dict(zip(removed["filing_id"], removed["removed"], strict=True)) == {A22: True, A24: False}
    latest = wh.query_df("SELECT filing_ids, n_filings FROM core.corpus_versions ORDER BY created_at DESC LIMIT 1")
    assert json.loads(latest["filing_ids"].iloc[0]) == [A24] and int(latest["n_filings"].iloc[0]) == 1

    from finrag_pipeline.core.storage.seam import LocalStorage
    from finrag_pipeline.defs.resources import _embedder
    storage = LocalStorage(paths)  # the indexes this process keeps open, at their latest commit
    assert storage.open_bm25().filing_ids() == [A24]
    assert storage.open_lance(_embedder("", "", "")).filing_ids() == [A24]
    for retriever in ("bm25", "dense"):
        hits = cli.json("search", "total net sales fiscal 2022", "-r", retriever, "-k", "50")["hits"]
        assert hits and {h["filing_id"] for h in hits} == {A24}, retriever
    assert cli.json("search", "total net sales", "-r", "bm25", "--filing", A22)["hits"] == []
