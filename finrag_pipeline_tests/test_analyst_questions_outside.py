"""The held-out analysts' sets over 10-Ks outside the demo (issue 26), one table row per set:
analyst_questions_heldout3_outside.jsonl (the fourth set), analyst_questions_heldout4_outside.jsonl (the fifth)
and analyst_questions_heldout6_outside.jsonl (the seventh).

Reads the held-out files as data only: their shape, their filings (in the corpus manifests, with their sha256, none
used by an earlier set), figure answers the project's figure parser reads, and the arithmetic of `checked`. No
answerer, retriever or benchmark runs here. Failure messages name ids only, never a question
(data/external/README.md).
"""

import hashlib
import importlib.util
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from finrag_pipeline.core.numbers import parse_figures

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "external"
CORPUS = Path(os.environ.get("FINRAG_CORPUS", "/work/shared/corpus"))
FIELDS = {"id", "filing", "kind", "question", "answer", "checked"}
KINDS = {"metric", "judgement", "lookup"}
# company-years of the demo's samples and of the first outside batches (benchmarks/calculator_outside_questions.jsonl)
DEMO_AND_FIRST_OUTSIDE = {"COSTCO_2020", "INTEL_2020", "NIKE_2020", "WALMART_2021", "ORACLE_2019",
                          "BOSTONPROPERTIES_2015", "APPLE_2021", "APPLE_2022", "AMAZON_2022", "BOEING_2021",
                          "MICROSOFT_2022", "APPLE_2024", "AMAZON_2024", "NVIDIA_2025"}
HELDOUT3_FILINGS = {"NETFLIX_2020", "VERIZON_2019", "LOCKHEEDMARTIN_2019", "MCDONALDS_2022", "FOOTLOCKER_2022",
                    "GENERALMILLS_2021", "FEDEX_2023"}
FACT_LAYER_FILINGS = {"PEPSICO_2020", "SALESFORCE_2023", "EBAY_2019", "KRAFTHEINZ_2020", "CVSHEALTH_2020",
                      "PG_E_2020", "AES_2021", "BLOCK_2017", "ORACLE_2016", "APPLE_2017", "PG_E_2018", "AES_2016"}
HELDOUT4_FILINGS = frozenset({"robustness2/EBAY_2016_10K.pdf", "robustness2/APPLE_2019_10K.pdf",
                              "robustness2/ORACLE_2017_10K.pdf", "robustness2/FOOTLOCKER_2023_10K.pdf",
                              "robustness2/AES_2015_10K.pdf"})


@dataclass(frozen=True)
class OutsideSet:
    name: str                        # the file's stem suffix and the build script's
    id_prefix: str
    size: tuple[int, int]            # questions, inclusive
    filings: frozenset[str] | None   # the filings its brief named; None: any fresh robustness filing
    n_filings: tuple[int, int]
    per_filing: tuple[int, int]
    used: frozenset[str]             # company-years written on before it (none may reappear)
    earlier_files: tuple[str, ...]   # files (from the repo root) whose `filing` fields it must not share
    broken_filing: tuple[str, tuple[str, ...]]   # a filing that breaks a record, and the checks that say so

    @property
    def records(self) -> list[dict]:
        path = DATA / f"analyst_questions_{self.name}_outside.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def build(self):
        return _load(f"build_analyst_questions_{self.name}")


