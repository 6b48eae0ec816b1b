"""Rules that live in one place stay there (issue 29, item 5): the YAML reader, the LLM answer JSON
check and client-state mapping, the latest corpus state, the headline metric lists."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from finrag_pipeline.core.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "finrag_pipeline"

# YAML parsed outside core/config.py, each with why it is not configuration.
YAML_OUTSIDE_CONFIG = {
    # a filing's sidecar: user data beside the filing, whose parse error is the filing's bad_sidecar status
    "core/ingest/registry.py",
    # package data (registrants' former names and tickers), not configuration; company_map sits in the same
    # layer as core/config.py (test_import_graph), so it may not import it
    "core/company_map.py",
}


def _yaml_parse_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("safe_load", "load", "full_load", "unsafe_load", "safe_load_all")
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "yaml"]


def test_only_the_config_module_parses_yaml():
    """Every configuration file is read by core/config.py (read_yaml / load_yaml): one reader, one error
    for a missing file or a file that is not a mapping."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "core/config.py" or rel in YAML_OUTSIDE_CONFIG:
            continue
        if lines := _yaml_parse_calls(path):
            found[rel] = lines
    assert found == {}, f"parse YAML through finrag_pipeline.core.config.read_yaml: {found}"
    assert _yaml_parse_calls(PACKAGE / "core" / "config.py"), "the scan must see the one reader"


def test_read_yaml_errors_and_empty_files(tmp_path):
    from finrag_pipeline.core.config import read_yaml

    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    (tmp_path / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    (tmp_path / "ok.yaml").write_text("a:\n  b: 1\n", encoding="utf-8")
    assert read_yaml(tmp_path / "empty.yaml") == {} and read_yaml(tmp_path / "ok.yaml") == {"a": {"b": 1}}
    assert read_yaml(tmp_path / "missing.yaml", missing_ok=True) == {}
    with pytest.raises(FileNotFoundError, match="missing.yaml does not exist"):
        read_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="expected a mapping at the top level, got list"):
        read_yaml(tmp_path / "list.yaml")


# --- the LLM answer JSON and the client's states --------------------------------------------------

@pytest.mark.parametrize("data,key,state,error", [
    ({"answer": "$394,328 million", "citations": [40], "abstain": False}, "citations", None, None),
    ({"answer": "$100 million", "refs": ["F1"]}, "refs", None, None),
    (["not", "an", "object"], "citations", "invalid_output", "JSON without 'answer'"),
    ({"citations": [40]}, "citations", "invalid_output", "JSON without 'answer'"),
    ({"answer": "", "citations": [], "abstain": True}, "citations", "abstained", None),
    ({"answer": "x", "refs": ["F1"], "abstain": "true"}, "refs", "abstained", None),
    ({"answer": "  ", "citations": [40]}, "citations", "invalid_output", "empty answer without abstain"),
    ({"answer": "$5", "citations": []}, "citations", "invalid_output", "answer without citations"),
    ({"answer": "$5", "refs": None}, "refs", "invalid_output", "answer without refs"),
    ({"answer": "$5", "refs": "F1"}, "refs", "invalid_output", "answer without refs"),
])
def test_one_answer_json_check(data, key, state, error):
    """The LLM answerer (pages) and the analyst (fact refs) check a model's JSON alike."""
    from finrag_pipeline.core.answering import AnswerResult, read_answer_json

    out = read_answer_json(data, "RAW", key, {"prompt_tokens": 3}, {"tool_calls": []} if key == "refs" else None)
    if state is None:
        assert out == (data["answer"], data[key])
        return
    assert isinstance(out, AnswerResult) and (out.response_state, out.error) == (state, error)
    assert out.citations == [] and out.prompt_tokens == 3
    assert out.details == ({"tool_calls": []} if key == "refs" else {})
    assert out.text == ("RAW" if state == "invalid_output" and error != "answer without " + key else
                        str(data["answer"]).strip())


def test_analyst_and_llm_answerer_share_the_check_and_the_states():
    from typing import get_args

    from finrag_pipeline.core.llm.client import ResponseState
    from finrag_pipeline.core.scoring.response_states import FAILURE_STATES, from_client_state

    assert {s: from_client_state(s) for s in get_args(ResponseState)} == {
        "ok": "answered", "timeout": "backend_error", "backend_error": "backend_error", "unavailable": "backend_error",
        "invalid_output": "invalid_output", "empty": "invalid_output"}
    assert from_client_state("something new") == "backend_error" and from_client_state(None) in FAILURE_STATES
    written = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
               if "JSON without 'answer'" in p.read_text(encoding="utf-8")]
    assert written == ["core/answering.py"]


