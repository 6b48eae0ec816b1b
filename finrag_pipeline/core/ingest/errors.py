"""The one exception ingest raises for bad input; ``status`` tells the caller where the file goes."""

from __future__ import annotations

from typing import Literal

IngestStatus = Literal["needs_ocr", "corrupt", "empty", "unsupported", "not_a_filing", "duplicate"]
INGEST_STATUSES: frozenset[str] = frozenset(
    {"needs_ocr", "corrupt", "empty", "unsupported", "not_a_filing", "duplicate"}
)


class IngestError(Exception):
    """A file that cannot become a filing.

    ``status`` is machine-readable (quarantine folder, warehouse status column);
    ``message`` says what was wrong with *this* file, for a human.
    """

    def __init__(self, status: IngestStatus, message: str, *, path: str | None = None):
        if status not in INGEST_STATUSES:
            raise ValueError(f"unknown ingest status {status!r}; expected one of {sorted(INGEST_STATUSES)}")
        self.status: IngestStatus = status
        self.message = message
        self.path = path
        super().__init__(f"[{status}] {message}" + (f" ({path})" if path else ""))
