"""FinragSession.shared: the evaluation runs of one process reuse one session (chunk store, indexes,
fact layer) exactly while what they read is unchanged, and get a fresh one after any change."""

import shutil

import pytest

from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, FinragPaths
from finrag_pipeline.core.session import FinragSession


@pytest.fixture
def paths(tmp_path):
    return FinragPaths.from_env(str(tmp_path / "home")).ensure()


def _chunk(chunk_id: str, text: str) -> dict:
    return {"chunk_id": chunk_id, "filing_id": "AAPL-2022-10K", "company": "Apple Inc.", "fiscal_year": 2022,
            "page_start": 3, "page_end": 3, "chunk_type": "prose", "text": text, "is_leaf": True, "metadata": "{}"}


def test_same_corpus_and_config_reuse_one_session(paths):
    first = FinragSession.shared(paths)
    assert FinragSession.shared(paths) is first
    # other overrides are another configuration, never the same session
    other = FinragSession.shared(paths, retriever_overrides={"hybrid_rrf": {"rrf_k": 30}})
    assert other is not first and other.retriever_overrides == {"hybrid_rrf": {"rrf_k": 30}}
    assert FinragSession.shared(paths, retriever_overrides={"hybrid_rrf": {"rrf_k": 30}}) is other


@pytest.mark.parametrize("change", ["chunk_added", "chunk_text", "table_row", "fact", "corpus_state", "filing"])
def test_any_change_to_what_searches_read_gives_a_new_session(paths, change):
    wh = FinragSession(paths).warehouse
    wh.replace_rows("core.chunks", [_chunk("c1", "Total net sales were $394,328 million.")],
                    where={"filing_id": "AAPL-2022-10K"})
    before = FinragSession.shared(paths)
    if change == "chunk_added":
        wh.replace_rows("core.chunks", [_chunk("c1", "Total net sales were $394,328 million."),
                                        _chunk("c2", "Gross margin was 43.3%.")], where={"filing_id": "AAPL-2022-10K"})
    elif change == "chunk_text":  # same count, same ids: a re-parse that changed one text
        wh.replace_rows("core.chunks", [_chunk("c1", "Total net sales were $365,817 million.")],
                        where={"filing_id": "AAPL-2022-10K"})
    elif change == "table_row":
        wh.replace_rows("core.table_rows", [{"filing_id": "AAPL-2022-10K", "table_id": "t1", "row_index": 0,
                                             "page_number": 3, "row_label": "Net sales", "cells": "[]"}],
                        where={"filing_id": "AAPL-2022-10K"})
    elif change == "fact":
        wh.replace_rows("core.xbrl_facts", [{"filing_id": "AAPL-2022-10K", "fact_id": "f1",
                                             "concept": "us-gaap:Revenues", "value": 394328.0}],
                        where={"filing_id": "AAPL-2022-10K"})
    elif change == "corpus_state":
        wh.replace_rows("core.corpus_versions", [{"corpus_state": "s2", "filing_ids": '["AAPL-2022-10K"]',
                                                  "n_filings": 1}], where={"corpus_state": "s2"})
    elif change == "filing":
        wh.replace_rows("core.filings", [{"filing_id": "AAPL-2022-10K", "content_sha256": "ab" * 32}],
                        where={"filing_id": "AAPL-2022-10K"})
    after = FinragSession.shared(paths)
    assert after is not before
    assert FinragSession.shared(paths) is after  # and that one is kept again


def test_a_config_edit_gives_a_new_session(paths, tmp_path, monkeypatch):
    before = FinragSession.shared(paths)
    edited = tmp_path / "retrievers.yaml"
    shutil.copy(ASSETS_CONFIG_DIR / "retrievers.yaml", edited)
    edited.write_text(edited.read_text() + "\n# edited\n")
    monkeypatch.setenv("FINRAG_RETRIEVERS_YAML", str(edited))
    assert FinragSession.shared(paths) is not before


def test_each_home_has_its_own_session(tmp_path):
    a = FinragPaths.from_env(str(tmp_path / "a")).ensure()
    b = FinragPaths.from_env(str(tmp_path / "b")).ensure()
    assert FinragSession.shared(a) is not FinragSession.shared(b)
    assert FinragSession.shared(a).paths.home == a.home


def test_another_embedder_or_config_dir_is_another_session(paths, tmp_path):
    """The Dagster wiring (defs/resources.session_from_resources) keys the shared session by the embedder
    resource and the config directory: an overridden embedder must never reuse another's session."""
    base = FinragSession.shared(paths, embedder_key="minilm")
    assert FinragSession.shared(paths, embedder_key="minilm") is base
    assert FinragSession.shared(paths, embedder_key="bge") is not base
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    in_dir = FinragSession.shared(paths, config_dir=str(config_dir), embedder_key="minilm")
    assert in_dir is not base and in_dir.config_dir == str(config_dir)
