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


def test_financebench_answers_become_answer_values(imported):
    by_fb = {i.metadata["financebench_id"]: i for i in imported.items}
    (v,) = by_fb["fb_test_001"].answer_values            # "$394,328 million": one figure
    assert (v["value"], v["unit"], v["scale"], v["tolerance"]) == (394328.0, "USD", 1e6, 0.0)
    (v,) = by_fb["fb_test_003"].answer_values            # "About 18.8% (74,200 / 394,328)": computation in parens
    assert (v["value"], v["unit"], v["tolerance"]) == (18.8, "percent", 0.01)
    assert by_fb["fb_test_003"].answer_figures == []     # FinanceBench gives no inputs


def test_plain_answer_value_column(tmp_path, filings):
    from finrag_pipeline.core.scoring.answer_metrics import correctness

    apple = filings[0].meta
    csv_path = tmp_path / "qa.csv"
    csv_path.write_text(
        "question,answer,filing_id,evidence_pages,answer_value,answer_unit,answer_period,answer_choice,choice_options\n"
        f"What was net income in 2022?,It was $99.8 billion.,{apple.filing_id},32,99803,USD millions,FY2022,,\n"
        f"Gross margin?,The margin rose.,{apple.filing_id},32,43.3%,,,,\n"
        f"Narrative?,Apple designs phones.,{apple.filing_id},32,,,,,\n"
        f"Higher year?,2022,{apple.filing_id},32,,,,FY2022,FY2022;FY2021\n"
        f"Broken?,x,{apple.filing_id},32,lots,,,,\n")
    res = import_plain(csv_path, filings)
    ni, margin, narrative, choice = res.items
    assert ni.answer_values[0] | {"text": None} == {"value": 99803.0, "unit": "USD", "scale": 1e6,
                                                   "period": "FY2022", "tolerance": 0.0, "text": None}
    assert correctness("$99.8 billion", answer_values=ni.answer_values).correct == 1.0
    assert margin.answer_values[0]["unit"] == "percent" and margin.answer_values[0]["value"] == 43.3
    assert narrative.answer_values == [] and narrative.answer_choice is None   # a sentence asks for no value
    assert choice.answer_choice == "FY2022" and choice.metadata["choice_options"] == ["FY2022", "FY2021"]
    assert {"stage": "import", "reason": "bad_answer_value", "count": 1} in res.log
