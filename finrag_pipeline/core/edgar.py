"""EDGAR poller core: find new 10-K filings of a watchlist of tickers and drop them into the inbox.

Off by default (``edgar.enabled: false`` in assets_config/automation.yaml). One poll:

1. resolve each ticker to its CIK (the bundled company map of SEC registrants, or SEC's own ``company_tickers.json``),
2. fetch ``https://data.sec.gov/submissions/CIK##########.json`` (the company's filing index),
3. keep the 10-K rows whose accession number the cursor has not seen,
4. download each primary document into the inbox atomically (temp file + rename), so the inbox
   sensor never picks up half a file,
5. return what it did, with the advanced cursor (the caller persists it: a Dagster sensor cursor).

SEC's fair-access rules: every request carries a User-Agent naming the company and a contact email
("Company Name admin@example.com") and traffic stays under 10 requests per second. The poller
refuses to run without a User-Agent and never goes faster than ``min_interval_seconds`` (>= 0.1 s).
No Dagster imports here: the schedule in ``defs/automation`` calls :func:`poll_edgar`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests
from pydantic import BaseModel, Field, field_validator, model_validator

from finrag_pipeline.core.config import config_path, read_yaml
from finrag_pipeline.core.paths import FinragPaths, contained

SUBMISSIONS_URL = "https://data.sec.gov/submissions/CIK{cik10}.json"
ARCHIVES_URL = "https://www.sec.gov/Archives/edgar/data/{cik}/{accession_no_dashes}/{document}"
SEC_MIN_INTERVAL_SECONDS = 0.1  # SEC's published ceiling: 10 requests per second per client
PARTIAL_DIR_NAME = ".edgar-partial"  # temp downloads live here, beside (not in) the watched folder
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")


class EdgarError(RuntimeError):
    """The poller cannot run (missing User-Agent, unknown ticker, SEC refused the request)."""


# ----------------------------------------------------------------------------------------------
# Configuration: the `edgar`, `inbox` and `schedules` sections of assets_config/automation.yaml.


class EdgarConfig(BaseModel):
    enabled: bool = False
    user_agent: str = Field("", description='"Company Name admin@example.com": SEC rejects anonymous clients')
    tickers: list[str] = Field(default_factory=list)
    forms: list[str] = Field(default_factory=lambda: ["10-K"], description='add "10-K/A" for amendments')
    min_interval_seconds: float = Field(0.2, description="pause between requests; SEC allows >= 0.1")
    inbox: Path | None = Field(None, description="download folder; default: the inbox section, else FINRAG_HOME/inbox")
    ticker_map: Path | None = Field(None, description="SEC company_tickers.json; default: the bundled map")
    initial_backfill: int = Field(1, ge=0, description="filings downloaded for a ticker seen for the first time")
    timeout_seconds: float = 60.0
    max_retries: int = Field(3, ge=0, description="retries on 429 / 5xx, honouring Retry-After")

    @field_validator("tickers")
    @classmethod
    def _upper(cls, v: list[str]) -> list[str]:
        return [t.strip().upper() for t in v if t.strip()]

    @field_validator("min_interval_seconds")
    @classmethod
    def _within_sec_limit(cls, v: float) -> float:
        if v < SEC_MIN_INTERVAL_SECONDS:
            raise ValueError(f"min_interval_seconds {v} exceeds SEC's 10 requests/s (minimum 0.1)")
        return v

    @model_validator(mode="after")
    def _enabled_needs_user_agent(self) -> EdgarConfig:
        # Fail at config load, not at 3 a.m. in the schedule: an enabled poller must identify itself.
        if self.enabled:
            try:
                check_user_agent(self.user_agent)
            except EdgarError as exc:
                raise ValueError(str(exc)) from exc  # pydantic reports ValueErrors as validation errors
        return self


class InboxConfig(BaseModel):
    path: Path | None = Field(None, description="default FINRAG_HOME/inbox")
    quarantine: Path | None = Field(None, description="default FINRAG_HOME/quarantine")


class SchedulesConfig(BaseModel):
    nightly_reeval_cron: str = "0 3 * * *"
    edgar_cron: str = "0 */6 * * *"


class AutomationConfig(BaseModel):
    edgar: EdgarConfig = Field(default_factory=EdgarConfig)
    inbox: InboxConfig = Field(default_factory=InboxConfig)
    schedules: SchedulesConfig = Field(default_factory=SchedulesConfig)


def load_automation_config(path: str | os.PathLike | None = None) -> AutomationConfig:
    """Read assets_config/automation.yaml (or ``path``); a missing file gives the defaults."""
    p = Path(path) if path else config_path("automation.yaml")
    return AutomationConfig.model_validate(read_yaml(p, missing_ok=True))


def resolve_inbox(config: AutomationConfig, paths: FinragPaths | None = None) -> Path:
    """Where downloads go: edgar.inbox, else inbox.path, else FINRAG_HOME/inbox."""
    paths = paths or FinragPaths.from_env()
    return Path(config.edgar.inbox or config.inbox.path or paths.inbox).expanduser()


def check_user_agent(user_agent: str) -> str:
    """SEC asks for "Company Name admin@example.com"; refuse anything without a contact email."""
    ua = (user_agent or "").strip()
    if not ua or not _EMAIL.search(ua):
        raise EdgarError(
            "EDGAR needs a User-Agent naming you and a contact email, e.g. "
            "'Acme Research admin@acme.example' (edgar.user_agent in assets_config/automation.yaml)"
        )
    return ua


# ----------------------------------------------------------------------------------------------
# Ticker -> CIK


def load_ticker_map(path: str | os.PathLike | None = None) -> dict[str, str]:
    """Ticker -> 10-digit CIK from SEC's ``company_tickers.json`` layout
    (``{"0": {"cik_str": 320193, "ticker": "AAPL", "title": ...}, ...}``) or a flat ``{"AAPL": 320193}``."""
    if path is None:  # every SEC registrant with a ticker (current and former), offline
        from finrag_pipeline.core.company_map import load_company_map

        return {t.upper(): cik10(c.cik) for c in load_company_map().companies
                for t in [*c.former_tickers, *reversed(c.tickers)]}   # the primary ticker wins
    raw = json.loads(Path(path).read_text())
    entries: Iterable[tuple[Any, Any]]
    if isinstance(raw, Mapping) and raw and all(isinstance(v, Mapping) for v in raw.values()):
        entries = ((v["ticker"], v["cik_str"]) for v in raw.values())
    elif isinstance(raw, Mapping):
        entries = raw.items()
    else:
        raise EdgarError(f"unrecognised ticker map format in {path}")
    return {str(t).upper(): cik10(c) for t, c in entries}


def cik10(cik: Any) -> str:
    """CIKs are zero-padded to 10 digits in the submissions URL."""
    digits = str(cik).strip()
    if not digits.isdigit():
        raise EdgarError(f"not a CIK: {cik!r}")
    return digits.zfill(10)


# ----------------------------------------------------------------------------------------------
# Rate limiting and HTTP


class RateLimiter:
    """At most one request per ``min_interval`` seconds. Clock and sleep are injectable for tests."""

    def __init__(self, min_interval: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.min_interval = max(min_interval, SEC_MIN_INTERVAL_SECONDS)
        self.clock, self.sleep = clock, sleep
        self._last: float | None = None

    def wait(self) -> None:
        if self._last is not None:
            remaining = self.min_interval - (self.clock() - self._last)
            if remaining > 0:
                self.sleep(remaining)
        self._last = self.clock()


class EdgarClient:
    """GETs against SEC with the required User-Agent, one shared rate limit and polite retries.

    ``session`` is any ``requests.Session``: tests mount an adapter that replays recorded files.
    """

    RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

    def __init__(self, user_agent: str, *, min_interval_seconds: float = 0.2,
                 session: requests.Session | None = None, timeout: float = 60.0, max_retries: int = 3,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.user_agent = check_user_agent(user_agent)
        self.session = session or requests.Session()
        self.limiter = RateLimiter(min_interval_seconds, clock=clock, sleep=sleep)
        self.timeout, self.max_retries, self.sleep = timeout, max_retries, sleep
        self.n_requests = 0

    def get(self, url: str, *, stream: bool = False) -> requests.Response:
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate"}
        for attempt in range(self.max_retries + 1):
            self.limiter.wait()
            self.n_requests += 1
            resp = self.session.get(url, headers=headers, timeout=self.timeout, stream=stream)
            if resp.status_code not in self.RETRY_STATUS or attempt == self.max_retries:
                break
            # SEC answers 429 when a client goes too fast: back off (Retry-After if given).
            self.sleep(_retry_after(resp, default=2.0 ** attempt))
            resp.close()
        if resp.status_code == 403:
            raise EdgarError(f"SEC refused {url} (403): check the User-Agent and the request rate")
        resp.raise_for_status()
        return resp

    def get_json(self, url: str) -> Any:
        return self.get(url).json()


def _retry_after(resp: requests.Response, default: float) -> float:
    with contextlib.suppress(TypeError, ValueError):
        return max(0.0, float(resp.headers.get("Retry-After")))
    return default


# ----------------------------------------------------------------------------------------------
# Submissions -> new filings


@dataclass(frozen=True)
class EdgarFiling:
    """One row of ``filings.recent`` in the submissions JSON."""

    ticker: str
    cik: str                 # 10-digit
    company: str
    accession_number: str    # "0000320193-25-000079"
    form: str
    filing_date: str
    report_date: str
    primary_document: str

    @property
    def url(self) -> str:
        return primary_document_url(self.cik, self.accession_number, self.primary_document)


def primary_document_url(cik: str, accession_number: str, primary_document: str) -> str:
    """Archives path: the CIK without leading zeros, the accession number without dashes."""
    return ARCHIVES_URL.format(cik=int(cik), accession_no_dashes=accession_number.replace("-", ""),
                               document=primary_document)


def recent_filings(submissions: Mapping[str, Any], ticker: str) -> list[EdgarFiling]:
    """Rows of ``filings.recent`` (parallel arrays, newest first in SEC's files) as records."""
    recent = submissions.get("filings", {}).get("recent", {})
    accessions = recent.get("accessionNumber", [])

    def column(name: str) -> list[str]:
        values = recent.get(name) or []
        return list(values) + [""] * (len(accessions) - len(values))

    forms, filed, reported, docs = (column(n) for n in ("form", "filingDate", "reportDate", "primaryDocument"))
    cik = cik10(submissions.get("cik", "0"))
    return [
        EdgarFiling(ticker=ticker, cik=cik, company=submissions.get("name", ""), accession_number=a,
                    form=forms[i], filing_date=filed[i], report_date=reported[i], primary_document=docs[i])
        for i, a in enumerate(accessions)
    ]


def select_new_filings(filings: Iterable[EdgarFiling], forms: Iterable[str], seen: set[str], *,
                       first_time: bool, initial_backfill: int) -> tuple[list[EdgarFiling], list[EdgarFiling]]:
    """(to download, to mark seen without downloading), oldest first.

    A ticker polled for the first time has a decade of 10-Ks on record: take only the newest
    ``initial_backfill`` and remember the rest as seen, so turning the poller on does not flood
    the pipeline.
    """
    wanted = {f.upper() for f in forms}
    candidates = [f for f in filings if f.form.upper() in wanted and f.primary_document
                  and f.accession_number not in seen]
    candidates.sort(key=lambda f: (f.filing_date, f.accession_number), reverse=True)  # newest first
    if first_time:
        take, skip = candidates[:initial_backfill], candidates[initial_backfill:]
    else:
        take, skip = candidates, []
    return list(reversed(take)), skip


# ----------------------------------------------------------------------------------------------
# Cursor and download


@dataclass
class EdgarCursor:
    """Accession numbers already handled, per ticker. JSON-serialisable for a Dagster sensor cursor."""

    seen: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str | None) -> EdgarCursor:
        return cls(seen={k: list(v) for k, v in json.loads(text).get("seen", {}).items()}) if text else cls()

    def to_json(self) -> str:
        return json.dumps({"seen": {k: sorted(set(v)) for k, v in sorted(self.seen.items())}}, sort_keys=True)

    def knows(self, ticker: str) -> bool:
        return ticker in self.seen

    def seen_for(self, ticker: str) -> set[str]:
        return set(self.seen.get(ticker, []))

    def mark(self, ticker: str, accession_numbers: Iterable[str]) -> None:
        self.seen[ticker] = sorted(set(self.seen.get(ticker, [])) | set(accession_numbers))


