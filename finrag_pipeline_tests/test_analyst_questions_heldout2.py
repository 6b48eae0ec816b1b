"""The fresh held-out analysts' set (issue 26): analyst_questions_heldout2.jsonl (data/external/README.md).

This test reads the held-out file as data (schema, split, pages, duplicates, import); failure messages name
question ids only, never a question. Pages come from data/external/evidence_pages_heldout2.json (the evidence
pages as the project's parser numbers and reads them, written by build_analyst_questions_heldout2.py), so the
fast tests run without parsing the filings; the slow tests check the same against the ingest stage and
against core.pages of an ingested home (FINRAG_DEMO_HOME, a copy of the demo home) when there is one.
"""

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from _question_fixtures import SAMPLE_DOCS, demo_home_pages, fixture_context

from finrag_pipeline.core.qa.importers import import_financebench

DATA = Path(__file__).parent / "data" / "external"
FILE = DATA / "analyst_questions_heldout2.jsonl"
PAGES = json.loads((DATA / "evidence_pages_heldout2.json").read_text(encoding="utf-8"))
RECORDS = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
OTHER_FILES = ("analyst_questions.jsonl", "analyst_questions_dev.jsonl", "analyst_questions_heldout.jsonl")
COMPANY = {"APPLE": "Apple", "aapl": "Apple", "AMAZON": "Amazon", "amzn": "Amazon", "BOEING": "Boeing",
           "MICROSOFT": "Microsoft", "nvda": "NVIDIA"}
FIELDS = {"financebench_id", "company", "doc_name", "question_type", "question_category", "question", "answer",
          "evidence", "justification", "split"}
FB_TYPE = {"metric": "metrics-generated", "lookup": "domain-relevant", "judgement": "domain-relevant",
           "narrative": "novel-generated"}
