"""systems.yaml validation, the kind registry, the response contract and the context mapping rules (issue 27).
Fast: no index, no model, no server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from pydantic import ValidationError

from finrag_pipeline.core.config import ConfigError
from finrag_pipeline.core.evaluation.context_mapping import (
    PAGE_ONLY_CONFIDENCE,
    ContextMapper,
    overlap,
    words,
)
from finrag_pipeline.core.evaluation.systems import (
    SYSTEM_KINDS,
    HttpSystem,
    SystemCall,
    SystemContext,
    SystemRequest,
    SystemsConfig,
    SystemSpec,
    contract_json_schema,
    parse_response,
    register_system_kind,
)
from finrag_pipeline.core.models import Chunk, Hit
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.retrieval.resources import ChunkStore


def test_the_shipped_systems_yaml_loads_and_names_every_kind():
    config = SystemsConfig.load()
    assert config.systems == {} and config.gates == []
    text = (REPO_ROOT / "assets_config" / "systems.yaml").read_text(encoding="utf-8")
    assert all(f"kind: {kind}" in text for kind in ("http", "python", "file"))


@pytest.mark.parametrize(("entry", "message"), [
    ({"kind": "grpc", "url": "x"}, "unknown kind 'grpc'; valid: file, http, python"),
    ({"url": "http://x"}, "needs a kind"),
    ({"kind": "http", "url": "http://x", "timout_s": 3}, "unknown field of system 'mine' (kind http) 'timout_s'"),
    ({"kind": "http", "url": "ftp://x"}, "url must start with http"),
    ({"kind": "http", "url": "http://x", "concurrency": 0}, "greater than or equal to 1"),
    ({"kind": "python", "target": "a:b", "url": "http://x"}, "unknown field of system 'mine' (kind python) 'url'"),
])
def test_invalid_entries_name_the_system_and_the_field(entry, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SystemsConfig.model_validate({"systems": {"mine": entry}})


def test_bad_system_name_and_unknown_name():
    with pytest.raises(ValidationError, match="system name 'my rag'"):
        SystemsConfig.model_validate({"systems": {"my rag": {"kind": "file", "path": "x"}}})
    config = SystemsConfig.model_validate({"systems": {"a": {"kind": "file", "path": "x"}}})
    with pytest.raises(ConfigError, match="unknown system 'b'; valid: 'a'|unknown system 'b'; valid: a"):
        config.get("b")


def test_a_new_kind_registers_without_a_factory_edit():
    @register_system_kind("echo_test")
    class EchoSystem(SystemSpec):
        kind: Literal["echo_test"] = "echo_test"
        prefix: str = ""

        def call(self, request: SystemRequest) -> SystemCall:
            return parse_response({"answer": self.prefix + request.question})

    try:
        config = SystemsConfig.model_validate({"systems": {"e": {"kind": "echo_test", "prefix": "Q: "}}})
        call = config.get("e").call_many([SystemRequest(question="hi", filing_id="F", scope="filing")])[0]
        assert (call.state, call.response.answer) == ("ok", "Q: hi")
    finally:
        SYSTEM_KINDS.pop("echo_test")


def test_headers_come_from_the_environment(monkeypatch):
    spec = HttpSystem(url="http://127.0.0.1:1/rag", headers={"X-Key": "k-${FINRAG_T_KEY}"},
                      bearer_token_env="FINRAG_T_TOKEN")
    monkeypatch.setenv("FINRAG_T_KEY", "abc")
    monkeypatch.setenv("FINRAG_T_TOKEN", "tok")
    assert spec.request_headers() == {"Content-Type": "application/json", "X-Key": "k-abc",
                                      "Authorization": "Bearer tok"}
    monkeypatch.delenv("FINRAG_T_KEY")
    with pytest.raises(ConfigError, match="FINRAG_T_KEY"):
        spec.request_headers()
    # secrets never enter the configuration hash
    assert "headers" not in spec.fingerprint() and "bearer_token_env" not in spec.fingerprint()


@pytest.mark.parametrize(("data", "state"), [
    ({"answer": "$394,328 million", "contexts": [{"text": "x", "filing_id": "F", "page": 4}], "cost": 0.002}, "ok"),
    ({"answer": "   ", "contexts": []}, "empty_answer"),
    ({"contexts": [{"text": "x"}]}, "empty_answer"),
    ({"answer": "x", "abstained": True}, "abstained"),
    ({"answer": "x", "contexts": [{"text": "x", "page": 0}]}, "malformed_response"),   # pages are 1-based
    ({"answer": "x", "contexts": "page 4"}, "malformed_response"),
    (["answer"], "malformed_response"),
    ({"answer": "x", "cost": -1}, "malformed_response"),
])
def test_response_states(data, state):
    call = parse_response(data, latency_ms=5.0)
    assert call.state == state and call.latency_ms == 5.0
    if state == "ok":
        assert call.cost_usd == 0.002 and call.contexts[0].page == 4
    if state == "malformed_response":
        assert call.reason


def test_docs_show_the_contract_schema():
    text = (REPO_ROOT / "docs" / "SYSTEMS.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```json\n")[1:]]
    shown = [json.loads(b) for b in blocks]
    schema = contract_json_schema()
    assert schema["request"] in shown and schema["response"] in shown, (
        "docs/SYSTEMS.md shows another contract: paste contract_json_schema() "
        "(python -m finrag_pipeline.core.evaluation.systems)")


# --- context mapping -------------------------------------------------------------------------------------

def _chunk(cid: str, page: int, text: str, fid: str = "F-2022-10K", page_end: int | None = None) -> Chunk:
    return Chunk(cid, fid, None, "F", 2022, "10-K", None, page, page_end or page, "prose", text)


CHUNKS = [
    _chunk("c-sales", 4, "Total net sales 394,328 365,817 274,515 Cost of sales products services"),
    _chunk("c-income", 4, "Net income 99,803 94,680 57,411 Earnings per share basic diluted"),
    _chunk("c-risk", 2, "The Company's operations and performance depend significantly on global and regional "
                        "economic conditions and adverse economic conditions can materially adversely affect"),
]


class _FakeBM25:
    """BM25 stand-in: chunks sharing a word with the query, most shared first."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.calls = []

    def __call__(self, query, k, filters):
        self.calls.append((query, filters))
        q = words(query)
        scored = sorted(((len(q & words(c.text)), c) for c in self.chunks), key=lambda t: -t[0])
        return [Hit(c.chunk_id, float(s), 0, c.filing_id, c.page_start, c.page_end, c.chunk_type, c.text, "bm25")
                for s, c in scored[:k] if s]


