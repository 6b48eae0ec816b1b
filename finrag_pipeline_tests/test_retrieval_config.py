"""Typed retriever configurations: one pydantic model per retriever type, chosen by ``type`` (a
discriminated union over the types registered in core/retrieval/plugins.py), and the worked example of
docs/ARCHITECTURE.md "Adding a retriever type", run verbatim."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
import yaml
from _retrieval_fakes import fake_resources

from finrag_pipeline.core.config import ConfigError
from finrag_pipeline.core.models import EvidencePlace, QAItem
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.retrieval import plugins
from finrag_pipeline.core.retrieval.auto_merging import AutoMergingConfig
from finrag_pipeline.core.retrieval.config import (
    PluginRetrieverConfig,
    RetrieverConfig,
    WrapperConfig,
    load_retrievers,
    parse_retriever_config,
)
from finrag_pipeline.core.retrieval.hybrid import HybridRRFConfig, HybridWeightedConfig
from finrag_pipeline.core.retrieval.lexical import BM25Config
from finrag_pipeline.core.retrieval.registry import build_named_retrievers


def _yaml(tmp_path, retrievers: dict, defaults: dict | None = None):
    path = tmp_path / "retrievers.yaml"
    path.write_text(yaml.safe_dump({"defaults": defaults or {}, "retrievers": retrievers}))
    return path


@pytest.mark.parametrize(("spec", "model"), [
    ({"type": "bm25", "fields": ["text"]}, BM25Config),
    ({"type": "hybrid_rrf", "bases": ["a", "b"], "rrf_k": 30}, HybridRRFConfig),
    ({"type": "hybrid_weighted", "bases": ["a", "b"], "weights": [0.3, 0.7]}, HybridWeightedConfig),
    ({"type": "auto_merging", "base": "a", "merge_threshold": 3}, AutoMergingConfig),
    ({"type": "decomposed", "base": "a"}, WrapperConfig),
    ({"type": "dense"}, RetrieverConfig),
])
def test_each_type_is_validated_by_its_own_model(spec, model):
    cfg = parse_retriever_config({"name": "x", **spec})
    assert type(cfg) is model
    assert cfg.k == 10 and cfg.period_mode == "none"           # the common fields, with their defaults


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "bm25", "kk": 3}, "unknown field of retriever 'x' (type bm25) 'kk'; valid: "),
    ({"type": "bm25", "rrf_k": 30}, "unknown field of retriever 'x' (type bm25) 'rrf_k'"),   # another type's field
    ({"type": "dense", "bases": ["bm25"]}, "unknown field of retriever 'x' (type dense) 'bases'"),
    ({"type": "hybrid_rrf", "normalization": "zscore"}, "(type hybrid_rrf) 'normalization'"),
    ({"type": "bm26"}, "unknown retriever type 'bm26' (retriever 'x')"),
    ({"k": 3}, "retriever 'x' has no `type`"),
])
def test_a_key_the_type_does_not_have_is_a_clear_error(spec, message):
    with pytest.raises(ConfigError) as err:
        parse_retriever_config({"name": "x", **spec})
    assert message in str(err.value)


def test_misspelt_key_in_the_yaml_names_the_retriever_and_the_key(tmp_path):
    path = _yaml(tmp_path, {"bm25": {"type": "bm25"}, "fused": {"type": "hybrid_rrf", "bases": ["bm25"],
                                                                  "rrf_kk": 30}})
    with pytest.raises(ConfigError, match=r"retriever 'fused' \(type hybrid_rrf\) 'rrf_kk'; valid: .*rrf_k"):
        load_retrievers(path)
    with pytest.raises(ConfigError, match=r"unknown field of retriever 'bm25' 'rrf_k'; valid: .*fields"):
        load_retrievers(_yaml(tmp_path, {"bm25": {"type": "bm25"}}), overrides={"bm25.rrf_k": 5})


def test_defaults_apply_where_the_type_has_the_field(tmp_path):
    path = _yaml(tmp_path, {"bm25": {"type": "bm25"}, "fused": {"type": "hybrid_rrf", "bases": ["bm25"]}},
                 defaults={"k": 7, "rrf_k": 20})
    named = load_retrievers(path)
    assert named["bm25"].k == 7 and named["fused"].k == 7 and named["fused"].rrf_k == 20
    assert not hasattr(named["bm25"], "rrf_k")
    with pytest.raises(ConfigError, match="unknown retriever default 'rrf_kk'"):
        load_retrievers(_yaml(tmp_path, {"bm25": {"type": "bm25"}}, defaults={"rrf_kk": 20}))


def test_the_shipped_yaml_validates_with_the_typed_models():
    named = load_retrievers()
    assert isinstance(named["hybrid_rrf"], HybridRRFConfig) and named["hybrid_rrf"].rrf_k == 60
    assert isinstance(named["decomposed"], WrapperConfig) and named["decomposed"].base == "hybrid_rrf"
    assert type(named["bm25"]) is BM25Config


def test_an_import_path_type_without_a_model_keeps_its_extra_keys():
    cfg = parse_retriever_config({"name": "echo", "type": "test_retrieval_registry:EchoRetriever", "colour": "red"})
    assert type(cfg) is PluginRetrieverConfig and cfg.model_extra == {"colour": "red"}


# ---------------------------------------------------------------------------------------------
# docs/ARCHITECTURE.md: "Adding a retriever type (worked example)"

def _doc_example() -> str:
    text = (REPO_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- worked-example: retriever-type -->\n```python\n(.*?)```", text, re.S)
    assert match, "the worked example is gone from docs/ARCHITECTURE.md"
    return match.group(1)


def test_worked_example_adding_a_retriever_type(tmp_path, monkeypatch):
    from finrag_pipeline.core.evaluation.runner import retrieval_metrics_for

    # The module exactly as the doc shows it, imported as core/retrieval/score_floor.py would be.
    monkeypatch.setattr(plugins, "RETRIEVERS", dict(plugins.RETRIEVERS))
    monkeypatch.setattr(plugins, "RETRIEVER_CONFIGS", dict(plugins.RETRIEVER_CONFIGS))
    import finrag_pipeline.core.retrieval.config as config_module
    import finrag_pipeline.core.retrieval.registry as registry_module
    monkeypatch.setattr(config_module, "RETRIEVERS", plugins.RETRIEVERS)
    monkeypatch.setattr(config_module, "RETRIEVER_CONFIGS", plugins.RETRIEVER_CONFIGS)
    monkeypatch.setattr(registry_module, "RETRIEVERS", plugins.RETRIEVERS)
    source = tmp_path / "score_floor.py"
    source.write_text(_doc_example())
    spec = importlib.util.spec_from_file_location("finrag_pipeline.core.retrieval.score_floor", source)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert plugins.RETRIEVERS["score_floor"] is module.ScoreFloorRetriever
    assert plugins.RETRIEVER_CONFIGS["score_floor"] is module.ScoreFloorConfig

    # The YAML entry of the doc builds through the registry and searches.
    path = _yaml(tmp_path, {"bm25": {"type": "bm25"},
                            "bm25_floor": {"type": "score_floor", "base": "bm25", "min_score": 2.0}})
    resources = fake_resources()
    built = build_named_retrievers(resources, ["bm25", "bm25_floor"], path=path)
    query = "Apple total net sales 2022"
    plain, floored = built["bm25"].search(query, 10), built["bm25_floor"].search(query, 10)
    assert plain and any(h.score < 2.0 for h in plain)                 # the floor has something to drop
    assert [h.chunk_id for h in floored] == [h.chunk_id for h in plain if h.score >= 2.0]
    assert floored and built["bm25_floor"].name == "bm25_floor"

    # A misspelt key names the retriever and the key.
    with pytest.raises(ConfigError, match=r"retriever 'bm25_floor' \(type score_floor\) 'min_scor'"):
        load_retrievers(_yaml(tmp_path, {"bm25": {"type": "bm25"},
                                         "bm25_floor": {"type": "score_floor", "base": "bm25", "min_scor": 2}}))

    # The evaluation runner scores its hits like any retriever's.
    top = floored[0]
    item = QAItem(qa_id="q", filing_id=top.filing_id, question=query, reference_answer="",
                  question_type="numerical", evidence=[[EvidencePlace(top.chunk_id, top.page_start, top.filing_id)]])
    row, status, _ = retrieval_metrics_for(floored, item, 5)
    assert status == "ok" and row["hit_chunk"] == 1.0 and row["mrr_chunk"] == 1.0
