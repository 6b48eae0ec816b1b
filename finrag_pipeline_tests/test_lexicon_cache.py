"""The lexicon YAML is parsed once per version of the file: an edited file is read again, and no
caller can change what the next load returns."""

import os
import time

from finrag_pipeline.core.analyst import lexicon as lexicon_module
from finrag_pipeline.core.analyst.lexicon import Lexicon

YAML = """concepts:
  revenue:
    aliases: [revenue, net sales]
    line_items: [Total net sales]
"""


def test_an_edited_lexicon_file_is_read_again(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text(YAML)
    first = Lexicon.load(path)
    assert set(first.concepts) == {"revenue"}
    assert Lexicon.load(path).concepts["revenue"].aliases == ["revenue", "net sales"]
    path.write_text(YAML + "  capex:\n    aliases: [capital expenditures]\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    assert set(Lexicon.load(path).concepts) == {"revenue", "capex"}


def test_a_loaded_lexicon_cannot_change_the_next_load(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text(YAML)
    lexicon_module._parsed_yaml(path)["concepts"]["revenue"]["aliases"].append("turnover")
    first = Lexicon.load(path)
    first.concepts["revenue"].aliases.append("top line")
    assert Lexicon.load(path).concepts["revenue"].aliases == ["revenue", "net sales"]


def test_the_default_lexicon_is_the_same_with_and_without_the_cache():
    cached = Lexicon.load_default()
    lexicon_module._YAML_CACHE.clear()
    fresh = Lexicon.load_default()
    assert len(cached.concepts) > 10
    assert {k: vars(c) for k, c in cached.concepts.items()} == {k: vars(c) for k, c in fresh.concepts.items()}


def test_a_text_read_twice_names_the_same_concepts_and_add_forgets_what_was_read(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text(YAML)
    lex = Lexicon.load(path)
    question = "What was the top line in FY2022 net sales terms?"
    first = lex.match(question)
    assert [(m.concept.key, m.alias) for m in first] == [("revenue", "net sales")]
    first.clear()                               # a caller's list is its own: the memo keeps the matches
    assert [(m.concept.key, m.alias) for m in lex.match(question)] == [("revenue", "net sales")]
    lex.add(lexicon_module.Concept("headline", ["top line"], [], []))
    assert [(m.concept.key, m.alias) for m in lex.match(question)] == [("headline", "top line"),
                                                                       ("revenue", "net sales")]
    assert lex.match("no concept here") == []


def test_contains_any_is_contains_of_any_phrase():
    lex = Lexicon.load_default()
    text = "Total net sales | Research and development | Shareholders' equity"
    for phrases, expected in [(["net sales"], True), (["cost of sales", "shareholders equity"], True),
                              (["long-term debt", "inventories"], False), ([], False), (["sales"], True),
                              (["net sale"], False)]:
        assert lex.contains_any(text, phrases) is expected
        assert any(lex.contains(text, p) for p in phrases) is expected
