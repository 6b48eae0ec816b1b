"""The one exception ingest raises for bad input; ``status`` tells the caller where the file goes.

Every status has a one-line meaning and a remedy (``STATUS_REMEDIES``): the quarantine's reason file,
``core.ingest_failures`` and the README's "Bad input" table all show the same text.
"""

from __future__ import annotations

from typing import Literal

IngestStatus = Literal[
    "needs_ocr", "garbled_text", "corrupt", "empty", "unsupported", "not_a_filing", "duplicate",
    "invalid_id", "bad_sidecar", "unsafe_path", "ixbrl_error", "too_large", "stale", "error", "check_failed",
]

# status -> what to do about it (shown with the reason wherever a file is rejected)
STATUS_REMEDIES: dict[str, str] = {
    "needs_ocr": "run OCR (e.g. ocrmypdf) and drop the OCRed PDF in the inbox",
    "garbled_text": "the text layer maps glyphs to invisible or private-use characters: get the EDGAR "
                    "HTML version or re-OCR the PDF",
    "corrupt": "fetch the file again; it cannot be opened as PDF/HTML",
    "empty": "fetch the file again; it has no content",
    "unsupported": "drop a 10-K as PDF or inline-XBRL HTML",
    "not_a_filing": "not a 10-K; if it is one, add a sidecar YAML (<file>.yaml) with company and fiscal_year",
    "duplicate": "nothing to do: these bytes are already registered",
    "invalid_id": "fix filing_id (letters, digits, '-', '_', '.', no leading dot, at most 64 characters) "
                  "in the sidecar, or the ticker in the document",
    "bad_sidecar": "fix the sidecar YAML next to the file (keys must be FilingMeta fields)",
    "unsafe_path": "copy the real file (not a symlink) into the inbox under a plain name",
    "ixbrl_error": "fetch the filing again from EDGAR; its inline XBRL is broken",
    "too_large": "raise the limit in assets_config/ingest.yaml (limits:) if the file is genuine",
    "stale": "nothing to do: a newer version is active; `finrag remove` it first to roll back on purpose",
    "check_failed": "a blocking data check failed on what this filing yielded (see the reason): it is quarantined "
                    "and not retried, and other files' ingests go on without it; fetch the filing again, or fix "
                    "the parser (a new parser version retries it)",
    "error": "a bug in finrag: report it with the file; it is retried when the file, its sidecar or the "
             "parser change",
}
INGEST_STATUSES: frozenset[str] = frozenset(STATUS_REMEDIES)


def remedy(status: str) -> str:
    return STATUS_REMEDIES.get(status, "see core.ingest_log")


class IngestError(Exception):
    """A file that cannot become a filing.

    ``status`` is machine-readable (quarantine folder, warehouse status column);
    ``message`` says what was wrong with *this* file, for a human.
    """

    def __init__(self, status: IngestStatus, message: str, *, path: str | None = None,
                 details: dict | None = None):
        if status not in INGEST_STATUSES:
            raise ValueError(f"unknown ingest status {status!r}; expected one of {sorted(INGEST_STATUSES)}")
        self.status: IngestStatus = status
        self.message = message
        self.path = path
        self.details = details or {}   # what was read before the refusal (``cover``: CoverInfo), for inspect
        super().__init__(f"[{status}] {message}" + (f" ({path})" if path else ""))


class InvalidFilingId(IngestError, ValueError):
    """A filing id that does not match FILING_ID_PATTERN (from a document, a sidecar or the CLI)."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__("invalid_id", message, path=path)


class BadSidecar(IngestError, ValueError):
    """A sidecar YAML that cannot be used: unreadable, unknown keys, values of the wrong kind."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__("bad_sidecar", message, path=path)
