"""Agreement of the answer scorer with answers people graded (core/evaluation/human_agreement.py):
statistics against hand-computed tables, reading a labelled set (and its errors), scoring through the
project's scorer, the warehouse rows and the CLI."""

import json

import pytest

from finrag_pipeline.core.evaluation import human_agreement as ha
from finrag_pipeline.core.paths import REPO_ROOT

REPO_SET = REPO_ROOT / "data" / "labelled_answers" / "answers.jsonl"


def _rows(table):
    """(label, scorer decision, system, kind, split) tuples -> verdict rows."""
    out = []
    for label, decision, system, kind, split in table:
        score = {"accept": 1.0, "reject": 0.0, "undecided": None}[decision]
        out.append({"label": label, "human_decision": "accept" if label == "Correct" else "reject",
                    "scorer_decision": decision, "scorer_correctness": score, "system": system, "kind": kind,
                    "split": split})
    return out


# ---------------------------------------------------------------------------------------------
# Statistics, hand-computed


def test_cohen_kappa_of_the_textbook_table():
    # 50 answers: both accept 20, A accepts / B rejects 5, A rejects / B accepts 10, both reject 15.
    # p_o = 35/50 = 0.70; A accepts 25/50, B accepts 30/50: p_e = 0.5*0.6 + 0.5*0.4 = 0.50;
    # kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert ha.cohen_kappa(a, b) == pytest.approx(0.40)


@pytest.mark.parametrize(("a", "b", "expected"), [
    (["y", "n", "y", "n"], ["y", "n", "y", "n"], 1.0),        # perfect agreement
    (["y", "n", "y", "n"], ["n", "y", "n", "y"], -1.0),       # perfect disagreement, balanced
    (["y", "y", "n", "n"], ["y", "n", "y", "n"], 0.0),        # p_o = 0.5 = p_e
    (["y", "y", "y"], ["y", "y", "y"], None),                 # one label throughout: p_e = 1, undefined
    ([], [], None),
])
def test_cohen_kappa_edges(a, b, expected):
    got = ha.cohen_kappa(a, b)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_cohen_kappa_needs_aligned_lists():
    with pytest.raises(ValueError, match="aligned"):
        ha.cohen_kappa(["y"], ["y", "n"])


def test_coverage_agreement_false_accepts_and_rejects_of_a_hand_table():
    rows = _rows([
        ("Correct", "accept", "s1", "figure", "dev"),      # agree
        ("Correct", "reject", "s1", "figure", "dev"),      # false reject
        ("Incorrect", "accept", "s1", "figure", "dev"),    # false accept
        ("Incorrect", "reject", "s1", "figure", "dev"),    # agree
        ("Refusal", "reject", "s1", "figure", "dev"),      # agree (a refusal is not accepted)
        ("Correct", "undecided", "s1", "narrative", "dev"),  # not decided
    ])
    got = ha.agreement_summary(rows)
    assert (got["n"], got["n_decided"]) == (6, 5)
    assert got["coverage"] == pytest.approx(5 / 6)
    assert got["agreement"] == pytest.approx(3 / 5)
    assert (got["false_accepts"], got["false_rejects"]) == (1, 1)
    # people accept 2/5, scorer accepts 2/5: p_e = 0.4*0.4 + 0.6*0.6 = 0.52; kappa = (0.6 - 0.52) / 0.48
    assert got["kappa"] == pytest.approx((0.6 - 0.52) / 0.48)
    assert got["confusion"] == {"Correct": {"accept": 1, "reject": 1, "undecided": 1},
                                "Incorrect": {"accept": 1, "reject": 1, "undecided": 0},
                                "Refusal": {"accept": 0, "reject": 1, "undecided": 0}}