SETS = {
    "heldout3": OutsideSet(
        "heldout3", "h3", (40, 50), None, (6, 8), (5, 50), frozenset(DEMO_AND_FIRST_OUTSIDE),
        ("benchmarks/calculator_outside_questions.jsonl",),
        ("robustness/COSTCO_2020_10K.pdf", ("fresh filing",))),
    "heldout4": OutsideSet(
        "heldout4", "h4", (35, 40),
        HELDOUT4_FILINGS,
        (5, 5), (7, 8), frozenset(DEMO_AND_FIRST_OUTSIDE | HELDOUT3_FILINGS | FACT_LAYER_FILINGS),
        ("benchmarks/calculator_outside_questions.jsonl", "benchmarks/fact_layer_outside.jsonl",
         "benchmarks/fact_layer_outside_validation.jsonl",
         "finrag_pipeline_tests/data/external/analyst_questions_heldout3_outside.jsonl"),
        ("robustness2/AES_2016_10K.pdf", ("filing", "fresh filing"))),
    # the seventh set: 4 filings its brief named, none used before (heldout4's company-years are in `used`: its
    # file is not read here, the test of its own row covers it)
    "heldout6": OutsideSet(
        "heldout6", "h6", (28, 32),
        frozenset({"robustness2/EBAY_2015_10K.pdf", "robustness2/EBAY_2017_10K.pdf",
                   "robustness2/APPLE_2015_10K.pdf", "robustness2/ORACLE_2015_10K.pdf"}),
        (4, 4), (7, 8),
        frozenset(DEMO_AND_FIRST_OUTSIDE | HELDOUT3_FILINGS | FACT_LAYER_FILINGS
                  | {Path(f).stem.removesuffix("_10K") for f in HELDOUT4_FILINGS}),
        ("benchmarks/calculator_outside_questions.jsonl", "benchmarks/fact_layer_outside.jsonl",
         "benchmarks/fact_layer_outside_validation.jsonl",
         "finrag_pipeline_tests/data/external/analyst_questions_heldout3_outside.jsonl"),
        ("robustness2/APPLE_2019_10K.pdf", ("filing", "fresh filing"))),
}
each_set = pytest.mark.parametrize("qs", list(SETS.values()), ids=list(SETS))


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


def _failed_checks(qs: OutsideSet, r: dict) -> list[str]:
    """The names of the checks one record fails (names only: a message must not print a held-out question)."""
    failed = []

    def check(name: str, ok: bool) -> None:
        if not ok:
            failed.append(name)

    filing = r.get("filing", "")
    check("fields", set(r) == FIELDS)
    check("id", bool(re.fullmatch(rf"{qs.id_prefix}_\d{{2}}", r.get("id", ""))))
    check("kind", r.get("kind") in KINDS)
    check("filing", filing in qs.filings if qs.filings else
          bool(re.fullmatch(r"robustness2?/[A-Z_]+_\d{4}_10K\.pdf", filing)))
    check("fresh filing", _company_year(filing) not in qs.used)
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


@each_set
def test_the_set_has_its_size_filings_and_mix(qs):
    records = qs.records
    assert qs.size[0] <= len(records) <= qs.size[1]
    per_filing = Counter(r["filing"] for r in records)
    assert qs.n_filings[0] <= len(per_filing) <= qs.n_filings[1], per_filing
    assert qs.per_filing[0] <= min(per_filing.values()) and max(per_filing.values()) <= qs.per_filing[1], per_filing
    if qs.filings:
        assert set(per_filing) == qs.filings
        for filing in qs.filings:                                    # every named filing gets every kind
            assert {r["kind"] for r in records if r["filing"] == filing} == KINDS, filing
    mix = Counter(r["kind"] for r in records)
    assert set(mix) == KINDS
    share = {kind: n / len(records) for kind, n in mix.items()}
    assert 0.5 <= share["metric"] <= 0.7 and 0.2 <= share["judgement"] <= 0.35 and 0.1 <= share["lookup"] <= 0.2, mix
    verdicts = Counter(r["answer"].split(".")[0] for r in records if r["kind"] == "judgement")
    # an always-yes (or always-no) answerer gets about half
    assert set(verdicts) == {"Yes", "No"} and abs(verdicts["Yes"] - verdicts["No"]) <= 2, verdicts


@each_set
def test_ids_run_in_order_and_every_record_is_well_formed(qs):
    ids = [r["id"] for r in qs.records]
    assert ids == [f"{qs.id_prefix}_{n:02d}" for n in range(1, len(ids) + 1)]
    assert {r["id"]: f for r in qs.records if (f := _failed_checks(qs, r))} == {}


