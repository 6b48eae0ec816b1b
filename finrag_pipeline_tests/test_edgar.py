"""EDGAR poller against recorded SEC responses, replayed through a requests transport adapter.

No network: ``ReplayAdapter`` serves the files listed in data/edgar/responses.json and 404s
anything else, recording every request (URL, headers, fake-clock time).
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
import requests
from requests.adapters import BaseAdapter

from finrag_pipeline.core.edgar import (
    PARTIAL_DIR_NAME,
    EdgarClient,
    EdgarConfig,
    EdgarCursor,
    EdgarError,
    RateLimiter,
    load_automation_config,
    load_ticker_map,
    poll_edgar,
    primary_document_url,
)

DATA = Path(__file__).parent / "data" / "edgar"
UA = "Finrag Tests admin@finrag.example"
NEW_10K = "0000320193-25-000079"
OLDER_10KS = ["0000320193-24-000123", "0000320193-23-000106", "0000320193-22-000108", "0000320193-21-000105"]
NEW_10K_URL = "https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm"
SUBMISSIONS = "https://data.sec.gov/submissions/CIK0000320193.json"


class FakeClock:
    """monotonic() and sleep() that only move when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class ReplayAdapter(BaseAdapter):
    def __init__(self, clock: FakeClock, statuses: dict[str, list[int]] | None = None):
        super().__init__()
        self.clock = clock
        self.routes = {k: v for k, v in json.loads((DATA / "responses.json").read_text()).items()
                       if not k.startswith("_")}
        self.statuses = statuses or {}   # URL -> status codes to answer first (e.g. a 429)
        self.requests: list[dict] = []

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        self.requests.append({"url": request.url, "headers": dict(request.headers), "t": self.clock.now})
        queued = self.statuses.get(request.url)
        if queued:
            return self._response(request, queued.pop(0), b"slow down", {"Retry-After": "1"})
        route = self.routes.get(request.url)
        if route is None:
            return self._response(request, 404, b"not recorded", {})
        body = (DATA / route["file"]).read_bytes()
        return self._response(request, 200, body, {"Content-Type": route["content_type"]})

    @staticmethod
    def _response(request, status, body, headers):
        resp = requests.Response()
        resp.status_code, resp.url, resp.request = status, request.url, request
        resp.raw = io.BytesIO(body)
        resp.headers.update(headers)
        return resp

    def close(self) -> None:
        pass


def replay_client(clock: FakeClock, interval: float = 0.25, **adapter_kw) -> tuple[EdgarClient, ReplayAdapter]:
    adapter = ReplayAdapter(clock, **adapter_kw)
    session = requests.Session()
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    client = EdgarClient(UA, min_interval_seconds=interval, session=session,
                         clock=clock.monotonic, sleep=clock.sleep)
    return client, adapter


def config(**kw) -> EdgarConfig:
    return EdgarConfig(enabled=True, user_agent=UA, tickers=["aapl"], min_interval_seconds=0.25, **kw)


def test_downloads_only_the_new_10k_and_advances_the_cursor(tmp_path):
    clock = FakeClock()
    client, adapter = replay_client(clock)
    cursor = EdgarCursor(seen={"AAPL": OLDER_10KS})
    inbox = tmp_path / "inbox"

    result = poll_edgar(config(), cursor, inbox=inbox, client=client)

    assert result.errors == []
    assert [r["url"] for r in adapter.requests] == [SUBMISSIONS, NEW_10K_URL]
    assert all(r["headers"]["User-Agent"] == UA for r in adapter.requests)
    assert [d.accession_number for d in result.downloaded] == [NEW_10K]
    got = result.downloaded[0]
    assert got.url == NEW_10K_URL and got.form == "10-K" and got.report_date == "2025-09-27"
    # The recorded primary document lands whole in the inbox; no temp file is left behind.
    source = (DATA.parent / "aapl-10-k-2025-10-31.html").read_bytes()
    landed = Path(got.path)
    assert landed.parent == inbox and landed.read_bytes() == source
    assert got.sha256 == hashlib.sha256(source).hexdigest() and got.n_bytes == len(source)
    assert [p.name for p in inbox.iterdir() if p.is_file()] == [landed.name]
    assert list((inbox / PARTIAL_DIR_NAME).iterdir()) == []
    # The cursor moved past the new filing and round-trips through JSON (a sensor cursor).
    assert NEW_10K in result.cursor.seen["AAPL"]
    assert NEW_10K not in cursor.seen["AAPL"]           # the caller's cursor is not mutated
    again = poll_edgar(config(), EdgarCursor.from_json(result.cursor.to_json()), inbox=inbox,
                       client=replay_client(clock)[0])
    assert again.downloaded == [] and again.n_requests == 1


