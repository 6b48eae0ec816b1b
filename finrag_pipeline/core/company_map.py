"""SEC registrants: CIK, tickers, current and former names, offline.

The bundled snapshot (``core/data/company_map.csv.gz``, ~8,000 registrants with a ticker) is built
from the company-ticker reference table edgartools ships in its wheel
(``edgar/reference/data/company_tickers.parquet``), which mirrors SEC's company_tickers_exchange.json.
Neither carries former names, so ``core/data/company_map_extra.yaml`` adds former names/tickers and
common names; ``finrag company-map refresh`` rebuilds the map under FINRAG_HOME/reference from an
installed edgartools, or (online, with the EDGAR client) from SEC's own files including former names
of the companies in the catalog. The newest map wins: FINRAG_HOME/reference first, then the bundle.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

BUNDLED_MAP = Path(__file__).parent / "data" / "company_map.csv.gz"
EXTRA_MAP = Path(__file__).parent / "data" / "company_map_extra.yaml"
MAP_COLUMNS = ("cik", "name", "tickers", "exchange", "former_names", "former_tickers")

_SUFFIXES = {"INC", "INCORPORATED", "CORP", "CORPORATION", "CO", "COMPANY", "LTD", "LIMITED", "PLC", "LLC",
             "LP", "L P", "NV", "N V", "SA", "S A", "AG", "SE", "HOLDINGS", "HOLDING", "GROUP", "THE", "DE", "NEW"}


def normalize_company_name(name: str | None) -> str:
    """A key that survives the ways one registrant is written: "McDONALD'S CORPORATION",
    "MCDONALDS CORP" -> "MCDONALDS"; "AMAZON.COM, INC." and "AMAZON COM INC" -> "AMAZON COM";
    "The Kraft Heinz Company" -> "KRAFT HEINZ"; "COSTCO WHOLESALE CORP /NEW" -> "COSTCO WHOLESALE"."""
    t = (name or "").upper().replace("’", "'").replace("&", " AND ")
    t = re.sub(r"/[A-Z]{2,3}/?$", "", t.strip())           # EDGAR's state tags: "/DE/", "/NEW"
    t = re.sub(r"'", "", t)
    words = re.sub(r"[^A-Z0-9]+", " ", t).split()
    while words and words[-1] in _SUFFIXES:
        words.pop()
    while words and words[0] == "THE":
        words.pop(0)
    return " ".join(words)


@dataclass
class Company:
    cik: str                      # without leading zeros
    name: str                     # current EDGAR name
    tickers: list[str] = field(default_factory=list)   # primary first
    exchange: str | None = None
    former_names: list[str] = field(default_factory=list)
    former_tickers: list[str] = field(default_factory=list)
    common_names: list[str] = field(default_factory=list)

    @property
    def ticker(self) -> str | None:
        return self.tickers[0] if self.tickers else None

    def names(self) -> list[str]:
        return [self.name, *self.former_names, *self.common_names]


class CompanyMap:
    """Look up a registrant by CIK, ticker or (current/former) name."""

    def __init__(self, companies: Iterable[Company], source: str = ""):
        self.companies = list(companies)
        self.source = source
        self._by_cik = {c.cik: c for c in self.companies}
        self._by_ticker: dict[str, Company] = {}
        self._by_name: dict[str, Company] = {}
        for c in self.companies:
            for t in [*c.tickers, *c.former_tickers]:
                self._by_ticker.setdefault(t.upper(), c)
            for n in c.names():
                key = normalize_company_name(n)
                if key:
                    self._by_name.setdefault(key, c)

    def __len__(self) -> int:
        return len(self.companies)

    def by_cik(self, cik: str | int | None) -> Company | None:
        return self._by_cik.get(str(cik).lstrip("0")) if cik not in (None, "") else None

    def by_ticker(self, ticker: str | None) -> Company | None:
        return self._by_ticker.get(ticker.upper().replace(".", "-")) or self._by_ticker.get(ticker.upper()) \
            if ticker else None

    def by_name(self, name: str | None) -> Company | None:
        key = normalize_company_name(name)
        return self._by_name.get(key) if key else None

    def find(self, *, cik: str | None = None, ticker: str | None = None, name: str | None = None
             ) -> tuple[Company | None, str]:
        """The registrant and how it was matched ("cik", "ticker", "name", "former name", "")."""
        if (c := self.by_cik(cik)) is not None:
            return c, "cik"
        if (c := self.by_ticker(ticker)) is not None:
            return c, "ticker"
        if (c := self.by_name(name)) is not None:
            current = normalize_company_name(c.name) == normalize_company_name(name)
            return c, "name" if current else "former name"
        return None, ""


def _split(value: object) -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return []
    return [v.strip() for v in value.split("|") if v.strip()]


def read_map_csv(data: bytes | Path) -> list[Company]:
    raw = data.read_bytes() if isinstance(data, Path) else data
    df = pd.read_csv(io.BytesIO(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw), dtype=str,
                     keep_default_na=False)
    return [Company(cik=str(r["cik"]).lstrip("0"), name=r["name"], tickers=_split(r.get("tickers")),
                    exchange=r.get("exchange") or None, former_names=_split(r.get("former_names")),
                    former_tickers=_split(r.get("former_tickers")))
            for r in df.to_dict("records")]


def write_map_csv(companies: Iterable[Company], path: Path) -> Path:
    rows = [{"cik": c.cik, "name": c.name, "tickers": "|".join(c.tickers), "exchange": c.exchange or "",
             "former_names": "|".join(c.former_names), "former_tickers": "|".join(c.former_tickers)}
            for c in companies]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pd.DataFrame(rows, columns=list(MAP_COLUMNS)).to_csv(tmp, index=False, compression={"method": "gzip", "mtime": 0})
    tmp.replace(path)
    return path


def apply_extra(companies: list[Company], extra_path: Path = EXTRA_MAP) -> list[Company]:
    """Former names/tickers and common names the ticker table does not carry."""
    extra = yaml.safe_load(extra_path.read_text(encoding="utf-8")) or {} if extra_path.is_file() else {}
    by_cik = {c.cik: c for c in companies}
    for cik, info in (extra.get("companies") or {}).items():
        c = by_cik.get(str(cik).lstrip("0"))
        if c is None and not info.get("name"):
            continue  # former names of a registrant this map does not hold
        if c is None:
            c = Company(cik=str(cik).lstrip("0"), name=info["name"])
            companies.append(c)
            by_cik[c.cik] = c
        for key in ("former_names", "former_tickers", "common_names"):
            getattr(c, key).extend(v for v in info.get(key) or [] if v not in getattr(c, key))
    return companies


def user_map_path() -> Path:
    from finrag_pipeline.core.paths import FinragPaths

    return FinragPaths.from_env().home / "reference" / "company_map.csv.gz"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> CompanyMap:
    return CompanyMap(apply_extra(read_map_csv(Path(path))), source=path)


def load_company_map() -> CompanyMap:
    """The refreshed map under FINRAG_HOME/reference when there is one, else the bundled snapshot."""
    try:
        user = user_map_path()
    except Exception:  # noqa: BLE001 - no FINRAG_HOME configured: the bundle is enough
        user = None
    path = user if user is not None and user.is_file() else BUNDLED_MAP
    return _load(str(path), os.path.getmtime(path))


def companies_from_edgartools() -> list[Company]:
    """The company-ticker table shipped inside an installed edgartools wheel (no network)."""
    import importlib.util

    spec = importlib.util.find_spec("edgar")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("edgartools is not installed (pip install edgartools), or use --online")
    parquet = Path(next(iter(spec.submodule_search_locations))) / "reference" / "data" / "company_tickers.parquet"
    if not parquet.is_file():
        raise RuntimeError(f"this edgartools version ships no {parquet.name}")
    return _companies_from_frame(pd.read_parquet(parquet))


def _companies_from_frame(df: pd.DataFrame) -> list[Company]:
    out: dict[str, Company] = {}
    for r in df.to_dict("records"):
        cik = str(r.get("cik") or r.get("cik_str") or "").lstrip("0")
        if not cik:
            continue
        c = out.setdefault(cik, Company(cik=cik, name=str(r.get("name") or r.get("title") or ""),
                                        exchange=r.get("exchange") or None))
        t = str(r.get("ticker") or "").upper()
        if t and t not in c.tickers:
            c.tickers.append(t)
    return list(out.values())


def companies_from_edgar(client, ciks_with_history: Iterable[str] = ()) -> list[Company]:  # pragma: no cover - online
    """SEC's company_tickers_exchange.json, plus formerNames from the submissions of ``ciks_with_history``."""
    payload = client.get_json("https://www.sec.gov/files/company_tickers_exchange.json")
    df = pd.DataFrame(payload["data"], columns=payload["fields"])
    companies = _companies_from_frame(df)
    by_cik = {c.cik: c for c in companies}
    for cik in ciks_with_history:
        sub = client.get_json(f"https://data.sec.gov/submissions/CIK{int(cik):010d}.json")
        c = by_cik.get(str(cik).lstrip("0"))
        if c is not None:
            c.former_names.extend(f["name"] for f in sub.get("formerNames") or [] if f.get("name"))
    return companies


def refresh_company_map(source: str, *, client=None, ciks_with_history: Iterable[str] = (),
                        target: Path | None = None) -> tuple[Path, int]:
    """Rebuild the map under FINRAG_HOME/reference; ``source`` is "edgartools" or "edgar" (online).
    Former names already known (bundled or previously fetched) are kept."""
    if source == "edgartools":
        companies = companies_from_edgartools()
    elif source == "edgar":
        if client is None:
            raise ValueError("an online refresh needs an EdgarClient (automation.yaml edgar.user_agent)")
        companies = companies_from_edgar(client, ciks_with_history)
    else:
        raise ValueError(f"unknown company-map source {source!r}; valid: edgartools, edgar")
    known = load_company_map()
    for c in companies:
        old = known.by_cik(c.cik)
        if old is not None:
            c.former_names.extend(n for n in old.former_names if n not in c.former_names)
            c.former_tickers.extend(t for t in [*old.former_tickers, *old.tickers]
                                    if t not in c.tickers and t not in c.former_tickers)
    path = write_map_csv(companies, target or user_map_path())
    _load.cache_clear()
    return path, len(companies)