@dataclass(frozen=True)
class DownloadedFiling:
    ticker: str
    cik: str
    accession_number: str
    form: str
    filing_date: str
    report_date: str
    url: str
    path: str
    n_bytes: int
    sha256: str


def inbox_file_name(f: EdgarFiling) -> str:
    """``AAPL_0000320193-25-000079_aapl-20250927.htm``: unique per accession, keeps SEC's document name."""
    def plain(text: str) -> str:  # every part comes from EDGAR's JSON: nothing in it may reach a path
        return re.sub(r"[^A-Za-z0-9._-]", "_", text)

    return f"{plain(f.ticker)}_{plain(f.accession_number)}_{plain(Path(f.primary_document).name)}".lstrip(".")


def download_atomically(client: EdgarClient, url: str, dest: Path) -> tuple[int, str]:
    """Stream ``url`` to a temp file beside the inbox, fsync, then rename into place.

    The temp file lives in ``<inbox>/.edgar-partial/`` (same filesystem, so ``os.replace`` is atomic)
    so the inbox sensor only ever sees complete files.
    """
    partial_dir = dest.parent / PARTIAL_DIR_NAME
    partial_dir.mkdir(parents=True, exist_ok=True)
    tmp = partial_dir / f"{dest.name}.{os.getpid()}.part"
    digest, n = hashlib.sha256(), 0
    resp = client.get(url, stream=True)
    try:
        with open(tmp, "wb") as fh:
            for block in resp.iter_content(chunk_size=1 << 16):
                fh.write(block)
                digest.update(block)
                n += len(block)
            fh.flush()
            os.fsync(fh.fileno())
        if n == 0:
            raise EdgarError(f"empty document at {url}")
        os.replace(tmp, dest)
    finally:
        resp.close()
        tmp.unlink(missing_ok=True)
    return n, digest.hexdigest()


