"""The held-out NARRATIVE analysts' set over four 10-Ks outside the demo (issue 26, the seventh set):
analyst_questions_heldout6_narrative.jsonl (eBay FY2015 and FY2017, Apple FY2015, Oracle FY2015).

HELD OUT (data/external/README.md): this test reads the file as data only (shape, split, pages, import);
failure messages name question ids only, never a question. The fast tests read the evidence pages from
evidence_pages_heldout6.json (written by build_analyst_questions_heldout6.py from parse_filing's text); the slow
test parses the four filings (cached under /tmp by the build script) and checks every snippet on its page.
"""

import importlib.util
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from _question_fixtures import narrative_import_misses

DATA = Path(__file__).parent / "data" / "external"
FILE = DATA / "analyst_questions_heldout6_narrative.jsonl"
PAGES = json.loads((DATA / "evidence_pages_heldout6.json").read_text(encoding="utf-8"))
RECORDS = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
CORPUS = Path(os.environ.get("FINRAG_CORPUS", "/work/shared/corpus"))
DOCS = {"EBAY_2015_10K", "EBAY_2017_10K", "APPLE_2015_10K", "ORACLE_2015_10K"}
COMPANY = {"EBAY": "eBay", "APPLE": "Apple", "ORACLE": "Oracle"}
FIELDS = {"financebench_id", "company", "doc_name", "question_type", "question_category", "question", "answer",
          "evidence", "justification", "split"}
