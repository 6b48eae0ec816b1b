"""mart_answer_agreement: the same figures as the CLI's (human_agreement.summaries), computed in SQL over
eval.answer_agreement, and every column described in the marts' yml."""

import re

import pytest
import yaml

from finrag_pipeline.core.evaluation import human_agreement as ha
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.warehouse import Warehouse

MART = REPO_ROOT / "dbt_metrics" / "models" / "marts" / "mart_answer_agreement.sql"
YML = REPO_ROOT / "dbt_metrics" / "models" / "marts" / "_marts.yml"


def mart_sql() -> str:
    """The model with its one source() resolved (what dbt compiles it to)."""
    sql = re.sub(r"\{\{\s*source\('eval',\s*'answer_agreement'\)\s*\}\}", "eval.answer_agreement", MART.read_text())
    assert "{{" not in sql
    return re.sub(r"^--.*$", "", sql, flags=re.MULTILINE)


def _verdicts():
    q = "What were Apple's total net sales in fiscal 2022?"
    spec = [  # (answer, label, system, split, kind)
        ("$394,328 million", "Correct", "a", "dev", None),
        ("$394.3 billion", "Correct", "a", "dev", None),
        ("$365,817 million", "Incorrect", "a", "heldout", None),
        ("The context does not say.", "Refusal", "b", "heldout", None),
        ("It was $394,328 million or $365,817 million.", "Incorrect", "b", "dev", None),
        ("$394,328 million", "Correct", "b", "heldout", None),
        ("Higher iPhone sales.", "Correct", "b", "dev", "narrative"),
    ]
    rows = [ha.LabelledAnswer(answer=a, label=lab, question=q if not k else "What drove sales?",
                              reference="$394,328 million" if not k else "Higher iPhone sales.",
                              system=s, split=sp, kind=k or "", answer_id=f"a{i}", qa_id=f"q{k or 1}")
            for i, (a, lab, s, sp, k) in enumerate(spec)]
    return ha.score_labelled_answers(rows, set_name="t")


def test_the_mart_computes_the_clis_figures(tmp_path):
    verdicts = _verdicts()
    wh = Warehouse(tmp_path / "w.duckdb")
    ha.write_verdicts(wh, verdicts, set_name="t", source_file="t.jsonl")
    mart = wh.query_df(mart_sql()).set_index(["split", "kinds"])
    expected = {(s["split"], s["kinds"]): s for s in ha.summaries(verdicts)}
    assert set(mart.index) == set(expected)
    for key, s in expected.items():
        row = mart.loc[key]
        assert (row["n_answers"], row["n_decided"]) == (s["n"], s["n_decided"]), key
        assert (row["false_accepts"], row["false_rejects"]) == (s["false_accepts"], s["false_rejects"]), key
        for col, val in (("coverage", s["coverage"]), ("agreement", s["agreement"]), ("kappa", s["kappa"])):
            got = row[col]
            if val is None:
                assert got != got or got is None, (key, col)   # NULL reads back as NaN
            else:
                assert got == pytest.approx(val), (key, col)
    # the narrative answer is never decided: coverage of 'all' is below 1, of 'figure' it is 1
    assert mart.loc[("all", "narrative"), "n_decided"] == 0
    assert mart.loc[("all", "figure+choice"), "coverage"] == pytest.approx(1.0)


def test_every_column_of_the_mart_is_described(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    ha.write_verdicts(wh, _verdicts(), set_name="t", source_file="t.jsonl")
    columns = list(wh.query_df(mart_sql() + " LIMIT 0").columns)
    models = {m["name"]: m for m in yaml.safe_load(YML.read_text())["models"]}
    described = {c["name"]: c.get("description") for c in models["mart_answer_agreement"]["columns"]}
    assert [c for c in columns if not described.get(c)] == []
    assert set(described) == set(columns)     # the yml names no column the mart lacks


def test_the_report_section_shows_the_marts_figures(tmp_path):
    from finrag_pipeline.core.reporting.report import answer_agreement_section

    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.connect() as con:
        assert "No labelled answer set scored" in answer_agreement_section(con)
    verdicts = _verdicts()
    ha.write_verdicts(wh, verdicts, set_name="t", source_file="t.jsonl")
    with wh.connect() as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS marts")
        con.execute(f"CREATE TABLE marts.mart_answer_agreement AS {mart_sql()}")
        html = answer_agreement_section(con)
    overall = ha.summaries(verdicts)[0]
    assert "Agreement with people" in html and "figure+choice" in html and "heldout" in html
    assert f"{100 * overall['coverage']:.1f}%" in html and f"{100 * overall['agreement']:.1f}%" in html
    assert f"{overall['kappa']:.3f}" in html