@pytest.fixture()
def mapper():
    return ContextMapper(ChunkStore(CHUNKS), {"F-2022-10K": 5}, _FakeBM25(CHUNKS))


def test_mapping_by_page_text_page_only_and_text(mapper):
    ctx = SystemContext
    cases = [
        (ctx(text="Net income 99,803 94,680", filing_id="F-2022-10K", page=4), "page_text", "c-income", 1.0),
        (ctx(text="a different extraction of the page", filing_id="F-2022-10K", page=4), "page", None,
         PAGE_ONLY_CONFIDENCE),
        (ctx(text="net sales 394,328 365,817"), "text", "c-sales", 1.0),
        (ctx(chunk_id="c-risk"), "chunk_id", "c-risk", 1.0),
        (ctx(text="x", filing_id="F-2022-10K", page=99), "unmapped", None, 0.0),
        (ctx(text="x", filing_id="OTHER-2022-10K", page=1), "unmapped", None, 0.0),
        (ctx(text="football weather holiday"), "unmapped", None, 0.0),
        (ctx(text=""), "unmapped", None, 0.0),
    ]
    for context, method, chunk_id, confidence in cases:
        placed = mapper.place(1, context, None)
        assert (placed.method, placed.chunk_id) == (method, chunk_id), (context, placed)
        assert placed.confidence == pytest.approx(confidence)
        assert (placed.reason is None) == (method in ("page_text", "text", "chunk_id"))


def test_mapped_hits_keep_the_system_order_and_unmapped_ones_keep_their_rank(mapper):
    ctx = SystemContext
    hits, placements = mapper.hits([ctx(text="nothing we hold"), ctx(text="Net income 99,803", filing_id="F-2022-10K",
                                                                    page=4), ctx(text="page text", filing_id="F-2022-10K",
                                                                                 page=2)], None)
    assert [h.chunk_id for h in hits] == ["unmapped:1", "c-income", "page:F-2022-10K:2"]
    assert [h.rank for h in hits] == [1, 2, 3] and hits[0].pages == [] and hits[2].pages == [2]
    assert [p.method for p in placements] == ["unmapped", "page_text", "page"]


def test_word_overlap_is_containment_either_way():
    short = words("Net income 99,803")
    assert overlap(short, words(CHUNKS[1].text)) == 1.0          # the context inside a chunk
    long_context = words(CHUNKS[2].text + " and much more text around it about other things entirely here")
    assert overlap(long_context, words(CHUNKS[2].text)) == 1.0   # a chunk inside a longer context
    assert overlap(words("394,328"), words("394 328")) == 0.0    # figures keep their separators
    assert overlap(set(), short) == 0.0


def test_text_search_is_scoped_to_the_contexts_filing(mapper):
    mapper.place(1, SystemContext(text="net income", filing_id="F-2022-10K"), None)
    assert mapper.text_search.calls[-1][1].filing_ids == ("F-2022-10K",)


def test_file_system_problems(tmp_path: Path):
    from finrag_pipeline.core.evaluation.systems import FileSystem

    missing = FileSystem(path=str(tmp_path / "nope.jsonl"))
    with pytest.raises(ConfigError, match="does not exist"):
        missing.check_ready()
    path = tmp_path / "a.jsonl"
    path.write_text('{"qa_id": "q1", "answer": "1"}\n{"answer": "no key"}\n{"qa_id": "q2", "contexts": 3}\n')
    spec = FileSystem(path=str(path), key="qa_id")
    calls = spec.call_many([SystemRequest(question="?", filing_id="F", scope="filing", qa_id=q)
                            for q in ("q1", "q2", "q3")])
    assert [c.state for c in calls] == ["ok", "malformed_response", "missing_answer"]
    assert "line 2: no qa_id or question" in calls[2].reason
    before = spec.fingerprint()["sha256"]
    path.write_text('{"qa_id": "q1", "answer": "2"}\n')
    assert FileSystem(path=str(path)).fingerprint()["sha256"] != before   # new answers, new configuration


def test_a_system_may_not_take_a_built_in_name():
    from finrag_pipeline.core.evaluation.system_eval import check_system_name

    for name in ("bm25", "hybrid_rrf", "calculator", "sanity_echo"):
        with pytest.raises(ConfigError, match=f"system '{name}' has the name of a built-in"):
            check_system_name(name)
    check_system_name("my_rag")
