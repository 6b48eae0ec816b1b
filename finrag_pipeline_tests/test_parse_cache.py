"""THE per-filing parse cache of the benchmarks and question builders (core/ingest/parse_cache.py): a hit returns
what a fresh parse returns; a changed parser (fingerprint), filing or unreadable pickle parses again."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from finrag_pipeline.core.ingest import parse as parse_module
from finrag_pipeline.core.ingest import parse_cache
from finrag_pipeline.core.ingest.parse_cache import (
    DEFAULT_PARSE_CACHE,
    cache_dir_for,
    cache_key,
    cached_parse,
    parser_fingerprint,
    parser_sources,
)
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

SAMPLE = SAMPLE_FILINGS_DIR / "APPLE_2021_10K.pdf"   # the smallest sample filing


@pytest.fixture()
def counted_parses(monkeypatch):
    """Every real parse made through the cache, by path."""
    calls: list[str] = []
    real = parse_module.parse_filing

    def counting(path, *args, **kwargs):
        calls.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(parse_module, "parse_filing", counting)
    return calls


def _content(parsed):
    return (parsed.meta, [(p.page_number, p.text, p.section) for p in parsed.pages], parsed.table_rows, parsed.facts)


def test_a_hit_returns_the_same_pages_and_tables_as_a_fresh_parse(tmp_path, counted_parses):
    fresh = parse_module.parse_filing(SAMPLE)
    first = cached_parse(SAMPLE, tmp_path)
    assert len(counted_parses) == 2 and len(list(tmp_path.glob("*.pkl"))) == 1
    hit = cached_parse(SAMPLE, tmp_path)
    assert len(counted_parses) == 2, "a hit must not parse"
    assert hit is not first and _content(hit) == _content(first) == _content(fresh)
    assert len(hit.pages) > 50 and len(hit.table_rows) > 100      # a real 10-K, not an empty parse


def test_a_changed_fingerprint_parses_again(tmp_path, counted_parses):
    cached_parse(SAMPLE, tmp_path, fingerprint="a" * 64)
    cached_parse(SAMPLE, tmp_path, fingerprint="a" * 64)
    assert len(counted_parses) == 1
    cached_parse(SAMPLE, tmp_path, fingerprint="b" * 64)
    assert len(counted_parses) == 2 and len(list(tmp_path.glob("*.pkl"))) == 2


def test_changed_bytes_or_a_sidecar_change_the_key(tmp_path):
    copy = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, copy)
    assert cache_key(copy, "f" * 64) == cache_key(SAMPLE, "f" * 64)   # the key is the content, not the path
    with open(copy, "ab") as f:
        f.write(b"\n%% one more byte\n")
    changed = cache_key(copy, "f" * 64)
    assert changed != cache_key(SAMPLE, "f" * 64)
    (tmp_path / (SAMPLE.name + ".yaml")).write_text("company: Apple Inc.\n")
    assert cache_key(copy, "f" * 64) != changed


def test_an_unreadable_pickle_parses_again(tmp_path, counted_parses):
    (tmp_path / f"{cache_key(SAMPLE)}.pkl").write_bytes(b"not a pickle")
    parsed = cached_parse(SAMPLE, tmp_path)
    assert len(counted_parses) == 1 and parsed.pages
    assert pickle.loads((tmp_path / f"{cache_key(SAMPLE)}.pkl").read_bytes()).meta == parsed.meta


def test_the_fingerprint_covers_the_parser_code(tmp_path, monkeypatch):
    names = set(parser_sources())
    for module in ("parse", "pdf", "html", "tables", "statements", "xbrl", "unlabelled_totals"):
        assert f"finrag_pipeline.core.ingest.{module}" in names
    assert {"finrag_pipeline.core.numbers", "finrag_pipeline.core.models"} <= names
    assert "finrag_pipeline.core.analyst.calculator" not in names   # the calculator's changes keep the parses
    # a change to one source file changes the fingerprint
    source = tmp_path / "fake_parser.py"
    source.write_text("RULE = 1\n")
    monkeypatch.setattr(parse_cache, "parser_sources", lambda module=None: {"fake_parser": source})
    parser_fingerprint.cache_clear()
    try:
        before = parser_fingerprint()
        source.write_text("RULE = 2\n")
        parser_fingerprint.cache_clear()
        assert parser_fingerprint() != before
    finally:
        parser_fingerprint.cache_clear()


def test_cache_option_of_the_scripts(tmp_path):
    assert cache_dir_for(None) == DEFAULT_PARSE_CACHE
    assert cache_dir_for(tmp_path) == tmp_path
    old = tmp_path / "batch.pkl"                       # the old one-pickle-per-batch option
    assert cache_dir_for(old) == tmp_path / "batch.pkl.d"
    old.write_bytes(b"old")
    assert cache_dir_for(old) == tmp_path / "batch.pkl.d"
    assert cache_dir_for(str(tmp_path / "parsed")) == Path(tmp_path / "parsed")
