"""Helpers of the hostile-input suite: the generator of hostile files, a sandbox whose folders other than
FINRAG_HOME must stay untouched, another process holding the warehouse, and the checks tests end with."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA))
import make_hostile_files  # noqa: E402, F401  (the generator lives with the test data; re-exported)

PDF_EXCERPT = DATA / "apple_2022_excerpt.pdf"


def tree_state(root: Path, skip: Path | None = None) -> dict[str, str]:
    """relative path -> content hash (or link target) of everything under ``root`` except ``skip``."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for name in filenames + [n for n in dirnames if (d / n).is_symlink()]:
            p = d / name
            rel = str(p.relative_to(root))
            state[rel] = ("link:" + os.readlink(p)) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
    return state


class Sandbox:
    """``root/home`` is FINRAG_HOME; ``root/outside`` exists (a path escape would land there); ``root/src``
    holds the input files. ``assert_nothing_outside()`` checks that only FINRAG_HOME changed."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.outside = root / "outside"
        self.src = root / "src"
        for d in (self.home, self.outside, self.src):
            d.mkdir(parents=True, exist_ok=True)
        self._before: dict[str, str] | None = None

    def freeze(self) -> None:
        self._before = tree_state(self.root, skip=self.home)

    def assert_nothing_outside(self, *, moved_from: Path | None = None) -> None:
        after = tree_state(self.root, skip=self.home)
        before = dict(self._before or {})
        if moved_from is not None:  # the inbox lives in home; nothing else may change
            before = {k: v for k, v in before.items() if not (self.root / k).is_relative_to(moved_from)}
        assert after == before, "files changed outside FINRAG_HOME"
        assert not any(self.outside.iterdir()), f"something was written to {self.outside}"
        assert not list(self.root.parent.glob("outside*/NAME*")), "a path escape wrote next to the sandbox"


def copy_inputs(hostile: tuple[Path, dict[str, str]], target: Path, names=None) -> list[str]:
    """Copy hostile files (and their sidecars) into ``target``; returns the names copied."""
    folder, expected = hostile
    names = list(names or expected)
    for name in names:
        shutil.copy(folder / name, target / name)
        sidecar = folder / f"{name}.yaml"
        if sidecar.exists():
            shutil.copy(sidecar, target / sidecar.name)
    return names


def assert_no_duplicate_rows(wh) -> None:
    checks = {
        "core.filings": "filing_id",
        "core.pages": "filing_id, page_number",
        "core.chunks": "chunk_id",
        "core.table_rows": "filing_id, table_id, row_index",
        "core.xbrl_facts": "filing_id, fact_id",
    }
    for table, key in checks.items():
        dupes = wh.query_df(f"SELECT {key}, count(*) AS n FROM {table} GROUP BY {key} HAVING n > 1")
        assert dupes.empty, f"duplicate rows in {table}: {dupes.head().to_dict('records')}"


HOLD = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
"""


def hold_lock(path, mode: str, seconds: float = 60) -> subprocess.Popen:
    """Another process holding ``path`` open ("ro" or "rw") until killed, like an analyst's session."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode, str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc
