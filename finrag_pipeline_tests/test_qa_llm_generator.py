"""The LLM generator with mocked models at the litellm edge: parsed questions, failures counted."""

import json
import os
import re

import pytest
from _qa_sample import load_sample

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from finrag_pipeline.core.llm import LLMClient  # noqa: E402
from finrag_pipeline.core.numbers import NUM_TOKEN_RE, digits_key, is_distinctive  # noqa: E402
from finrag_pipeline.core.qa import QAConfig, generate_qa_set  # noqa: E402
from finrag_pipeline.core.qa.llm_generator import generate_llm, prompt_hash, sample_chunks  # noqa: E402
from finrag_pipeline.core.scoring.answer_contract import single_figure_answer  # noqa: E402

CONFIG = QAConfig.model_validate({"generators": ["llm"], "llm": {"n_chunks": 4},
                                  "filters": {"dedup": {"embedder": "none"}}})


@pytest.fixture(scope="module")
def apple():
    return load_sample("APPLE_2022_10K")


def test_sampling_covers_sections_and_is_seeded(apple):
    a = sample_chunks(apple.chunks, 6, "13:x")
    assert len(a) == 6 and len({c.chunk_id for c in a}) == 6
    assert [c.chunk_id for c in a] == [c.chunk_id for c in sample_chunks(apple.chunks, 6, "13:x")]
    assert len({c.page_start for c in a}) >= 4
    # with sections, every section gets a pick before any gets a second
    import dataclasses

    sectioned = [dataclasses.replace(c, section=f"Item {c.page_start % 3}") for c in apple.chunks]
    assert len({c.section for c in sample_chunks(sectioned, 3, "13:x")}) == 3


@pytest.mark.parametrize(("model", "reason"), [
    ("mock-broken", "call:invalid_output"), ("mock-empty", "call:empty"), ("mock-timeout", "call:timeout"),
    ("mock-error", "call:backend_error"),
])
def test_failures_are_counted_not_raised(apple, tmp_path, model, reason):
    client = LLMClient.from_registry(model, cache_dir=tmp_path, backoff_s=0.0)
    items, log = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert items == []
    assert sum(e["count"] for e in log if e["reason"] == reason) == 4


def test_mock_questions_parsed_and_recorded(apple, tmp_path):
    client = LLMClient.from_registry("mock-fenced", cache_dir=tmp_path)
    items, log = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert items and all(i.generator == "llm:mock-fenced" and i.prompt_hash == prompt_hash() for i in items)
    assert all(i.evidence and i.evidence[0][0].chunk_id for i in items)
    # a re-run is served from the disk cache
    again, log2 = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert [i.qa_id for i in again] == [i.qa_id for i in items]
    assert any(e["reason"] == "cache_hit" and e["count"] == 4 for e in log2)


def test_generate_qa_set_filters_unsupported_llm_answers(apple, tmp_path):
    # the mock answer "$99,803 million" is not in the sampled chunks: the evidence filter drops it
    client = LLMClient.from_registry("mock-fenced", cache_dir=tmp_path)
    result = generate_qa_set(apple.meta, apple.pages, apple.table_rows, apple.facts, apple.chunks, CONFIG, client)
    dropped = {e["reason"]: e["count"] for e in result.log if e["stage"] == "filter"}
    assert dropped.get("figure_not_in_evidence", 0) + len(result.items) >= 1
    for item in result.items:
        assert "99,803" in " ".join(c.text for c in apple.chunks if c.chunk_id in
                                    {p.chunk_id for g in item.evidence for p in g})


# ------------------------------------------------------------------------------------------------
# The litellm path with the paid API mocked at its edge (litellm.completion answers from the prompt)


def _excerpt(messages) -> str:
    user = messages[-1]["content"]
    body = re.split(r"Excerpt A \(page \d+\):\n", user, maxsplit=1)[1]
    return re.split(r"\n\n(?:Excerpt B|Task|Write|Ask)", body, maxsplit=1)[0]


def fake_api(calls: list):
    """A stand-in for a paid model behind litellm: the 1st, 4th, ... call asks a grounded question about
    the first distinctive figure of the excerpt (quote copied from it); the 2nd invents a figure; the
    3rd asks "according to the table above". The reply goes through litellm's own response building
    (mock_response), so the client, parser and filters run as with a real provider."""
    import litellm

    real = litellm.completion

    def completion(*, model, messages, **kwargs):
        calls.append(model)
        text = _excerpt(messages)
        words = text.split()
        i = next((k for k, w in enumerate(words) if (m := NUM_TOKEN_RE.search(w))
                  and is_distinctive(digits_key(m.group(0)))), None)
        if i is None:   # prose without a figure: a phrase of it is the answer (its end: chunks open alike,
            i = len(words) - 1  # with the filing's and the table's title)
        figure = m.group(0) if (m := NUM_TOKEN_RE.search(words[i])) else " ".join(words[max(0, i - 2): i + 1])
        quote = " ".join(words[max(0, i - 6): i + 1])
        # the words before the pick, figures included: two excerpts that open alike (table rows under one
        # title) still ask two different questions
        label = " ".join(w for w in words[max(0, i - 6): i] if re.fullmatch(r"[A-Za-z0-9.,%&'$-]+", w)) or "this line"
        kind = len(calls) % 3
        question = {1: f"What amount did Apple report for {label} in fiscal 2022?",
                    2: f"How much did Apple spend on {label} in fiscal 2022?",
                    0: f"According to the table above, what was {label}?"}[kind]
        answer = figure if kind != 2 else "$12,345,678 million"
        reply = json.dumps({"question": question, "answer": answer, "question_type": "numerical",
                            "evidence_quote": quote})
        kwargs.pop("mock_response", None)
        return real(model=model, messages=messages, mock_response=reply, **kwargs)

    return completion