# --- the latest corpus state ----------------------------------------------------------------------

def test_one_query_reads_the_latest_corpus_state(tmp_path):
    """Newest created_at wins; a row without a time is older than any with one; equal times: the larger
    state. The session, its data fingerprint, the report and the web explorer all run the one query."""
    from finrag_pipeline.core.session import FinragSession
    from finrag_pipeline.core.warehouse import LATEST_CORPUS_VERSION_SQL

    session = FinragSession.open(str(tmp_path))
    wh = session.warehouse
    with wh.connect() as con:
        con.execute("insert into core.corpus_versions values "
                    "('undated', '[\"A\"]', 1, 10, 'e', NULL), ('old', '[\"A\"]', 1, 10, 'e', '2026-01-01'), "
                    "('tie-a', '[\"A\", \"B\"]', 2, 20, 'e', '2026-02-01'), "
                    "('tie-b', '[\"A\", \"B\"]', 2, 20, 'e', '2026-02-01')")
    assert wh.query_df(LATEST_CORPUS_VERSION_SQL)["corpus_state"].tolist() == ["tie-b"]
    state = session.corpus_state()
    assert (state.corpus_state, state.filing_ids, state.n_filings) == ("tie-b", ["A", "B"], 2)
    assert session.data_fingerprint().split("|")[0] == "tie-b"
    readers = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
               if "from core.corpus_versions" in p.read_text(encoding="utf-8").lower()]
    assert readers == ["core/warehouse.py"]


# --- the metric lists -----------------------------------------------------------------------------