def test_system_kendall_tau_of_a_hand_table():
    # people: s1 3/3 correct (1.0), s2 1/2 (0.5), s3 0/2 (0.0)
    # scorer over decided answers: s1 1/2 = 0.5 (one undecided), s2 1/1 = 1.0, s3 0/2 = 0.0
    # pairs (s1,s2): people +, scorer - -> discordant; (s1,s3): + + concordant; (s2,s3): + + concordant
    # tau_b = (2 - 1) / 3
    rows = _rows([
        ("Correct", "accept", "s1", "figure", ""), ("Correct", "reject", "s1", "figure", ""),
        ("Correct", "undecided", "s1", "figure", ""),
        ("Correct", "accept", "s2", "figure", ""), ("Incorrect", "undecided", "s2", "figure", ""),
        ("Incorrect", "reject", "s3", "figure", ""), ("Refusal", "reject", "s3", "figure", ""),
    ])
    ranking = ha.system_ranking(rows)
    means = {s["system"]: (s["human_correct"], s["scorer_mean"], s["n_decided"]) for s in ranking["systems"]}
    assert means == {"s1": (1.0, 0.5, 2), "s2": (0.5, 1.0, 1), "s3": (0.0, 0.0, 2)}
    assert ranking["kendall_tau_b"] == pytest.approx(1 / 3)


def test_system_tau_needs_two_ranked_systems():
    rows = _rows([("Correct", "accept", "only", "figure", ""), ("Correct", "undecided", "other", "figure", "")])
    ranking = ha.system_ranking(rows)
    assert ranking["kendall_tau_b"] is None and "needs two" in ranking["note"]


def test_summaries_split_by_split_and_kind():
    rows = _rows([("Correct", "accept", "a", "figure", "dev"), ("Correct", "undecided", "a", "narrative", "dev"),
                  ("Incorrect", "reject", "b", "choice", "heldout")])
    groups = {(s["split"], s["kinds"]): s["n"] for s in ha.summaries(rows)}
    assert groups == {("all", "all"): 3, ("all", "figure+choice"): 2, ("all", "choice"): 1, ("all", "figure"): 1,
                      ("all", "narrative"): 1, ("dev", "all"): 2, ("dev", "figure+choice"): 1,
                      ("dev", "figure"): 1, ("dev", "narrative"): 1, ("heldout", "all"): 1,
                      ("heldout", "figure+choice"): 1, ("heldout", "choice"): 1}


def test_split_is_by_question_seeded_and_half():
    keys = [f"q{i}" for i in range(40)]
    split = ha.split_by_question(keys + keys[:10], seed=7)
    assert split == ha.split_by_question(list(reversed(keys)), seed=7)   # order of the rows does not matter
    assert sum(v == "heldout" for v in split.values()) == 20
    assert split != ha.split_by_question(keys, seed=8)


# ---------------------------------------------------------------------------------------------
# Reading a set


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_reads_jsonl_and_csv_alike(tmp_path):
    jl = _write(tmp_path, "s.jsonl", json.dumps({"question": "What was X?", "reference": "$5 million",
                                                 "answer": "$5 million", "label": "correct", "system": "a"}) + "\n")
    cs = _write(tmp_path, "s.csv", "question,reference,answer,label,system\nWhat was X?,$5 million,$5 million,"
                                   "Correct,a\n")
    a, b = ha.read_labelled_answers(jl), ha.read_labelled_answers(cs)
    assert [(r.question, r.reference, r.answer, r.label, r.system) for r in a] == \
        [(r.question, r.reference, r.answer, r.label, r.system) for r in b] == \
        [("What was X?", "$5 million", "$5 million", "Correct", "a")]


