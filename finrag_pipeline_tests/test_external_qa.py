"""The hand-written external set (data/external/analyst_questions.jsonl) through the FinanceBench importer.

The filings' pages come from data/external/evidence_pages.json: the evidence pages of the set as the
project's parser numbers and reads them (written by build_analyst_questions.py from the sample
filings), so the test runs without parsing eight 10-Ks. Only those pages exist in the contexts: an
evidence page number that is off by one maps onto no page and the test fails.
"""

import json
from collections import Counter
from pathlib import Path

import pytest
from _question_fixtures import SAMPLE_DOCS, fixture_context

from finrag_pipeline.core.qa.importers import import_financebench

DATA = Path(__file__).parent / "data" / "external"
SET = DATA / "analyst_questions.jsonl"
PAGES = json.loads((DATA / "evidence_pages.json").read_text(encoding="utf-8"))
RECORDS = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def contexts():
    return [fixture_context(doc, PAGES[doc], with_chunks=True) for doc in sorted(PAGES)]


@pytest.fixture(scope="module")
def imported(contexts):
    return import_financebench(SET, contexts)


def test_set_covers_every_sample_filing_with_the_analyst_mix():
    assert len(RECORDS) >= 30
    assert {r["doc_name"] for r in RECORDS} == SAMPLE_DOCS
    mix = Counter(r["question_category"] for r in RECORDS)
    n = len(RECORDS)
    # ~40% metric, ~30% lookup, ~20% narrative, ~10% unanswerable (issue 14)
    assert 0.35 <= mix["metric"] / n <= 0.5 and 0.2 <= mix["lookup"] / n <= 0.35
    assert 0.15 <= mix["narrative"] / n <= 0.25 and 0.05 <= mix["unanswerable"] / n <= 0.15
    assert len({r["financebench_id"] for r in RECORDS}) == n and len({r["question"] for r in RECORDS}) == n
    # multi-page metric questions: inputs on two statements
    multi_page = [r for r in RECORDS if len({e["evidence_page_num"] for e in r["evidence"]}) >= 2]
    assert len(multi_page) >= 8
    for r in RECORDS:
        if r["question_category"] == "metric":
            assert r.get("justification"), r["question"]


def test_every_question_maps_to_its_filing_and_evidence_pages(imported, contexts):
    assert len(imported.items) == len(RECORDS)
    assert imported.log == [{"stage": "import", "reason": "imported", "count": len(RECORDS)}]
    by_id = {i.metadata["financebench_id"]: i for i in imported.items}
    fid_of = {doc: PAGES[doc]["filing_id"] for doc in PAGES}
    for rec in RECORDS:
        item = by_id[rec["financebench_id"]]
        assert item.filing_id == fid_of[rec["doc_name"]]
        assert item.status == "accepted" and item.source == "financebench"
        assert item.metadata["external_set"] == "analyst_questions"
        expected = [e["evidence_page_num"] + 1 for e in rec["evidence"]]   # FinanceBench pages are 0-indexed
        assert [sorted({p.page for p in g}) for g in item.evidence] == [[p] for p in expected]
        # every evidence text is on the mapped page, and its chunks carry it
        for ev in item.metadata["evidence_pages"]:
            assert ev["overlap"] >= 0.95, (rec["question"], ev)
        assert all(p.chunk_id for g in item.evidence for p in g)


def test_categories_become_question_types(imported):
    types = {i.metadata["financebench_id"]: i.question_type for i in imported.items}
    for rec in RECORDS:
        expected = {"metric": "metric", "lookup": "factual", "narrative": "narrative",
                    "unanswerable": "unanswerable"}[rec["question_category"]]
        assert types[rec["financebench_id"]] == expected
    unanswerable = [i for i in imported.items if i.question_type == "unanswerable"]
    assert unanswerable and all(not i.evidence for i in unanswerable)


def test_hand_checked_answers_spot_check(imported):
    """Figures of the issue's examples, as read in the filings."""
    by_q = {i.metadata["financebench_id"]: i for i in imported.items}
    msft = next(i for i in by_q.values() if "Microsoft's operating margin" in i.question)
    assert msft.reference_answer == "42.1%" and msft.computation == "83,383 / 198,270 = 42.06%"
    assert [g[0].page for g in msft.evidence] == [57, 57]    # the income statement, page 57 of the PDF
    apple_fat = next(i for i in by_q.values() if "Apple's fixed asset turnover" in i.question)
    assert {g[0].page for g in apple_fat.evidence} == {32, 34}   # income statement + balance sheet


