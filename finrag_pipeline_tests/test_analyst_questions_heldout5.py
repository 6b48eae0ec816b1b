"""The held-out NARRATIVE analysts' set (issue 26): analyst_questions_heldout5_narrative.jsonl.

HELD OUT (data/external/README.md): this test reads the file as data only (shape, split, pages, import);
failure messages name question ids only, never a question. The fast tests read the evidence pages from
evidence_pages_heldout5.json (written by build_analyst_questions_heldout5.py from core.pages of the demo home);
the slow test checks the snippets against core.pages of an ingested home (FINRAG_DEMO_HOME) when there is one.
"""

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from _question_fixtures import SAMPLE_DOCS, demo_home_pages, narrative_import_misses

DATA = Path(__file__).parent / "data" / "external"
FILE = DATA / "analyst_questions_heldout5_narrative.jsonl"
PAGES = json.loads((DATA / "evidence_pages_heldout5.json").read_text(encoding="utf-8"))
RECORDS = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
COMPANY = {"APPLE": "Apple", "aapl": "Apple", "AMAZON": "Amazon", "amzn": "Amazon", "BOEING": "Boeing",
           "MICROSOFT": "Microsoft", "nvda": "NVIDIA"}
FIELDS = {"financebench_id", "company", "doc_name", "question_type", "question_category", "question", "answer",
          "evidence", "justification", "split"}
EARLIER_SETS = ("analyst_questions.jsonl", "analyst_questions_dev.jsonl", "analyst_questions_heldout.jsonl",
                "analyst_questions_heldout2.jsonl", "analyst_questions_heldout3_outside.jsonl",
                "analyst_questions_heldout4_outside.jsonl")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _failed_checks(r: dict) -> list[str]:
    """The names of the checks one record fails (names only: a message must not print a held-out question)."""
    failed = []

    def check(name: str, ok: bool) -> None:
        if not ok:
            failed.append(name)

    check("id", bool(re.fullmatch(r"analyst_\d{3}", r.get("financebench_id", ""))))
    check("fields", set(r) == FIELDS)
    check("split", r.get("split") == "heldout5")
    check("category", r.get("question_category") == "narrative")
    check("question_type", r.get("question_type") == "novel-generated")
    check("company", r.get("company") == COMPANY.get(re.split(r"[_-]", r.get("doc_name", ""))[0]))
    check("question", len(_norm(r.get("question", ""))) >= 20 and r.get("question", "").rstrip().endswith("?"))
    check("justification", bool(r.get("justification", "").strip()))
    # one to three sentences ("U.S." and decimals are no sentence ends)
    ends = re.findall(r"(?<!\bU\.S)(?<!\bU)[.!?](?:\s+[A-Z\d$(]|\s*$)", r.get("answer", ""))
    check("one to three sentences", 1 <= len(ends) <= 3)
    check("evidence", bool(r.get("evidence")))
    for e in r.get("evidence") or []:
        check("evidence fields", set(e) == {"doc_name", "evidence_page_num", "evidence_text"})
        check("evidence doc", e.get("doc_name") == r.get("doc_name"))
        check("evidence page", isinstance(e.get("evidence_page_num"), int) and e["evidence_page_num"] >= 0)
        check("evidence text", len(_norm(e.get("evidence_text", ""))) >= 15)
    return failed


def test_16_to_24_narrative_questions_spread_over_every_demo_filing():
    assert 16 <= len(RECORDS) <= 24
    per_filing = Counter(r["doc_name"] for r in RECORDS)
    assert set(per_filing) == SAMPLE_DOCS
    assert min(per_filing.values()) >= 2, per_filing


def test_schema_split_ids_and_fresh_ids():
    ids = [r["financebench_id"] for r in RECORDS]
    assert len(set(ids)) == len(ids)
    assert all(int(i.split("_")[1]) >= 301 for i in ids)
    earlier = {json.loads(line).get("financebench_id") for name in EARLIER_SETS if (DATA / name).exists()
               for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()}
    assert sorted(set(ids) & earlier) == []                  # ids only are compared, never questions
    failures = {r["financebench_id"]: _failed_checks(r) for r in RECORDS}
    assert {fid: checks for fid, checks in failures.items() if checks} == {}


@pytest.mark.parametrize(("change", "failed"), [
    ({"split": "heldout2"}, ["split"]),
    ({"question_category": "metric"}, ["category"]),
    ({"company": "Boeing"}, ["company"]),
    ({"answer": "It rose. On iPhone. And Mac. And iPad."}, ["one to three sentences"]),
    ({"evidence": []}, ["evidence"]),
])
def test_the_record_checks_catch_a_broken_record(change, failed):
    apple = next(r for r in RECORDS if r["doc_name"] == "APPLE_2022_10K")
    assert _failed_checks(apple) == []
    assert _failed_checks({**apple, **change}) == failed


def _snippets_off_their_pages(pages_of: dict[str, dict[int, str]]) -> list[tuple[str, int]]:
    """(id, 0-indexed page) of every evidence text not on its page (1-indexed in core.pages); ids only."""
    return [(r["financebench_id"], e["evidence_page_num"]) for r in RECORDS if r["doc_name"] in pages_of
            for e in r["evidence"]
            if _norm(e["evidence_text"]) not in _norm(pages_of[r["doc_name"]].get(e["evidence_page_num"] + 1, ""))]


def test_evidence_texts_are_on_their_pages_of_the_fixture():
    assert set(PAGES) == SAMPLE_DOCS
    assert _snippets_off_their_pages({doc: {int(n): t for n, t in entry["pages"].items()}
                                      for doc, entry in PAGES.items()}) == []
    # a snippet moved to the next page is caught (the check is not vacuous)
    moved = {doc: {int(n) + 1: t for n, t in entry["pages"].items()} for doc, entry in PAGES.items()}
    assert len(_snippets_off_their_pages(moved)) == sum(len(r["evidence"]) for r in RECORDS)


def test_file_is_the_build_scripts_output():
    spec = importlib.util.spec_from_file_location("build5", DATA / "build_analyst_questions_heldout5.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.records()
    assert [b == r for b, r in zip(built, RECORDS, strict=True)] == [True] * len(RECORDS)


def test_financebench_import_accepts_every_question_as_narrative_with_its_pages():
    assert narrative_import_misses(FILE, RECORDS, PAGES, "heldout5") == []


@pytest.mark.slow
def test_evidence_texts_are_on_their_pages_in_the_demo_warehouse():
    """In an ingested home (a copy of the demo home), core.pages holds every snippet on its page."""
    pages = demo_home_pages()
    if pages is None:
        pytest.skip("no readable ingested home with the 8 sample filings (set FINRAG_DEMO_HOME to a copy of the demo home)")
    assert _snippets_off_their_pages({doc: pages[doc] for doc in SAMPLE_DOCS}) == []