@pytest.mark.parametrize(("line", "message"), [
    ({"question": "Q?", "reference": "1", "answer": "1", "label": "maybe"}, "is not one of Correct"),
    ({"question": "Q?", "reference": "1", "label": "Correct"}, "no answer"),
    ({"question": "Q?", "answer": "1", "label": "Correct"}, "needs a qa_id, or a question and its reference"),
    ({"question": "Q?", "reference": "1", "answer": "1", "label": "Correct", "kind": "essay"}, "kind 'essay'"),
])
def test_a_bad_row_is_named(tmp_path, line, message):
    p = _write(tmp_path, "bad.jsonl", json.dumps(line) + "\n")
    with pytest.raises(ha.LabelledSetError, match=message) as exc:
        ha.read_labelled_answers(p)
    assert "bad.jsonl row 1" in str(exc.value)


def test_unknown_format_and_empty_set(tmp_path):
    with pytest.raises(ha.LabelledSetError, match="unknown format"):
        ha.read_labelled_answers(_write(tmp_path, "s.txt", "x"))
    with pytest.raises(ha.LabelledSetError, match="no labelled answers"):
        ha.read_labelled_answers(_write(tmp_path, "s.jsonl", "\n"))


def test_duplicate_answer_ids_are_refused(tmp_path):
    row = {"answer_id": "a1", "question": "Q?", "reference": "1", "answer": "1", "label": "Correct"}
    with pytest.raises(ha.LabelledSetError, match="occurs twice"):
        ha.read_labelled_answers(_write(tmp_path, "s.jsonl", json.dumps(row) + "\n" + json.dumps(row) + "\n"))


# ---------------------------------------------------------------------------------------------
# Scoring through the project's scorer


def _labelled(answer, label, reference="$394,328 million", question="What were Apple's total net sales in "
              "fiscal 2022?", **kw):
    return ha.LabelledAnswer(answer=answer, label=label, question=question, reference=reference, **kw)


def test_each_answer_is_scored_by_the_projects_correctness():
    rows = [_labelled("$394,328 million", "Correct", answer_id="a"),
            _labelled("$365,817 million", "Incorrect", answer_id="b"),
            _labelled("Net sales drove services growth.", "Incorrect", reference="Higher iPhone sales.",
                      question="What drove net sales?", answer_id="c", kind="narrative")]
    got = {v["answer_id"]: v for v in ha.score_labelled_answers(rows, set_name="t")}
    assert (got["a"]["scorer_decision"], got["a"]["agrees"]) == ("accept", True)
    assert (got["b"]["scorer_decision"], got["b"]["agrees"]) == ("reject", True)
    # a narrative reference gives no contract: not decided, and says so
    assert got["c"]["scorer_decision"] == "undecided" and got["c"]["agrees"] is None
    assert got["c"]["scorer_reason"]
    assert got["a"]["kind"] == "figure" and got["a"]["judge_name"] is None


def test_the_embedded_qa_item_is_what_is_scored():
    # the stored contract says a percentage with a tolerance; the reference text alone would say nothing
    item = {"question_type": "numerical", "answer_values": [{"value": 30.29, "unit": "percent", "scale": 1.0,
                                                              "period": "FY2022", "tolerance": 0.01, "text": "30.3%"}]}
    row = ha.LabelledAnswer(answer="30.3%", label="Correct", question="What was the operating margin?",
                            reference="Operating margin was thirty percent and change.", qa_id="q1", qa_item=item)
    (v,) = ha.score_labelled_answers([row], set_name="t")
    assert v["scorer_decision"] == "accept"


def test_a_qa_id_missing_from_the_warehouse_without_text_is_an_error():
    row = ha.LabelledAnswer(answer="1", label="Correct", qa_id="nowhere")
    with pytest.raises(ha.LabelledSetError, match="not in the warehouse"):
        ha.score_labelled_answers([row], set_name="t")


