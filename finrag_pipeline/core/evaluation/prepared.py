"""Evaluation rows computed ahead by parallel workers (core/parallel_eval.py), kept in the process
that writes them until the filing's own evaluation asks (``FinragSession.evaluate_*``). A leaf: the session
and the workers both import it, neither imports the other through it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def matrix_key(matrix: Any) -> str:
    return matrix.model_dump_json()


@dataclass
class PreparedEvaluation:
    kind: str                    # "retrieval" | "answers"
    filing_id: str
    matrix_key: str
    fingerprint: str             # FinragSession.inputs_fingerprint() before and after computing ("" = changed)
    runs: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    seconds: float
    worker: str                  # "pid 123" / "thread 2"


_PREPARED: dict[tuple[str, str, str], PreparedEvaluation] = {}
_PREPARED_LOCK = threading.Lock()


def offer_prepared(home: str | os.PathLike, prepared: Iterable[PreparedEvaluation]) -> None:
    with _PREPARED_LOCK:
        for p in prepared:
            _PREPARED[(str(Path(home)), p.kind, p.filing_id)] = p


def has_prepared(home: str | os.PathLike, kind: str, filing_id: str) -> bool:
    return (str(Path(home)), kind, filing_id) in _PREPARED


def take_prepared(home: str | os.PathLike, kind: str, filing_id: str, matrix: Any,
                  fingerprint: str) -> PreparedEvaluation | None:
    """The rows a worker computed for this filing, if they were computed for ``matrix`` under ``fingerprint``
    (removed either way: prepared rows are used once)."""
    with _PREPARED_LOCK:
        prepared = _PREPARED.pop((str(Path(home)), kind, filing_id), None)
    if (prepared is None or not prepared.fingerprint or prepared.matrix_key != matrix_key(matrix)
            or prepared.fingerprint != fingerprint):
        return None
    return prepared


def discard_prepared(home: str | os.PathLike) -> None:
    """Forget what was not taken (a run that failed before its evaluation asked)."""
    with _PREPARED_LOCK:
        for key in [k for k in _PREPARED if k[0] == str(Path(home))]:
            del _PREPARED[key]