# earlier FinanceBench-format sets that are not held out (only their ids are read); the held-out narrative set
# heldout5 numbers its 16-24 questions from analyst_301, below this set's analyst_601 on
EARLIER_SETS = ("analyst_questions.jsonl", "analyst_questions_dev.jsonl", "analyst_questions_heldout.jsonl",
                "analyst_questions_heldout2.jsonl")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _build():
    spec = importlib.util.spec_from_file_location("build6", DATA / "build_analyst_questions_heldout6.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _failed_checks(r: dict) -> list[str]:
    """The names of the checks one record fails (names only: a message must not print a held-out question)."""
    failed = []

    def check(name: str, ok: bool) -> None:
        if not ok:
            failed.append(name)

    check("id", bool(re.fullmatch(r"analyst_6\d{2}", r.get("financebench_id", ""))))
    check("fields", set(r) == FIELDS)
    check("split", r.get("split") == "heldout6")
    check("category", r.get("question_category") == "narrative")
    check("question_type", r.get("question_type") == "novel-generated")
    check("doc", r.get("doc_name") in DOCS)
    check("company", r.get("company") == COMPANY.get(r.get("doc_name", "").split("_")[0]))
    check("question", len(_norm(r.get("question", ""))) >= 20 and r.get("question", "").rstrip().endswith("?"))
    check("justification", bool(r.get("justification", "").strip()))
    # one to three sentences ("U.S." and decimals are no sentence ends)
    ends = re.findall(r"(?<!\bU\.S)(?<!\bU)[.!?](?:\s+[A-Z\d$(]|\s*$)", r.get("answer", ""))
    check("one to three sentences", 1 <= len(ends) <= 3)
    check("evidence", bool(r.get("evidence")))
    for e in r.get("evidence") or []:
        check("evidence fields", set(e) == {"doc_name", "evidence_page_num", "evidence_text"})
        check("evidence doc", e.get("doc_name") == r.get("doc_name"))
        page = e.get("evidence_page_num")
        n_pages = PAGES.get(r.get("doc_name"), {}).get("n_pages", 0)
        # 0-indexed: the parser's page_number - 1, so the last page is n_pages - 1
        check("evidence page", isinstance(page, int) and 0 <= page < n_pages)
        check("evidence text", len(_norm(e.get("evidence_text", ""))) >= 15)
    return failed


def test_10_to_12_narrative_questions_two_or_three_per_filing():
    assert 10 <= len(RECORDS) <= 12
    per_filing = Counter(r["doc_name"] for r in RECORDS)
    assert set(per_filing) == DOCS
    assert min(per_filing.values()) >= 2 and max(per_filing.values()) <= 3, per_filing


def test_schema_split_and_fresh_unique_ids():
    ids = [r["financebench_id"] for r in RECORDS]
    assert len(set(ids)) == len(ids)
    earlier = {json.loads(line).get("financebench_id") for name in EARLIER_SETS if (DATA / name).exists()
               for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()}
    assert sorted(set(ids) & earlier) == []                  # ids only are compared, never questions
    failures = {r["financebench_id"]: _failed_checks(r) for r in RECORDS}
    assert {fid: checks for fid, checks in failures.items() if checks} == {}


@pytest.mark.parametrize(("change", "failed"), [
    ({"split": "heldout5"}, ["split"]),
    ({"question_category": "metric"}, ["category"]),
    ({"company": "Apple"}, ["company"]),
    ({"answer": "It rose. On fees. And ads. And tickets."}, ["one to three sentences"]),
    ({"evidence": []}, ["evidence"]),
    ({"financebench_id": "analyst_301"}, ["id"]),
])
def test_the_record_checks_catch_a_broken_record(change, failed):
    ebay = next(r for r in RECORDS if r["doc_name"] == "EBAY_2015_10K")
    assert _failed_checks(ebay) == []
    assert _failed_checks({**ebay, **change}) == failed


def test_a_filing_outside_the_four_is_caught_with_each_of_its_evidence_rows():
    r = next(r for r in RECORDS if r["doc_name"] == "EBAY_2015_10K")
    other_filing = "EBAY_2016_10K"                            # a filing of another set (its name only)
    broken = {**r, "doc_name": other_filing}
    assert _failed_checks(broken) == ["doc"] + ["evidence doc", "evidence page"] * len(r["evidence"])


def test_a_1_indexed_page_past_the_end_is_caught():
    r = RECORDS[0]
    last = PAGES[r["doc_name"]]["n_pages"]                    # 1-indexed last page = one past the 0-indexed end
    broken = {**r, "evidence": [{**r["evidence"][0], "evidence_page_num": last}]}
    assert _failed_checks(broken) == ["evidence page"]


def _snippets_off_their_pages(pages_of: dict[str, dict[int, str]]) -> list[tuple[str, int]]:
    """(id, 0-indexed page) of every evidence text not on its page (1-indexed in the parser); ids only."""
    return [(r["financebench_id"], e["evidence_page_num"]) for r in RECORDS for e in r["evidence"]
            if _norm(e["evidence_text"]) not in _norm(pages_of[r["doc_name"]].get(e["evidence_page_num"] + 1, ""))]


def test_evidence_texts_are_on_their_pages_of_the_fixture():
    assert set(PAGES) == DOCS
    assert _snippets_off_their_pages({doc: {int(n): t for n, t in entry["pages"].items()}
                                      for doc, entry in PAGES.items()}) == []
    # a snippet moved to the next page is caught (the check is not vacuous)
    moved = {doc: {int(n) + 1: t for n, t in entry["pages"].items()} for doc, entry in PAGES.items()}
    assert len(_snippets_off_their_pages(moved)) == sum(len(r["evidence"]) for r in RECORDS)


def test_file_is_the_build_scripts_output():
    built = _build().narrative_records()
    assert [b == r for b, r in zip(built, RECORDS, strict=True)] == [True] * len(RECORDS)


def test_financebench_import_accepts_every_question_as_narrative_with_its_pages():
    assert narrative_import_misses(FILE, RECORDS, PAGES, "heldout6") == []


@pytest.mark.slow
def test_evidence_texts_are_on_their_pages_of_parse_filing_and_the_fixture_is_current():
    """The four filings as parse_filing reads them now (cached by the build script): every snippet on its page, and
    the fixture's pages are the parser's text (a parser change that moves a page shows here)."""
    build = _build()
    build.CORPUS = CORPUS
    if not all((CORPUS / "robustness2" / f"{doc}.pdf").exists() for doc in DOCS):
        pytest.skip(f"no corpus under {CORPUS} (set FINRAG_CORPUS)")
    fixture, missing = build.narrative_pages()
    assert [m.split(":")[0] for m in missing] == []
    assert fixture == PAGES