def _metric_name_lists(path: Path, names: set[str]) -> list[tuple[int, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len([v for v in values if v in names]) >= 3:
                out.append((node.lineno, values))
    return out


def test_metric_lists_are_the_registrys():
    """No product module writes down a list of three or more metric names: they read
    core/evaluation/metric_registry.py (headline, board and ranking lists included)."""
    from finrag_pipeline.core.scoring import metric_registry as reg

    names = set(reg.RETRIEVAL_METRICS) | set(reg.ANSWER_METRICS)
    found = {p.relative_to(PACKAGE).as_posix(): lists for p in sorted(PACKAGE.rglob("*.py"))
             if p.name != "metric_registry.py" and (lists := _metric_name_lists(p, names))}
    assert found == {}
    for listed in (reg.HEADLINE_RETRIEVAL_METRICS, reg.BOARD_RETRIEVAL_METRICS, reg.RETRIEVAL_RANK_BY):
        assert set(listed) <= set(reg.RETRIEVAL_METRICS)
    for listed in (reg.HEADLINE_ANSWER_METRICS, reg.BOARD_ANSWER_METRICS, reg.ANSWER_RANK_BY):
        assert set(listed) <= set(reg.ANSWER_METRICS)
    assert reg.HEADLINE_RETRIEVAL_METRICS[0] == reg.RETRIEVAL_RANK_BY[0]
    assert reg.HEADLINE_ANSWER_METRICS[0] == reg.ANSWER_RANK_BY[0]


# --- failures ----------------------------------------------------------------------------------------

def test_failures_score_by_one_rule():
    """The writers store what the views compute: both read core/evaluation/failure_scoring.py."""
    from finrag_pipeline.core.evaluation.runner import _retrieval_row
    from finrag_pipeline.core.scoring import failure_scoring as fs
    from finrag_pipeline.core.scoring import metric_registry as reg
    from finrag_pipeline.core.scoring import results_views as rv
    from finrag_pipeline.core.scoring.answer_metrics import score_answer

    sql = rv.view_sql()
    assert all(fs.retrieval_metric_sql(s) in sql[rv.RETRIEVAL_SCORED] for s in reg.RETRIEVAL_METRIC_SPECS)
    assert all(fs.answer_metric_sql(s) in sql[rv.ANSWER_SCORED] for s in reg.ANSWER_METRIC_SPECS if not s.rate)
    assert fs.failed_retrieval_scores() == dict.fromkeys(reg.RETRIEVAL_METRICS, 0.0)
    row = _retrieval_row(None, [], 12.0, "boom", None, True)
    assert {m: row[m] for m in reg.RETRIEVAL_METRICS} == fs.failed_retrieval_scores() and row["status"] == "error"
    assert {m for m, v in fs.unanswered_scores(judged=False).items() if v is None} == {
        "non_committal", "abstention_correct", "faithfulness", "answer_relevancy"}
    assert fs.unanswered_scores(judged=True)["faithfulness"] == 0.0

    class Key:   # an answerable question with key facts
        answerable, key_facts = True, ["$394,328 million"]

    metrics, _notes = score_answer(answer="", response_state="backend_error", citations=[], cited_texts=[],
                                   key=Key())
    assert metrics == fs.unanswered_scores(judged=False)

    class NoKeyFacts:   # an answerable question whose reference gives no key facts
        answerable, key_facts = True, []

    metrics, notes = score_answer(answer="", response_state="backend_error", citations=[], cited_texts=[],
                                  key=NoKeyFacts())
    assert metrics == fs.unanswered_scores(judged=False, has_key_facts=False)
    assert metrics["key_fact_recall"] is None and metrics["correctness"] == 0.0
    assert "key facts" in notes["key_fact_recall"]


def test_a_failure_without_key_facts_reads_null_in_the_views_too(tmp_path):
    """The stored NULL of key_fact_recall (no key facts) stays NULL in eval.answer_scored; a recorded value of a
    failed row reads 0; correctness of the same failed rows reads 0 either way."""
    import duckdb

    from finrag_pipeline.core.scoring import failure_scoring as fs
    from finrag_pipeline.core.scoring import metric_registry as reg

    spec = next(s for s in reg.ANSWER_METRIC_SPECS if s.name == "key_fact_recall")
    correctness = next(s for s in reg.ANSWER_METRIC_SPECS if s.name == "correctness")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("create table t (_failed boolean, _judged boolean, answerable boolean, key_fact_recall double,"
                " correctness double)")
    con.execute("insert into t values (true, false, true, null, null), (true, false, true, 0.5, 1.0),"
                " (false, false, true, 0.5, 1.0)")
    rows = con.execute(f"select {fs.answer_metric_sql(spec)}, {fs.answer_metric_sql(correctness)} from t").fetchall()
    assert rows == [(None, 0.0), (0.0, 0.0), (0.5, 1.0)]


# --- what a question asks -------------------------------------------------------------------------

@pytest.mark.parametrize("question,scale", [
    ("What was Apple's revenue in fiscal 2022 (in $ millions)?", 1e6),
    ("What was Apple's revenue in fiscal 2022 ($ millions)?", 1e6),
    ("What was Apple's free cash flow in fiscal 2022, in USD billions?", 1e9),
    ("What was Apple's operating income in fiscal 2022 (Dollars in thousands)?", 1e3),
    ("What was Apple's revenue in fiscal 2022?", None),
])
def test_the_calculator_reads_the_asked_scale_from_asked(question, scale):
    """core/asked.py is the one reading of the scale a question asks for: the contract's and the
    calculator plan's display scale agree."""
    from finrag_pipeline.core.analyst.lexicon import Lexicon
    from finrag_pipeline.core.analyst.plan import make_plan
    from finrag_pipeline.core.asked import requested_units
    from finrag_pipeline.core.config import config_path

    assert requested_units(question).scale == scale
    plan = make_plan(question, [2022], Lexicon.load(str(config_path("lexicon.yaml"))))
    assert plan.display_scale == (int(scale) if scale else None)


def test_the_explanation_rule_is_the_question_kinds():
    from finrag_pipeline.core.question_kind import asks_for_explanation

    for question in ("Why did Amazon's North America segment earn more in 2024?",
                     "Explain the change in Apple's gross margin.",
                     "What were the main reasons for the decline in Boeing's revenue?",
                     "Which segment lost the most in 2022, and why did it?",
                     "What was the main driver of Microsoft's gross margin growth?"):
        assert asks_for_explanation(question), question
    for question in ("What was Apple's total revenue in fiscal 2022?", "How much did Apple spend on capex in 2024?"):
        assert not asks_for_explanation(question), question