# ----------------------------------------------------------------------------------------------
# One poll


@dataclass
class PollResult:
    downloaded: list[DownloadedFiling] = field(default_factory=list)
    marked_seen: list[str] = field(default_factory=list)      # old filings skipped on first sight
    errors: list[str] = field(default_factory=list)
    n_requests: int = 0
    cursor: EdgarCursor = field(default_factory=EdgarCursor)

    def summary(self) -> dict[str, Any]:
        return {"downloaded": [asdict(d) for d in self.downloaded], "marked_seen": self.marked_seen,
                "errors": self.errors, "n_requests": self.n_requests}


def poll_edgar(config: EdgarConfig, cursor: EdgarCursor | None, *, inbox: Path,
               client: EdgarClient | None = None, force: bool = False) -> PollResult:
    """Check every ticker once; download new filings into ``inbox``; return the advanced cursor.

    Does nothing unless ``config.enabled`` (or ``force``). A ticker that fails (unknown, HTTP error)
    is reported in ``errors`` and retried next poll; the cursor only advances past filings that were
    actually written, so a crash mid-download never loses a filing.
    """
    cursor = EdgarCursor(seen={k: list(v) for k, v in (cursor.seen if cursor else {}).items()})
    result = PollResult(cursor=cursor)
    if not (config.enabled or force):
        return result
    client = client or EdgarClient(config.user_agent, min_interval_seconds=config.min_interval_seconds,
                                   timeout=config.timeout_seconds, max_retries=config.max_retries)
    ticker_map = load_ticker_map(config.ticker_map)
    inbox.mkdir(parents=True, exist_ok=True)
    try:
        for ticker in config.tickers:
            try:
                _poll_ticker(ticker, config, ticker_map, cursor, client, inbox, result)
            except (EdgarError, requests.RequestException, ValueError, KeyError) as exc:
                result.errors.append(f"{ticker}: {exc}")
    finally:
        result.n_requests = client.n_requests
    return result