def test_litellm_path_keeps_grounded_questions_and_counts_every_drop(apple, tmp_path, monkeypatch):
    import litellm

    from finrag_pipeline.core.qa.generate import generate_llm_set

    calls: list = []
    monkeypatch.setattr(litellm, "completion", fake_api(calls))
    client = LLMClient.from_registry("openai/gpt-4o-mini", cache_dir=tmp_path)
    config = QAConfig.model_validate({"filters": {"dedup": {"embedder": "none"}}})
    result = generate_llm_set(apple.meta, apple.pages, apple.chunks, client, config, n=6)
    assert calls == ["openai/gpt-4o-mini"] * 6
    log = {e["reason"]: e["count"] for e in result.log}
    assert log["call:ok"] == 6
    assert log["figure_not_in_evidence"] == 2 and log["passage_dependent"] == 2   # the invented and the "above"
    assert len(result.items) == 2 and log["kept"] == 2
    chunks = {c.chunk_id: c for c in apple.chunks}
    for item in result.items:
        assert item.generator == "llm:openai/gpt-4o-mini" and item.source == "generated"
        assert item.evidence and all(g[0].chunk_id in chunks for g in item.evidence)   # 2 groups if multi-hop
        assert any(item.reference_answer in chunks[g[0].chunk_id].text for g in item.evidence)
        assert item.metadata["leakage"]["score"] is not None          # leakage measured like model-free items
        # an answer that is one figure gets the answer contract (scored like a lookup); a phrase does not
        assert bool(item.answer_values) == (single_figure_answer(item.reference_answer) is not None)
    assert all(e["generator"] == "llm:openai/gpt-4o-mini" for e in result.log)


def test_llm_questions_are_deduplicated_against_the_filings_stored_questions(apple, tmp_path, monkeypatch):
    import copy

    import litellm

    from finrag_pipeline.core.qa.generate import generate_llm_set

    monkeypatch.setattr(litellm, "completion", fake_api([]))
    client = LLMClient.from_registry("openai/gpt-4o-mini", cache_dir=tmp_path)
    config = QAConfig.model_validate({"filters": {"dedup": {"embedder": "none"}}})
    first = generate_llm_set(apple.meta, apple.pages, apple.chunks, client, config, n=6)
    stored = copy.deepcopy(first.items[0])
    stored.qa_id, stored.generator = "stored-1", "model_free"
    again = generate_llm_set(apple.meta, apple.pages, apple.chunks, client, config, n=6, existing=[stored])
    assert [i.qa_id for i in again.items] == [i.qa_id for i in first.items[1:]]
    assert {e["reason"]: e["count"] for e in again.log}["duplicate_of_existing_or_own"] == 1


def test_quote_filter_drops_llm_items_whose_quote_and_answer_are_not_in_the_evidence():
    from finrag_pipeline.core.qa.filters import supported_by

    row = "Apple Inc. 10-K 2022 | Total net sales | 2022: 394,328 | 2021: 365,817 | USD millions"
    assert supported_by("Total net sales 394,328", row)
    assert supported_by("Total net sales $394,328", row)          # a dropped "$" / reflowed row
    assert not supported_by("Total net income 99,803", row)
    assert not supported_by("sales", "Net income 99,803")


def test_cli_qa_generate_writes_the_kept_questions_once(apple, tmp_path, monkeypatch):
    import litellm
    from _analyst_corpus import store_parsed
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse

    home = tmp_path / "home"
    store_parsed(home, [apple])
    monkeypatch.setattr(litellm, "completion", fake_api([]))
    monkeypatch.setenv("FINRAG_HOME", str(home))
    fid = apple.meta.filing_id
    args = ["--home", str(home), "qa", "generate", fid, "--model", "openai/gpt-4o-mini", "--n", "6"]
    out = CliRunner().invoke(main, [*args, "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["calls"] == 6 and len(report["kept"]) == 2 and report["written"]
    wh = Warehouse(FinragPaths.from_env(str(home)).warehouse)
    sql = "SELECT count(*) AS n FROM qa.items WHERE filing_id = ? AND generator = 'llm:openai/gpt-4o-mini'"
    assert int(wh.query_df(sql, [fid]).n[0]) == 2
    # a re-run replaces this model's questions (from the disk cache: no new call), a dry run writes nothing
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "2 questions kept" in again.output
    assert int(wh.query_df(sql, [fid]).n[0]) == 2
    logged = wh.query_df("SELECT reason, count FROM qa.generation_log WHERE filing_id = ? AND generator = "
                         "'llm:openai/gpt-4o-mini'", [fid])
    assert dict(zip(logged.reason, logged["count"], strict=True))["kept"] == 2
    # a model that cannot be reached: every call fails, the command says so and exits non-zero
    monkeypatch.undo()
    broken = CliRunner().invoke(main, ["--home", str(home), "qa", "generate", fid, "--model", "mock-error",
                                       "--n", "2", "--dry-run"])
    assert broken.exit_code != 0 and "every call to mock-error failed" in broken.output
