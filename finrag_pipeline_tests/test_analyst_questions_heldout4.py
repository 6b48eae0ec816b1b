"""The fifth held-out analysts' set, over five 10-Ks no set or benchmark used (issue 26):
analyst_questions_heldout4_outside.jsonl.

Reads the held-out file as data only: its shape, its filings (in the corpus manifests, with their sha256, none used
by an earlier question set or by the fact-layer benchmark), figure answers the project's figure parser reads, and
the arithmetic of `checked`. No answerer, retriever or benchmark runs here. Failure messages name ids only, never a
question (data/external/README.md).
"""

import hashlib
import importlib.util
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from finrag_pipeline.core.numbers import parse_figures

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "external"
FILE = DATA / "analyst_questions_heldout4_outside.jsonl"
RECORDS = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
CORPUS = Path(os.environ.get("FINRAG_CORPUS", "/work/shared/corpus"))
FIELDS = {"id", "filing", "kind", "question", "answer", "checked"}
KINDS = {"metric", "judgement", "lookup"}
# the five filings the brief named (robustness2/; their companies appear elsewhere in other years)
FILINGS = {"robustness2/EBAY_2016_10K.pdf", "robustness2/APPLE_2019_10K.pdf", "robustness2/ORACLE_2017_10K.pdf",
           "robustness2/FOOTLOCKER_2023_10K.pdf", "robustness2/AES_2015_10K.pdf"}
# filings an earlier question set was written on, the fourth set's, the fact-layer benchmark's (both files), and
# the demo's samples, by company-year
USED = {"COSTCO_2020", "INTEL_2020", "NIKE_2020", "WALMART_2021", "ORACLE_2019", "BOSTONPROPERTIES_2015",
        "APPLE_2021", "APPLE_2022", "AMAZON_2022", "BOEING_2021", "MICROSOFT_2022", "APPLE_2024", "AMAZON_2024",
        "NVIDIA_2025",
        "NETFLIX_2020", "VERIZON_2019", "LOCKHEEDMARTIN_2019", "MCDONALDS_2022", "FOOTLOCKER_2022",
        "GENERALMILLS_2021", "FEDEX_2023",
        "PEPSICO_2020", "SALESFORCE_2023", "EBAY_2019", "KRAFTHEINZ_2020", "CVSHEALTH_2020", "PG_E_2020", "AES_2021",
        "BLOCK_2017", "ORACLE_2016", "APPLE_2017", "PG_E_2018", "AES_2016"}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _company_year(filing: str) -> str:
    return Path(filing).stem.removesuffix("_10K")


def _filings_of(path: Path) -> set[str]:
    """The `filing` field of every row of a JSONL file (nothing else of it is read)."""
    return {json.loads(line)["filing"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def _failed_checks(r: dict) -> list[str]:
    """The names of the checks one record fails (names only: a message must not print a held-out question)."""
    failed = []

    def check(name: str, ok: bool) -> None:
        if not ok:
            failed.append(name)

    check("fields", set(r) == FIELDS)
    check("id", bool(re.fullmatch(r"h4_\d{2}", r.get("id", ""))))
    check("kind", r.get("kind") in KINDS)
    check("filing", r.get("filing") in FILINGS)
    check("fresh filing", _company_year(r.get("filing", "")) not in USED)
    check("question", len(r.get("question", "").split()) >= 8)
    answer, checked = r.get("answer", ""), r.get("checked", "")
    check("sources", bool(re.search(r"\bp\.\d+ ", checked.partition(" | ")[2])))      # page of every operand
    if r.get("kind") in ("metric", "lookup"):
        # one figure, read by THE figure parser (core.numbers), so a scorer can hold the value
        check("one figure", len(parse_figures(answer)) == 1)
    if r.get("kind") == "judgement":
        check("verdict first, with figures", bool(re.match(r"(?:Yes|No)\. ", answer)) and bool(parse_figures(answer)))
    if r.get("kind") in ("metric", "judgement"):
        check("arithmetic written out", bool(re.search(r"\d\s*[-+*/]\s*\(?\d", checked)))
    return failed


def test_35_to_40_questions_7_or_8_per_named_filing_in_the_asked_mix():
    assert 35 <= len(RECORDS) <= 40
    per_filing = Counter(r["filing"] for r in RECORDS)
    assert set(per_filing) == FILINGS and set(per_filing.values()) <= {7, 8}, per_filing
    mix = Counter(r["kind"] for r in RECORDS)
    assert set(mix) == KINDS
    share = {kind: n / len(RECORDS) for kind, n in mix.items()}
    assert 0.5 <= share["metric"] <= 0.7 and 0.2 <= share["judgement"] <= 0.35 and 0.1 <= share["lookup"] <= 0.2, mix
    for filing in FILINGS:                                    # every filing gets every kind
        assert {r["kind"] for r in RECORDS if r["filing"] == filing} == KINDS, filing
    verdicts = Counter(r["answer"].split(".")[0] for r in RECORDS if r["kind"] == "judgement")
    assert set(verdicts) == {"Yes", "No"} and abs(verdicts["Yes"] - verdicts["No"]) <= 2, verdicts


def test_ids_unique_and_every_record_well_formed():
    ids = [r["id"] for r in RECORDS]
    assert len(set(ids)) == len(ids)
    assert ids == [f"h4_{n:02d}" for n in range(1, len(ids) + 1)]
    assert {r["id"]: f for r in RECORDS if (f := _failed_checks(r))} == {}


def test_no_filing_of_an_earlier_outside_set_nor_of_the_fact_layer_benchmark():
    mine = {r["filing"] for r in RECORDS}
    for path in (ROOT / "benchmarks" / "calculator_outside_questions.jsonl",
                 ROOT / "benchmarks" / "fact_layer_outside.jsonl",
                 ROOT / "benchmarks" / "fact_layer_outside_validation.jsonl",
                 DATA / "analyst_questions_heldout3_outside.jsonl"):
        used = _filings_of(path)
        assert used and not used & mine, path.name


@pytest.mark.parametrize(("change", "failed"), [
    ({"kind": "narrative"}, ["kind"]),
    ({"filing": "robustness2/AES_2016_10K.pdf"}, ["filing", "fresh filing"]),
    ({"answer": "about 18 or 19%"}, ["one figure"]),
    ({"answer": "Operating margin was 18.3%."}, []),                    # one figure in a sentence still reads
    ({"checked": "taken from the income statement"}, ["sources", "arithmetic written out"]),
    ({"id": "h3_01"}, ["id"]),
])
def test_the_record_checks_catch_a_broken_metric(change, failed):
    metric = next(r for r in RECORDS if r["kind"] == "metric")
    assert _failed_checks(metric) == []
    assert _failed_checks({**metric, **change}) == failed


@pytest.mark.parametrize("answer", ["The quick ratio was 0.62.", "No.", "Maybe. 0.62"])
def test_a_judgement_must_commit_first_and_give_figures(answer):
    judgement = next(r for r in RECORDS if r["kind"] == "judgement")
    assert _failed_checks(judgement) == []
    assert _failed_checks({**judgement, "answer": answer}) == ["verdict first, with figures"]


def test_every_arithmetic_step_is_right_and_gives_the_answer():
    """`checked` steps re-evaluated by the second set's checker; a figure answer equals the last step to the
    decimals it shows; the file is the build script's output (a hand edit or an unbuilt change fails)."""
    build = _load("build_analyst_questions_heldout4")
    assert build.check_records() == []
    assert build.records() == RECORDS
    check_arithmetic = _load("build_analyst_questions_dev_heldout").check_arithmetic
    n_steps = {r["id"]: check_arithmetic(r["checked"].partition(" | ")[0])[0] for r in RECORDS}
    assert [i for r in RECORDS if r["kind"] != "lookup" and n_steps[(i := r["id"])] == 0] == []


def test_the_answer_check_catches_a_wrong_answer():
    build = _load("build_analyst_questions_heldout4")
    row = next(r for r in build.QUESTIONS if r["kind"] == "metric")
    row["answer"] = "99.9%"
    assert [p.split(":")[0] for p in build.check_records()] == [row["id"]]


def _manifest() -> dict[str, dict]:
    rows = {}
    for path in sorted(CORPUS.glob("robustness*/manifest.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                rows[entry["file"]] = entry
    return rows


def test_every_filing_is_in_the_corpus_manifests_with_its_sha256():
    manifest = _manifest()
    if not manifest:
        pytest.skip(f"no corpus manifests under {CORPUS} (set FINRAG_CORPUS)")
    filings = sorted({r["filing"] for r in RECORDS})
    assert [f for f in filings if f not in manifest] == []
    digests = {f: hashlib.sha256((CORPUS / f).read_bytes()).hexdigest() for f in filings}
    assert [f for f in filings if digests[f] != manifest[f]["sha256"]] == []


@pytest.mark.slow
def test_every_operand_is_on_its_page_in_the_parser_and_in_pypdfium2():
    """Parses the 5 filings (about 20 s on 2 cores; cached under /tmp/q4): every operand's row label and figure on
    one line of its page as the project's parser prints it, and the figure on the same page of pypdfium2's text."""
    if not _manifest():
        pytest.skip(f"no corpus under {CORPUS}")
    build = _load("build_analyst_questions_heldout4")
    build.CORPUS = CORPUS
    assert [p.split(":")[0] for p in build.verify_pages()] == []


@pytest.mark.slow
def test_the_page_check_catches_an_operand_on_the_wrong_page():
    """One operand moved a page on: the page check names that question (parses one filing if not cached)."""
    if not _manifest():
        pytest.skip(f"no corpus under {CORPUS}")
    build = _load("build_analyst_questions_heldout4")
    build.CORPUS = CORPUS
    row = next(r for r in build.QUESTIONS if r["kind"] == "lookup")
    page, *rest = row["_sources"][0]
    row["_sources"][0] = (page + 1, *rest)
    build.QUESTIONS[:] = [row]
    assert {p.split(":")[0] for p in build.verify_pages()} == {row["id"]}