def _poll_ticker(ticker: str, config: EdgarConfig, ticker_map: Mapping[str, str], cursor: EdgarCursor,
                 client: EdgarClient, inbox: Path, result: PollResult) -> None:
    if ticker not in ticker_map:
        raise EdgarError(f"unknown ticker (not in the ticker map {config.ticker_map or 'core/data/company_map.csv.gz'};"
                         " `finrag company-map refresh` updates it)")
    submissions = client.get_json(SUBMISSIONS_URL.format(cik10=ticker_map[ticker]))
    first_time = not cursor.knows(ticker)
    take, skip = select_new_filings(recent_filings(submissions, ticker), config.forms,
                                    cursor.seen_for(ticker), first_time=first_time,
                                    initial_backfill=config.initial_backfill)
    cursor.mark(ticker, [f.accession_number for f in skip])
    result.marked_seen.extend(f.accession_number for f in skip)
    for filing in take:
        dest = contained(inbox / inbox_file_name(filing), inbox)
        n_bytes, sha = download_atomically(client, filing.url, dest)
        cursor.mark(ticker, [filing.accession_number])   # advance only after the file is in place
        result.downloaded.append(DownloadedFiling(
            ticker=ticker, cik=filing.cik, accession_number=filing.accession_number, form=filing.form,
            filing_date=filing.filing_date, report_date=filing.report_date, url=filing.url,
            path=str(dest), n_bytes=n_bytes, sha256=sha))