def test_requests_are_spaced_by_the_rate_limit(tmp_path):
    clock = FakeClock()
    client, adapter = replay_client(clock, interval=0.25)
    cursor = EdgarCursor(seen={"AAPL": OLDER_10KS[1:]})  # two new 10-Ks: 2024 and 2025
    result = poll_edgar(config(), cursor, inbox=tmp_path / "inbox", client=client)

    assert [d.accession_number for d in result.downloaded] == [OLDER_10KS[0], NEW_10K]  # oldest first
    times = [r["t"] for r in adapter.requests]
    assert len(times) == 3
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(g >= 0.25 - 1e-9 for g in gaps), gaps
    assert result.n_requests == 3


def test_first_poll_of_a_ticker_backfills_only_the_newest(tmp_path):
    clock = FakeClock()
    client, _ = replay_client(clock)
    result = poll_edgar(config(initial_backfill=1), None, inbox=tmp_path / "inbox", client=client)
    assert [d.accession_number for d in result.downloaded] == [NEW_10K]
    assert sorted(result.marked_seen) == sorted(OLDER_10KS)   # remembered, not downloaded
    assert set(result.cursor.seen["AAPL"]) == {NEW_10K, *OLDER_10KS}


def test_retries_after_429_and_reports_unknown_tickers(tmp_path):
    clock = FakeClock()
    client, adapter = replay_client(clock, statuses={SUBMISSIONS: [429]})
    cfg = config()
    cfg.tickers = ["AAPL", "NOPE"]
    result = poll_edgar(cfg, EdgarCursor(seen={"AAPL": [NEW_10K, *OLDER_10KS]}),
                        inbox=tmp_path / "inbox", client=client)
    assert [r["url"] for r in adapter.requests] == [SUBMISSIONS, SUBMISSIONS]
    assert 1.0 in clock.sleeps                      # honoured Retry-After
    assert len(result.errors) == 1 and result.errors[0].startswith("NOPE:")


def test_failed_download_does_not_advance_the_cursor(tmp_path):
    clock = FakeClock()
    client, _ = replay_client(clock, statuses={NEW_10K_URL: [404]})
    result = poll_edgar(config(), EdgarCursor(seen={"AAPL": OLDER_10KS}), inbox=tmp_path / "inbox",
                        client=client)
    assert result.downloaded == [] and "404" in result.errors[0]
    assert NEW_10K not in result.cursor.seen["AAPL"]
    assert [p for p in (tmp_path / "inbox").iterdir() if p.is_file()] == []


def test_user_agent_is_required():
    with pytest.raises(EdgarError):
        EdgarClient("")
    with pytest.raises(EdgarError):
        EdgarClient("no email here")
    with pytest.raises(ValueError):          # pydantic wraps the EdgarError at config load
        EdgarConfig(enabled=True, user_agent="", tickers=["AAPL"])
    with pytest.raises(ValueError):
        EdgarConfig(min_interval_seconds=0.05)   # faster than SEC's 10 requests/s


def test_disabled_poller_does_nothing(tmp_path):
    cfg = EdgarConfig(tickers=["AAPL"])          # enabled: false, no user agent: fine while off
    result = poll_edgar(cfg, None, inbox=tmp_path / "inbox")
    assert result.downloaded == [] and result.n_requests == 0


def test_rate_limiter_never_goes_below_sec_floor():
    clock = FakeClock()
    limiter = RateLimiter(0.01, clock=clock.monotonic, sleep=clock.sleep)
    limiter.wait()
    limiter.wait()
    assert clock.sleeps == [pytest.approx(0.1)]


def test_ticker_maps_and_url_building(tmp_path):
    bundled = load_ticker_map()
    assert bundled["AAPL"] == "0000320193" and bundled["BRK-B"] == "0001067983"
    sec_format = tmp_path / "company_tickers.json"
    sec_format.write_text(json.dumps({"0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}}))
    assert load_ticker_map(sec_format) == {"AAPL": "0000320193"}
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"msft": 789019}))
    assert load_ticker_map(flat) == {"MSFT": "0000789019"}
    assert primary_document_url("0000320193", NEW_10K, "aapl-20250927.htm") == NEW_10K_URL


def test_automation_yaml_loads_with_the_poller_off():
    cfg = load_automation_config()
    assert cfg.edgar.enabled is False and cfg.edgar.min_interval_seconds == 0.2
    assert cfg.inbox.path is None and cfg.inbox.quarantine is None
    assert cfg.schedules.nightly_reeval_cron == "0 3 * * *"
    assert cfg.schedules.edgar_cron == "0 */6 * * *"
