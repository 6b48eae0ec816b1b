"""Filing identity: content hash, readable filing id, format sniffing, sidecar YAML overrides."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.models import FilingMeta

FileFormat = Literal["pdf", "html"]
_SNIFF_BYTES = 4096

# Magic numbers of things people drop in an inbox by mistake, for a precise "unsupported" message.
_KNOWN_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"PK\x03\x04", "ZIP archive (or DOCX/XLSX)"),
    (b"PK\x05\x06", "empty ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\xd0\xcf\x11\xe0", "legacy Office document"),
    (b"{\\rtf", "RTF document"),
)


def sha256_file(path: str | Path, *, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of the file's bytes (streamed: filings can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk_size):
            h.update(block)
    return h.hexdigest()


def normalize_form_type(form_type: str) -> str:
    """"10-K/A" -> "10KA", "10-K405" -> "10K405": the form as it appears in a filing id."""
    return re.sub(r"[^A-Z0-9]", "", (form_type or "10-K").upper())


def make_filing_id(ticker_or_company: str, fiscal_year: int, form_type: str = "10-K") -> str:
    """Readable, stable partition key: ``make_filing_id("AAPL", 2022, "10-K") == "AAPL-2022-10K"``.

    A company name works too ("Apple Inc." -> "APPLE-INC-2022-10K") for filings without a ticker.
    """
    name = re.sub(r"[^A-Z0-9]+", "-", (ticker_or_company or "").upper()).strip("-")
    if not name:
        raise ValueError("a filing id needs a ticker or company name")
    return f"{name}-{int(fiscal_year)}-{normalize_form_type(form_type)}"


def detect_format(path: str | Path) -> FileFormat:
    """"pdf" or "html" from the file's first bytes, never from its extension.

    Raises IngestError("empty") for a zero-byte/blank file and IngestError("unsupported") for
    anything else (images, archives, plain text...).
    """
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if not head.strip():
        raise IngestError("empty", f"the file is empty ({p.stat().st_size} bytes, no content)", path=str(p))
    # The PDF spec lets the header start anywhere in the first 1024 bytes.
    if b"%PDF-" in head[:1024]:
        return "pdf"
    for magic, what in _KNOWN_MAGIC:
        if head.startswith(magic):
            raise IngestError("unsupported", f"this is a {what}, not a PDF or HTML filing", path=str(p))
    text = head.lstrip(b"\xef\xbb\xbf").decode("utf-8", errors="ignore").lower()
    if re.search(r"<html|<!doctype html|<\?xml[^>]*>\s*(<!--.*?-->\s*)*<html|xmlns=\"http://www\.w3\.org/1999/xhtml\"",
                 text, re.S):
        return "html"
    kind = "binary data" if b"\x00" in head else "plain text"
    raise IngestError("unsupported", f"unrecognised content ({kind}); expected a PDF or (X)HTML 10-K",
                      path=str(p))


def find_sidecar(path: str | Path) -> Path | None:
    """The YAML next to a filing that overrides its metadata, if any.

    Looked up as ``<file>.yaml``, ``<file>.meta.yaml`` (e.g. ``x.pdf.yaml``) and, for convenience,
    ``<stem>.yaml`` / ``<stem>.meta.yaml``.
    """
    p = Path(path)
    for cand in (p.with_name(p.name + ".yaml"), p.with_name(p.name + ".meta.yaml"),
                 p.with_suffix(".yaml"), p.with_suffix(".meta.yaml")):
        if cand != p and cand.is_file():
            return cand
    return None


_META_FIELDS = {f.name for f in dataclasses.fields(FilingMeta)}


def load_sidecar(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Read and validate sidecar overrides (a YAML path or an already-loaded mapping).

    Keys must be FilingMeta fields; dates may be ISO strings. Raises ValueError on unknown keys.
    """
    if isinstance(source, Mapping):
        data = dict(source)
    else:
        loaded = yaml.safe_load(Path(source).read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, Mapping):
            raise ValueError(f"sidecar {source} must be a mapping of FilingMeta fields")
        data = dict(loaded)
    unknown = sorted(set(data) - _META_FIELDS)
    if unknown:
        raise ValueError(f"sidecar has unknown keys {unknown}; allowed: {sorted(_META_FIELDS)}")
    if "fiscal_year" in data and data["fiscal_year"] is not None:
        data["fiscal_year"] = int(data["fiscal_year"])
    if isinstance(data.get("period_end_date"), str):
        data["period_end_date"] = date.fromisoformat(data["period_end_date"])
    for key in ("ticker", "cik"):
        if data.get(key) is not None:
            data[key] = str(data[key])
    return data


def apply_sidecar(meta: FilingMeta, overrides: Mapping[str, Any]) -> FilingMeta:
    """Return ``meta`` with overrides applied; the filing id is rebuilt unless given explicitly."""
    if not overrides:
        return meta
    changes = dict(overrides)
    new = dataclasses.replace(meta, **changes)
    if "filing_id" not in changes:
        new.filing_id = make_filing_id(new.ticker or new.company, new.fiscal_year, new.form_type)
    new.metadata_source = "+".join(s for s in (meta.metadata_source, "sidecar") if s)
    return new


def ensure_not_duplicate(content_sha256: str, known: Mapping[str, str], *, path: str | None = None) -> None:
    """Raise IngestError("duplicate") when these bytes are already registered.

    ``known`` maps content hashes to the filing id that holds them.
    """
    if content_sha256 in known:
        raise IngestError("duplicate", f"same bytes as already registered filing {known[content_sha256]}"
                          f" (sha256 {content_sha256[:16]}...)", path=path)
