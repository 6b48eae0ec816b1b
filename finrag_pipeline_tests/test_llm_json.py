"""JSON extraction from model output: table-driven over the ways models break JSON."""

import pytest

from finrag_pipeline.core.llm.json_extract import extract_json

CASES = [
    ("plain", '{"question": "Q?", "answer": "A"}', {"question": "Q?", "answer": "A"}),
    ("fenced", 'Here you go:\n```json\n{"question": "Q?", "answer": "A"}\n```\nThanks', {"question": "Q?", "answer": "A"}),
    ("fence_no_lang", '```\n{"a": 1}\n```', {"a": 1}),
    ("chatty_preamble", 'Sure! Based on the excerpt, the JSON is {"a": 1, "b": "x"} hope it helps', {"a": 1, "b": "x"}),
    ("trailing_comma", '{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
    ("single_quotes", "{'question': 'What was revenue?', 'answer': '$5'}", {"question": "What was revenue?", "answer": "$5"}),
    ("python_literals", "{'ok': True, 'missing': None}", {"ok": True, "missing": None}),
    ("braces_in_string", '{"q": "a {tricky} one", "n": 2}', {"q": "a {tricky} one", "n": 2}),
    ("array", 'Questions: [{"q": 1}, {"q": 2}]', [{"q": 1}, {"q": 2}]),
    ("truncated", '{"question": "What was net income", "answer": "$99,803', {"question": "What was net income",
                                                                           "answer": "$99,803"}),
]


@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_extract_json_repairs(name, text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", [None, "", "   ", "I cannot help with that.", "no braces here at all"])
def test_extract_json_none_when_no_json(text):
    assert extract_json(text) is None
