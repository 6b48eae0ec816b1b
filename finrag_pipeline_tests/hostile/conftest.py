"""Fixtures of the hostile-input suite: the generated files (once per session) and a sandboxed FINRAG_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest
from _hostile import Sandbox, make_hostile_files


@pytest.fixture(scope="session")
def hostile_files(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(folder, {file name: expected status}) generated once per session from the real filings."""
    folder = tmp_path_factory.mktemp("hostile_files")
    return folder, make_hostile_files.generate(folder)


@pytest.fixture
def sandbox(tmp_path, monkeypatch) -> Sandbox:
    box = Sandbox(tmp_path / "box")
    monkeypatch.setenv("FINRAG_HOME", str(box.home))
    return box