@each_set
def test_no_filing_of_an_earlier_set(qs):
    mine = {r["filing"] for r in qs.records}
    for name in qs.earlier_files:
        used = _filings_of(ROOT / name)
        assert used and not used & mine, name


@each_set
@pytest.mark.parametrize(("change", "failed"), [
    ({"kind": "narrative"}, ["kind"]),
    ({"answer": "about 18 or 19%"}, ["one figure"]),
    ({"answer": "Operating margin was 18.3%."}, []),                    # one figure in a sentence still reads
    ({"checked": "taken from the income statement"}, ["sources", "arithmetic written out"]),
    ({"id": "out01"}, ["id"]),
    ({"filing": "BROKEN"}, ["filing"]),                                  # replaced by the set's own broken filing
])
def test_the_record_checks_catch_a_broken_metric(qs, change, failed):
    if change.get("filing") == "BROKEN":
        change, failed = {"filing": qs.broken_filing[0]}, list(qs.broken_filing[1])
    metric = next(r for r in qs.records if r["kind"] == "metric")
    assert _failed_checks(qs, metric) == []
    assert _failed_checks(qs, {**metric, **change}) == failed


@each_set
@pytest.mark.parametrize("answer", ["The quick ratio was 0.62.", "No.", "Maybe. 0.62"])
def test_a_judgement_must_commit_first_and_give_figures(qs, answer):
    judgement = next(r for r in qs.records if r["kind"] == "judgement")
    assert _failed_checks(qs, judgement) == []
    assert _failed_checks(qs, {**judgement, "answer": answer}) == ["verdict first, with figures"]


@each_set
def test_every_arithmetic_step_is_right_and_gives_the_answer(qs):
    """`checked` steps re-evaluated by the second set's checker; a figure answer equals the last step to the
    decimals it shows; the file is the build script's output (a hand edit or an unbuilt change fails)."""
    build = qs.build()
    assert build.check_records() == []
    assert build.records() == qs.records
    check_arithmetic = _load("build_analyst_questions_dev_heldout").check_arithmetic
    n_steps = {r["id"]: check_arithmetic(r["checked"].partition(" | ")[0])[0] for r in qs.records}
    assert [i for r in qs.records if r["kind"] != "lookup" and n_steps[(i := r["id"])] == 0] == []


@each_set
def test_the_answer_check_catches_a_wrong_answer(qs):
    build = qs.build()
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


@each_set
def test_every_filing_is_in_the_corpus_manifests_with_its_sha256(qs):
    manifest = _manifest()
    if not manifest:
        pytest.skip(f"no corpus manifests under {CORPUS} (set FINRAG_CORPUS)")
    filings = sorted({r["filing"] for r in qs.records})
    assert [f for f in filings if f not in manifest] == []
    digests = {f: hashlib.sha256((CORPUS / f).read_bytes()).hexdigest() for f in filings}
    assert [f for f in filings if digests[f] != manifest[f]["sha256"]] == []


@pytest.mark.slow
@each_set
def test_every_operand_is_on_its_page_in_the_parser_and_in_pypdfium2(qs):
    """Parses the set's filings (20-30 s on 2 cores; cached under /tmp): every operand's row label and figure on
    one line of its page as the project's parser prints it, and the figure on the same page of pypdfium2's text."""
    if not _manifest():
        pytest.skip(f"no corpus under {CORPUS}")
    build = qs.build()
    build.CORPUS = CORPUS
    assert [p.split(":")[0] for p in build.verify_pages()] == []


@pytest.mark.slow
@each_set
def test_the_page_check_catches_an_operand_on_the_wrong_page(qs):
    """One operand moved a page on: the page check names that question (parses one filing if not cached)."""
    if not _manifest():
        pytest.skip(f"no corpus under {CORPUS}")
    build = qs.build()
    build.CORPUS = CORPUS
    row = next(r for r in build.QUESTIONS if r["kind"] == "lookup")
    page, *rest = row["_sources"][0]
    row["_sources"][0] = (page + 1, *rest)
    build.QUESTIONS[:] = [row]
    assert {p.split(":")[0] for p in build.verify_pages()} == {row["id"]}