def test_verdicts_replace_the_sets_rows(tmp_path):
    from finrag_pipeline.core.warehouse import Warehouse

    wh = Warehouse(tmp_path / "w.duckdb")
    rows = [_labelled("$394,328 million", "Correct", answer_id="a"),
            _labelled("$365,817 million", "Incorrect", answer_id="b")]
    verdicts = ha.score_labelled_answers(rows, set_name="s1")
    for _ in range(2):   # a re-run replaces, never duplicates
        ha.write_verdicts(wh, verdicts, set_name="s1", source_file="x.jsonl")
    ha.write_verdicts(wh, verdicts[:1], set_name="s2", source_file="y.jsonl")
    got = wh.query_df("SELECT set_name, count(*) AS n, sum(agrees::INT) AS agree FROM eval.answer_agreement "
                      "GROUP BY 1 ORDER BY 1")
    assert got.to_dict("records") == [{"set_name": "s1", "n": 2, "agree": 2}, {"set_name": "s2", "n": 1, "agree": 1}]


# ---------------------------------------------------------------------------------------------
# The repository's set


def test_the_repository_set_is_large_labelled_split_and_has_eight_systems():
    rows = ha.read_labelled_answers(REPO_SET)
    assert len(rows) >= 400
    assert {r.label for r in rows} == set(ha.LABELS)
    assert len({r.system for r in rows}) == 8
    assert {r.split for r in rows} == {"dev", "heldout"}
    by_q: dict[str, set] = {}
    for r in rows:
        by_q.setdefault(r.qa_id, set()).add(r.split)
    assert all(len(s) == 1 for s in by_q.values())     # no question on both sides
    assert {r.kind for r in rows} == set(ha.ANSWER_KINDS)
    assert all(r.label_note for r in rows)
    analyst = {r.qa_id for r in rows if r.qa_id.startswith("analyst_")}
    assert len(analyst) == 49                          # every analyst question is answered


def test_cli_scores_a_set_and_writes_the_warehouse(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.warehouse import Warehouse

    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    lines = [{"answer_id": f"a{i}", "question": "What were Apple's total net sales in fiscal 2022?",
              "reference": "$394,328 million", "answer": ans, "label": lab, "system": sys_, "split": "dev"}
             for i, (ans, lab, sys_) in enumerate([("$394,328 million", "Correct", "x"),
                                                   ("$365,817 million", "Incorrect", "x"),
                                                   ("$394,328 million", "Correct", "y"),
                                                   ("I cannot tell.", "Refusal", "y")])]
    p = _write(tmp_path, "mine.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    res = CliRunner().invoke(main, ["score", "agreement", str(p), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    overall = out["summaries"][0]
    assert (overall["split"], overall["kinds"], overall["n"], overall["n_decided"]) == ("all", "all", 4, 4)
    assert overall["agreement"] == 1.0 and overall["kappa"] == 1.0
    n = Warehouse(tmp_path / "home" / "warehouse.duckdb").query_df(
        "SELECT count(*) AS n FROM eval.answer_agreement WHERE set_name = 'mine'")["n"][0]
    assert n == 4
    bad = _write(tmp_path, "bad.jsonl", json.dumps({"answer": "x", "label": "?"}) + "\n")
    res = CliRunner().invoke(main, ["score", "agreement", str(bad)])
    assert res.exit_code != 0 and "bad.jsonl row 1" in res.output


def test_the_asset_scores_the_repository_set_into_the_warehouse(tmp_path):
    import dagster as dg

    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.defs.evaluation.assets import labelled_answer_agreement
    from finrag_pipeline.defs.resources import FinragResource

    home = tmp_path / "home"
    result = dg.materialize([labelled_answer_agreement], resources={"finrag": FinragResource(home=str(home))})
    assert result.success
    meta = result.asset_materializations_for_node("labelled_answer_agreement")[0].metadata
    n = len(ha.read_labelled_answers(REPO_SET))
    assert meta["dagster/row_count"].value == n and meta["set_name"].value == "answers"
    got = Warehouse(home / "warehouse.duckdb").query_df(
        "SELECT count(*) AS n, count(DISTINCT system) AS systems FROM eval.answer_agreement WHERE set_name = 'answers'")
    assert (got["n"][0], got["systems"][0]) == (n, 8)