def test_unknown_category_is_a_bad_record(tmp_path, contexts):
    rec = dict(RECORDS[0], question_category="trivia")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    result = import_financebench(path, contexts)
    assert result.items == [] and {"stage": "import", "reason": "bad_record", "count": 1} in result.log


@pytest.mark.slow
@pytest.mark.parametrize("doc", sorted(SAMPLE_DOCS))
def test_evidence_texts_are_on_their_pages_in_the_parsed_filing(doc):
    """Against the ingest stage itself (not the excerpt): a parser change that moves page breaks or
    text shows up here, and evidence_pages.json must then be rebuilt (build_analyst_questions.py)."""
    import re

    from _qa_sample import load_sample

    sample = load_sample(doc, use_ingest=True)
    pages = {p.page_number: re.sub(r"\s+", " ", p.text) for p in sample.pages}
    for rec in (r for r in RECORDS if r["doc_name"] == doc):
        for ev in rec["evidence"]:
            text = re.sub(r"\s+", " ", ev["evidence_text"]).strip()
            assert text in pages[ev["evidence_page_num"] + 1], (rec["financebench_id"], ev["evidence_page_num"])
    assert sample.meta.filing_id == PAGES[doc]["filing_id"] and len(sample.pages) == PAGES[doc]["n_pages"]


def test_import_external_set_is_idempotent_and_replaces_only_its_set(tmp_path):
    from finrag_pipeline.core.qa.importers import import_external_set
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    wh = Warehouse(tmp_path / "w.duckdb")
    docs = ["APPLE_2022_10K", "MICROSOFT_2022_10K"]
    for doc in docs:
        ctx = fixture_context(doc, PAGES[doc], with_chunks=True)
        fid = ctx.meta.filing_id
        wh.replace_rows("core.filings", [ctx.meta.to_row()], where={"filing_id": fid})
        wh.replace_rows("core.pages", rows_of(ctx.pages), where={"filing_id": fid})
        wh.replace_rows("core.chunks", rows_of(ctx.chunks), where={"filing_id": fid})
    n_expected = sum(r["doc_name"] in docs for r in RECORDS)

    def count(where: str = "TRUE") -> int:
        return int(wh.query_df(f"SELECT count(*) AS n FROM qa.items WHERE {where}").iloc[0]["n"])

    result = import_external_set(wh, SET, "financebench")
    assert len(result.items) == n_expected == count()
    assert {"stage": "import", "reason": "filing_not_ingested", "count": len(RECORDS) - n_expected} in result.log
    import_external_set(wh, SET, "financebench")                        # again: same rows, not twice
    assert count() == n_expected
    # leakage is stored per item; unanswerable items have none (band NULL), never "low"
    bands = wh.query_df("SELECT question_type, json_extract_string(metadata, '$.leakage.band') AS band "
                        "FROM qa.items")
    assert set(bands.loc[bands["question_type"] == "unanswerable", "band"].isna()) == {True}
    assert bands.loc[bands["question_type"] != "unanswerable", "band"].isin(["low", "medium", "high"]).all()
    # a question dropped from the file leaves; another set of the same format stays apart
    shorter = tmp_path / "analyst_questions.jsonl"
    kept = [line for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    dropped = next(json.loads(line) for line in kept if json.loads(line)["doc_name"] == "APPLE_2022_10K")
    shorter.write_text("\n".join(line for line in kept if json.loads(line) != dropped) + "\n", encoding="utf-8")
    import_external_set(wh, shorter, "financebench")
    assert count() == n_expected - 1
    import_external_set(wh, SET, "financebench", set_name="second_reader")
    assert count() == 2 * n_expected - 1
    assert count("json_extract_string(metadata, '$.external_set') = 'second_reader'") == n_expected


@pytest.mark.parametrize("bad", ["", "a b", "x" * 81, "<script>", "set|name"])
def test_set_names_are_checked(tmp_path, bad):
    from finrag_pipeline.core.qa.importers import import_external_set
    from finrag_pipeline.core.warehouse import Warehouse

    with pytest.raises(ValueError, match="QA set name"):
        import_external_set(Warehouse(tmp_path / "w.duckdb"), SET, "financebench", set_name=bad)


def test_default_set_name_is_the_file_stem_made_safe():
    from finrag_pipeline.core.qa.importers import SET_NAME_RE, default_set_name

    assert default_set_name("/x/analyst_questions.jsonl") == "analyst_questions"
    assert default_set_name("/x/my set <b>.csv") == "my_set__b_"
    assert SET_NAME_RE.fullmatch(default_set_name("/x/" + "é" * 200 + ".jsonl"))
