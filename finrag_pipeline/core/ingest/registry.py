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

from finrag_pipeline.core.ingest.errors import BadSidecar, IngestError, InvalidFilingId
from finrag_pipeline.core.models import FilingMeta

FileFormat = Literal["pdf", "html"]
_SNIFF_BYTES = 4096
MAX_SIDECAR_BYTES = 64 * 1024

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


# A filing id is a partition key and part of file names: letters, digits, '-', '_', '.', no leading dot,
# at most 64 characters. Nothing else (no '/', no '..' prefix, no spaces) can reach a path or a key.
FILING_ID_PATTERN = r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}"
_FILING_ID_RE = re.compile(FILING_ID_PATTERN)


def validate_filing_id(value: object, *, source: str = "filing id", path: str | None = None) -> str:
    """``value`` if it is a valid filing id; raises InvalidFilingId (status invalid_id) otherwise."""
    if not isinstance(value, str) or not _FILING_ID_RE.fullmatch(value):
        shown = repr(value)[:80]
        raise InvalidFilingId(f"{source} {shown} is not a valid filing id (letters, digits, '-', '_', '.', "
                              "no leading dot, 1-64 characters)", path=path)
    return value


def _id_name(text: str | None) -> str:
    return re.sub(r"[^A-Z0-9]+", "-", (text or "").upper()).strip("-")[:40].strip("-")


def make_filing_id(ticker_or_company: str, fiscal_year: int, form_type: str = "10-K",
                   *fallbacks: str | None) -> str:
    """Readable, stable partition key: ``make_filing_id("AAPL", 2022, "10-K") == "AAPL-2022-10K"``.

    A company name works too ("Apple Inc." -> "APPLE-INC-2022-10K") for filings without a ticker;
    ``fallbacks`` (e.g. the company name) are used when the first name has no letters or digits ("---").
    Raises InvalidFilingId (a ValueError) when no name is usable.
    """
    name = next((n for n in map(_id_name, (ticker_or_company, *fallbacks)) if n), "")
    if not name:
        raise InvalidFilingId(f"a filing id needs a ticker or company name with letters or digits; got "
                              f"{[ticker_or_company, *fallbacks]!r:.120}")
    return validate_filing_id(f"{name}-{int(fiscal_year)}-{normalize_form_type(form_type)[:12]}")


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

    Keys must be FilingMeta fields; dates may be ISO strings; ``filing_id`` must match
    FILING_ID_PATTERN. Raises IngestError: bad_sidecar (unreadable, unknown keys, bad values),
    invalid_id, unsafe_path (a symlinked sidecar is never followed).
    """
    if isinstance(source, Mapping):
        data = dict(source)
    else:
        src = Path(source)
        if src.is_symlink():
            raise IngestError("unsafe_path", f"sidecar {src.name} is a symlink; not followed", path=str(src))
        if src.stat().st_size > MAX_SIDECAR_BYTES:
            raise BadSidecar(f"sidecar {src.name} is {src.stat().st_size} bytes (at most "
                              f"{MAX_SIDECAR_BYTES})", path=str(src))
        try:
            loaded = yaml.safe_load(src.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise BadSidecar(f"sidecar {src.name} is not valid YAML: "
                              f"{' '.join(str(exc).split())[:200]}", path=str(src)) from exc
        if not isinstance(loaded, Mapping):
            raise BadSidecar(f"sidecar {src.name} must be a mapping of FilingMeta fields",
                              path=str(src))
        data = dict(loaded)
    unknown = sorted(set(map(str, data)) - _META_FIELDS)
    if unknown:
        raise BadSidecar(f"sidecar has unknown keys {unknown}; allowed: {sorted(_META_FIELDS)}")
    try:
        if "fiscal_year" in data and data["fiscal_year"] is not None:
            data["fiscal_year"] = int(data["fiscal_year"])
            if not 1900 <= data["fiscal_year"] <= 2200:
                raise ValueError(f"fiscal_year {data['fiscal_year']} is out of range")
        if isinstance(data.get("period_end_date"), str):
            data["period_end_date"] = date.fromisoformat(data["period_end_date"])
        for key in ("ticker", "cik", "company", "form_type"):
            if data.get(key) is not None:
                if not isinstance(data[key], str | int):
                    raise ValueError(f"{key} must be text, not {type(data[key]).__name__}")
                data[key] = str(data[key])[:200]
    except (TypeError, ValueError) as exc:
        raise BadSidecar(f"sidecar value: {exc}") from exc
    if "filing_id" in data:
        validate_filing_id(data["filing_id"], source="sidecar filing_id")
    return data


def apply_sidecar(meta: FilingMeta, overrides: Mapping[str, Any]) -> FilingMeta:
    """Return ``meta`` with overrides applied; the filing id is rebuilt unless given explicitly."""
    if not overrides:
        return meta
    changes = dict(overrides)
    new = dataclasses.replace(meta, **changes)
    if "filing_id" not in changes:
        new.filing_id = make_filing_id(new.ticker or new.company, new.fiscal_year, new.form_type, new.company)
    validate_filing_id(new.filing_id)
    new.metadata_source = "+".join(s for s in (meta.metadata_source, "sidecar") if s)
    return new


def ensure_not_duplicate(content_sha256: str, known: Mapping[str, str], *, path: str | None = None) -> None:
    """Raise IngestError("duplicate") when these bytes are already registered.

    ``known`` maps content hashes to the filing id that holds them.
    """
    if content_sha256 in known:
        raise IngestError("duplicate", f"same bytes as already registered filing {known[content_sha256]}"
                          f" (sha256 {content_sha256[:16]}...)", path=path)