PROJECT_TYPE = {"metric": "metric", "lookup": "factual", "judgement": "judgement", "narrative": "narrative"}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _other_records() -> list[dict]:
    return [json.loads(line) for name in OTHER_FILES
            for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def imported():
    return import_financebench(FILE, [fixture_context(doc, PAGES[doc]) for doc in sorted(PAGES)])


def test_at_least_44_questions_over_every_filing_in_the_asked_mix():
    assert len(RECORDS) >= 44
    assert {r["doc_name"] for r in RECORDS} == SAMPLE_DOCS
    mix = Counter(r["question_category"] for r in RECORDS)
    assert set(mix) <= set(PROJECT_TYPE)
    assert mix["metric"] >= 18 and mix["judgement"] >= 9 and mix["narrative"] >= 12, mix
    per_filing = Counter(r["doc_name"] for r in RECORDS)
    assert min(per_filing.values()) >= 4, per_filing


def _failed_checks(record: dict) -> list[str]:
    """The names of the checks one record fails (names only: a message must not print a held-out question)."""
    r, failed = record, []

    def check(name: str, ok: bool) -> None:
        if not ok:
            failed.append(name)

    check("id", bool(re.fullmatch(r"analyst_\d{3}", r["financebench_id"])))
    check("fields", set(r) in (FIELDS, FIELDS - {"justification"}))
    check("split", r.get("split") == "heldout2")
    check("company", r.get("company") == COMPANY.get(re.split(r"[_-]", r.get("doc_name", ""))[0]))
    check("question_type", r.get("question_type") == FB_TYPE.get(r.get("question_category")))
    check("question", len(_norm(r.get("question", ""))) >= 20)
    check("answer", bool(r.get("answer", "").strip()))
    check("evidence", bool(r.get("evidence")))                                   # every question is answerable
    for e in r.get("evidence") or []:
        check("evidence fields", set(e) == {"doc_name", "evidence_page_num", "evidence_text"})
        check("evidence doc", e.get("doc_name") == r.get("doc_name"))
        check("evidence page", isinstance(e.get("evidence_page_num"), int) and e["evidence_page_num"] >= 0)
        check("evidence text", len(_norm(e.get("evidence_text", ""))) >= 15)
    category, answer, just = r.get("question_category"), r.get("answer", ""), r.get("justification", "")
    if category in ("metric", "judgement"):
        check("justification", bool(just))
    if category == "metric":
        check("arithmetic written out", bool(re.search(r"\d\s*[-+*/]\s*\(?\d", just)))
    if category == "judgement":
        check("verdict first, with figures", bool(re.match(r"(?:Yes|No)\.", answer) and re.search(r"\d", answer)))
    if category == "narrative":
        # one or two sentences ("U.S." and decimals are no sentence ends)
        ends = re.findall(r"(?<!\bU\.S)(?<!\bU)[.!?](?:\s+[A-Z\d$(]|\s*$)", answer)
        check("one or two sentences", 1 <= len(ends) <= 2)
    return failed


def test_schema_split_and_ids():
    ids = [r["financebench_id"] for r in RECORDS]
    assert len(set(ids)) == len(ids)
    assert not set(ids) & {r["financebench_id"] for r in _other_records()}       # no id of the earlier sets
    failures = {r["financebench_id"]: _failed_checks(r) for r in RECORDS}
    assert {fid: checks for fid, checks in failures.items() if checks} == {}


@pytest.mark.parametrize(("change", "failed"), [
    ({"split": "heldout"}, ["split"]),
    ({"company": "Apple"}, ["company"]),                       # the record is Boeing's
    ({"answer": "Boeing's quick ratio was 0.23."}, ["verdict first, with figures"]),
    ({"answer": "No."}, ["verdict first, with figures"]),
    ({"justification": ""}, ["justification"]),
    ({"evidence": []}, ["evidence"]),
])
def test_the_record_checks_catch_a_broken_record(change, failed):
    judgement = next(r for r in RECORDS if r["question_category"] == "judgement" and r["doc_name"] == "BOEING_2021_10K")
    assert _failed_checks(judgement) == []
    assert _failed_checks({**judgement, **change}) == failed


def test_the_sentence_count_reads_abbreviations_and_decimals():
    narrative = {"financebench_id": "analyst_999", "company": "Apple", "doc_name": "APPLE_2022_10K",
                 "question_type": "novel-generated", "question_category": "narrative", "question": "What drove X in 2022?",
                 "evidence": [{"doc_name": "APPLE_2022_10K", "evidence_page_num": 1, "evidence_text": "a" * 20}],
                 "split": "heldout2"}
    two = "Sales rose 8.2% to $394.3 billion on iPhone. The U.S. dollar's strength hurt."
    assert _failed_checks({**narrative, "answer": two}) == []
    assert _failed_checks({**narrative, "answer": two + " A third. A fourth."}) == ["one or two sentences"]


def test_no_question_repeats_another_set_or_itself():
    def key(text: str) -> str:
        return re.sub(r"[^a-z0-9%]+", " ", text.lower()).strip()

    mine = [key(r["question"]) for r in RECORDS]
    assert len(set(mine)) == len(mine)
    others = {key(r["question"]) for r in _other_records()}
    assert [r["financebench_id"] for r, k in zip(RECORDS, mine, strict=True) if k in others] == []


def _content_words(text: str) -> set[str]:
    stop = {"the", "and", "what", "was", "for", "fiscal", "round", "one", "decimal", "place", "its", "did", "from",
            "with", "usd", "millions", "answer", "year"}
    return {w for w in re.findall(r"[a-z0-9&%]+", text.lower()) if len(w) > 2 and w not in stop}


def _overlap(a: str, b: str) -> float:
    wa, wb = _content_words(a), _content_words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def test_no_question_is_a_near_copy_of_an_earlier_question_on_its_filing():
    """The set is fresh: no question shares 60% or more of its content words with an earlier question of the same
    filing (the closest pair, written apart, shares 50%), and no figure answer repeats an earlier answer there."""
    others = _other_records()
    near = [(r["financebench_id"], o["financebench_id"]) for r in RECORDS for o in others
            if o["doc_name"] == r["doc_name"] and _overlap(r["question"], o["question"]) >= 0.6]
    assert near == []
    same_figure = [(r["financebench_id"], o["financebench_id"]) for r in RECORDS for o in others
                   if r["question_category"] in ("metric", "lookup") and o["doc_name"] == r["doc_name"]
                   and _norm(o["answer"]) == _norm(r["answer"])]
    assert same_figure == []


def test_the_overlap_measure():
    assert _overlap("What drove Apple's total net sales growth in fiscal 2022?",
                    "What drove the growth in Apple's total net sales in FY 2022?") >= 0.6
    assert _overlap("What was Apple's DPO in FY2022?", "What drove Apple's Services gross margin?") < 0.3


def test_every_justification_step_is_right():
    """The build script's checker re-evaluates each 'arithmetic = value' step (a typo fails)."""
    check = _load("build_analyst_questions_dev_heldout").check_arithmetic
    for r in RECORDS:
        n_checked, problems = check(r.get("justification", ""))
        assert problems == [], r["financebench_id"]
        if r["question_category"] == "metric":
            assert n_checked >= 1, r["financebench_id"]


def _snippets_off_their_pages(pages_of: dict[str, dict[int, str]]) -> list[tuple[str, int]]:
    """(id, 0-indexed page) of every evidence text of the filings in ``pages_of`` (doc -> page -> text) that is
    not on its page (ids only: a message must not print held-out text)."""
    return [(r["financebench_id"], e["evidence_page_num"]) for r in RECORDS if r["doc_name"] in pages_of
            for e in r["evidence"]
            if _norm(e["evidence_text"]) not in _norm(pages_of[r["doc_name"]].get(e["evidence_page_num"] + 1, ""))]


def test_evidence_texts_are_on_their_pages():
    assert set(PAGES) == SAMPLE_DOCS
    assert _snippets_off_their_pages({doc: {int(n): t for n, t in entry["pages"].items()}
                                      for doc, entry in PAGES.items()}) == []


def test_file_and_fixture_are_the_build_scripts_output():
    """A question edited in the build script but not rebuilt (or edited in the file by hand) fails here."""
    built = _load("build_analyst_questions_heldout2").records()
    assert [r["financebench_id"] for r in built] == [r["financebench_id"] for r in RECORDS]
    assert all(b == r for b, r in zip(built, RECORDS, strict=True)), \
        [r["financebench_id"] for b, r in zip(built, RECORDS, strict=True) if b != r]
    evidence_pages = {(r["doc_name"], e["evidence_page_num"] + 1) for r in RECORDS for e in r["evidence"]}
    assert evidence_pages == {(doc, int(n)) for doc, entry in PAGES.items() for n in entry["pages"]}


def test_imports_with_every_evidence_page_found_and_the_split_kept(imported):
    assert imported.log == [{"stage": "import", "reason": "imported", "count": len(RECORDS)}]
    by_id = {i.metadata["financebench_id"]: i for i in imported.items}
    assert set(by_id) == {r["financebench_id"] for r in RECORDS}
    wrong = []
    for r in RECORDS:
        item = by_id[r["financebench_id"]]
        ok = (item.filing_id == PAGES[r["doc_name"]]["filing_id"] and item.status == "accepted"
              and item.question_type == PROJECT_TYPE[r["question_category"]]
              and item.metadata["external_set"] == "analyst_questions_heldout2"
              and item.metadata["split"] == "heldout2" and item.metadata["question_category"] == r["question_category"]
              and [sorted({p.page for p in g}) for g in item.evidence] == [[e["evidence_page_num"] + 1]
                                                                           for e in r["evidence"]]
              and all(ev["overlap"] >= 0.95 for ev in item.metadata["evidence_pages"])
              and item.computation == r.get("justification"))
        if not ok:
            wrong.append(r["financebench_id"])                   # ids only: no held-out text in the message
    assert wrong == []


def test_figure_answers_become_answer_values_and_verdicts_choices(imported):
    """Metric and lookup answers are one figure (the importer's contract holds the value); a judgement commits
    to yes or no first; a narrative is never matched as one figure."""
    wrong = []
    for item in imported.items:
        if item.question_type in ("metric", "factual"):
            ok = len(item.answer_values) == 1
        elif item.question_type == "judgement":
            lead = item.reference_answer.split(".")[0].strip().lower()
            ok = lead in ("yes", "no") and item.answer_choice == lead and item.answer_values == []
        else:
            ok = item.answer_values == [] and item.answer_choice is None
        if not ok:
            wrong.append(item.metadata["financebench_id"])      # ids only: no held-out text in the message
    assert wrong == []


@pytest.mark.slow
@pytest.mark.parametrize("doc", sorted(SAMPLE_DOCS))
def test_evidence_texts_are_on_their_pages_in_the_parsed_filing(doc):
    """Against the ingest stage itself: a parser change that moves page breaks shows up here, and the
    fixture must then be rebuilt (build_analyst_questions_heldout2.py)."""
    from _qa_sample import load_sample

    sample = load_sample(doc, use_ingest=True)
    assert _snippets_off_their_pages({doc: {p.page_number: p.text for p in sample.pages}}) == []
    assert sample.meta.filing_id == PAGES[doc]["filing_id"] and len(sample.pages) == PAGES[doc]["n_pages"]


@pytest.mark.slow
def test_evidence_texts_are_on_their_pages_in_the_demo_warehouse():
    """In an ingested home (a copy of the demo home), core.pages holds every snippet on its page."""
    pages = demo_home_pages()
    if pages is None:
        pytest.skip("no readable ingested home with the 8 sample filings (set FINRAG_DEMO_HOME to a copy of the demo home)")
    assert _snippets_off_their_pages({doc: pages[doc] for doc in SAMPLE_DOCS}) == []
