"""FinanceBench and plain JSONL/CSV imports onto ingested pages and chunks."""

import json
from pathlib import Path

import pytest
from _qa_sample import load_sample

from finrag_pipeline.core.qa.importers import FilingContext, import_financebench, import_plain

FIXTURE = Path(__file__).parent / "data" / "financebench_sample.jsonl"


@pytest.fixture(scope="module")
def filings():
    out = []
    for name in ("APPLE_2022_10K", "MICROSOFT_2022_10K"):
        s = load_sample(name)
        out.append(FilingContext(s.meta, s.pages, s.chunks))
    return out


@pytest.fixture(scope="module")
def imported(filings):
    return import_financebench(FIXTURE, filings)


def test_financebench_pages_are_zero_indexed(imported, filings):
    by_fb = {i.metadata["financebench_id"]: i for i in imported.items}
    assert {p.page for p in by_fb["fb_test_001"].evidence[0]} == {32}   # evidence_page_num 31
    assert {p.page for p in by_fb["fb_test_002"].evidence[0]} == {52}   # evidence_page_num 51
    assert [{p.page for p in g} for g in by_fb["fb_test_003"].evidence] == [{52}, {32}]  # two required groups
    assert {p.page for p in by_fb["fb_test_004"].evidence[0]} == {57}   # Microsoft income statement
    # the evidence text is really on the mapped page (and not on the page before)
    for item in imported.items:
        for ev in item.metadata["evidence_pages"]:
            assert ev["overlap"] >= 0.8, (item.question, ev)


def test_financebench_chunks_overlap_evidence_text(imported, filings):
    chunks = {c.chunk_id: c for f in filings for c in f.chunks}
    item = next(i for i in imported.items if i.metadata["financebench_id"] == "fb_test_005")
    texts = [chunks[p.chunk_id].text for p in item.evidence[0]]
    assert texts and all("72,738" in t for t in texts)
    assert item.source == "financebench" and item.filing_id == filings[1].meta.filing_id


def test_financebench_unknown_document_counted(imported):
    assert len(imported.items) == 5
    assert {"stage": "import", "reason": "filing_not_ingested", "count": 1} in imported.log


def test_plain_jsonl_and_csv(tmp_path, filings):
    apple = filings[0].meta
    rec = {"question": "What was Apple's net income in 2022?", "answer": "$99,803 million",
           "doc_name": "APPLE_2022_10K", "evidence_pages": [32], "question_type": "numerical"}
    jl = tmp_path / "qa.jsonl"
    jl.write_text(json.dumps(rec) + "\n")
    res = import_plain(jl, filings)
    assert res.items[0].source == "jsonl" and res.items[0].filing_id == apple.filing_id
    assert {p.page for p in res.items[0].evidence[0]} == {32}
    csv_path = tmp_path / "qa.csv"
    csv_path.write_text("question,answer,filing_id,evidence_pages,question_type\n"
                        f"What was net income?,\"$99,803 million\",{apple.filing_id},32;999,factual\n")
    res = import_plain(csv_path, filings)
    assert res.items[0].source == "csv" and len(res.items[0].evidence) == 1
    assert {"stage": "import", "reason": "page_out_of_range", "count": 1} in res.log
