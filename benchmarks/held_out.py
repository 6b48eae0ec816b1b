"""Which analysts' question files are held out now (finrag_pipeline_tests/data/external/README.md): their items and
per-question results are never printed or written by a benchmark, only aggregates. A set scored once as held out
becomes development data and leaves this list (heldout2 and heldout3 on 2026-12-02)."""

from __future__ import annotations

from pathlib import Path

CURRENT_HELD_OUT = ("heldout4", "heldout5", "heldout6")


def is_held_out(path: Path | str) -> bool:
    return any(tag in Path(path).name for tag in CURRENT_HELD_OUT)
