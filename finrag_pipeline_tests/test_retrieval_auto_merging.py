"""Auto-merging on a hand-made ranking over a hand-made parent/child store."""

from __future__ import annotations

import pytest
from _retrieval_fakes import ListRetriever, chunk, hit

from finrag_pipeline.core.retrieval.auto_merging import AutoMergingRetriever, auto_merge
from finrag_pipeline.core.retrieval.resources import ChunkStore

F = "F"


def _store() -> ChunkStore:
    # S2 (section) > T (table, rows r1..r4) and T2 (table, rows q1, q2); S (section) > windows w1, w2
    return ChunkStore([
        chunk("S2", F, "section S2", fy=2022, ctype="section", leaf=False),
        chunk("T", F, "TABLE T full text", fy=2022, ctype="table", parent="S2", leaf=False, page=5),
        chunk("T2", F, "TABLE T2 full text", fy=2022, ctype="table", parent="S2", leaf=False, page=6),
        chunk("S", F, "SECTION S full text", fy=2022, ctype="section", leaf=False, page=9),
        *[chunk(f"r{i}", F, f"row {i}", fy=2022, ctype="table_row", parent="T", page=5) for i in range(1, 5)],
        *[chunk(f"q{i}", F, f"row q{i}", fy=2022, ctype="table_row", parent="T2", page=6) for i in range(1, 3)],
        *[chunk(f"w{i}", F, f"window {i}", fy=2022, parent="S", page=9) for i in range(1, 3)],
    ])


RANKING = [hit("r2", 0.9, parent="T"), hit("w1", 0.8, parent="S", ctype="prose"), hit("r1", 0.7, parent="T"),
           hit("x", 0.6), hit("r4", 0.5, parent="T"), hit("q1", 0.4, parent="T2")]

CASES = [
    # T has 3 of 4 children retrieved: >= 2 merges, the parent takes r2's slot and score
    ("threshold_2", dict(threshold=2), [("T", 0.9), ("w1", 0.8), ("x", 0.6), ("q1", 0.4)]),
    ("threshold_3", dict(threshold=3), [("T", 0.9), ("w1", 0.8), ("x", 0.6), ("q1", 0.4)]),
    ("threshold_4_nothing", dict(threshold=4), [(h.chunk_id, h.score) for h in RANKING]),
    # ratio .5: T 3/4, S 1/2 and T2 1/2 all merge (threshold alone would not)
    ("ratio_half", dict(threshold=10, ratio=0.5), [("T", 0.9), ("S", 0.8), ("x", 0.6), ("T2", 0.4)]),
    ("ratio_80pct", dict(threshold=10, ratio=0.8), [(h.chunk_id, h.score) for h in RANKING]),
    # two levels: T and T2 merge first (ratio .5), then both are children of S2 -> S2 at T's slot
    ("two_levels", dict(threshold=2, ratio=0.5, levels=2), [("S2", 0.9), ("S", 0.8), ("x", 0.6)]),
]


@pytest.mark.parametrize(("name", "params", "expected"), CASES, ids=[c[0] for c in CASES])
def test_auto_merge(name, params, expected):
    got = auto_merge(RANKING, _store(), **params)
    assert [(h.chunk_id, h.score) for h in got] == expected


def test_parent_hit_carries_store_text_and_merge_counts():
    got = auto_merge(RANKING, _store(), threshold=2)
    parent = got[0]
    assert parent.text == "TABLE T full text" and parent.chunk_type == "table" and parent.page_start == 5
    assert parent.stage == "auto_merge"
    assert parent.stage_scores["merged_children"] == 3 and parent.stage_scores["parent_children"] == 4
    # the input hits are not modified
    assert RANKING[0].chunk_id == "r2" and RANKING[0].stage == "fixed"


def test_unknown_parent_is_left_alone():
    ranking = [hit("z1", 1.0, parent="NOPE"), hit("z2", 0.9, parent="NOPE")]
    assert [h.chunk_id for h in auto_merge(ranking, _store(), threshold=2)] == ["z1", "z2"]


def test_retriever_fetches_deeper_and_renumbers_ranks():
    base = ListRetriever(RANKING)
    r = AutoMergingRetriever(base, _store(), threshold=3)
    result = r.retrieve("q", 3)
    assert base.calls[0][1] == 6  # 2 * k
    assert [(h.chunk_id, h.rank) for h in result.hits] == [("T", 1), ("w1", 2), ("x", 3)]
    assert "auto_merge" in result.timings_ms
