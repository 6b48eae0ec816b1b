"""Read the company and the fiscal period a question is about, and map them onto the corpus.

"What was Apple's cash as of December 31, 2022?" names a calendar date; Apple's fiscal year ends in
late September, so the filing that holds that balance is Apple's FY2023 10-K. Every period in a
question is mapped onto each company's own fiscal calendar (taken from the corpus catalog: a filing's
fiscal_year label and period_end_date), then turned into SearchFilters (``prefilter``) or a score
bonus (``boost``).

Conventions (10-K language):
- "FY2022", "FY22", "fiscal 2022", "fiscal year 2022" -> the issuer's fiscal year label 2022.
- a bare year ("in 2023", "2022 vs 2021") -> fiscal year label too: 10-Ks call their fiscal years by
  the year ("net sales in 2022" in Apple's 10-K is fiscal 2022).
- "calendar 2022" -> every fiscal year overlapping calendar 2022 by at least 4 months.
- a date ("as of December 31, 2022", "2022-12-31") -> the fiscal year that contains it.
- "third quarter of 2023", "Q3 FY23" -> fiscal Q3 of fiscal 2023 (10-Ks number their own quarters);
  "third quarter of calendar 2023" -> the fiscal year containing that calendar quarter's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Literal

from finrag_pipeline.core.models import Chunk, SearchFilters, filters_match


@dataclass(frozen=True)
class CatalogFiling:
    filing_id: str
    ticker: str | None
    company: str
    fiscal_year: int
    period_end_date: date | None
    cik: str | None = None


def _text_or_none(value: Any) -> str | None:
    """A warehouse text value, or None for NULL/NaN/blank (pandas turns a NULL ticker into NaN)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    return text or None


class CorpusCatalog:
    """The filings in the corpus: what query understanding maps companies and periods onto."""

    def __init__(self, filings: Iterable[CatalogFiling | Mapping[str, Any]] = ()):
        self.filings: list[CatalogFiling] = []
        for f in filings:
            if isinstance(f, Mapping):
                ped = f.get("period_end_date")
                if isinstance(ped, str):
                    ped = date.fromisoformat(ped[:10])
                elif ped is not None and ped != ped:  # NaT / NaN
                    ped = None
                elif isinstance(ped, datetime):  # pandas Timestamp too: a datetime is a date, but compares badly
                    ped = ped.date()
                f = CatalogFiling(str(f["filing_id"]), _text_or_none(f.get("ticker")),
                                  _text_or_none(f.get("company")) or "", int(f["fiscal_year"]), ped,
                                  _text_or_none(f.get("cik")))
            self.filings.append(f)

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk]) -> CorpusCatalog:
        """A catalog without period end dates (fiscal-calendar mapping then falls back to labels)."""
        seen: dict[str, CatalogFiling] = {}
        for c in chunks:
            seen.setdefault(c.filing_id, CatalogFiling(c.filing_id, c.ticker, c.company, c.fiscal_year, None))
        return cls(seen.values())

    @classmethod
    def from_warehouse(cls, warehouse: Any) -> CorpusCatalog:
        df = warehouse.query_df(
            "SELECT filing_id, ticker, company, fiscal_year, period_end_date, cik FROM core.filings "
            "WHERE NOT coalesce(removed, false)")
        return cls(df.to_dict("records"))

    def __iter__(self):
        return iter(self.filings)

    def __len__(self) -> int:
        return len(self.filings)

    def by_id(self, filing_id: str) -> CatalogFiling | None:
        return next((f for f in self.filings if f.filing_id == filing_id), None)

    def in_scope(self, filters: SearchFilters | None) -> list[CatalogFiling]:
        return [f for f in self.filings
                if filters_match(filters, filing_id=f.filing_id, ticker=f.ticker, fiscal_year=f.fiscal_year,
                                 chunk_type=None)]


PeriodKind = Literal["fiscal_year", "year", "calendar_year", "date", "fiscal_quarter", "calendar_quarter"]
PeriodMode = Literal["prefilter", "boost", "none"]

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
MONTH_ABBR = {m[:3]: i for m, i in MONTHS.items()} | {"sept": 9}
ORDINAL_QUARTER = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
COMPANY_SUFFIXES = re.compile(
    r"[,\s]+(inc\.?|incorporated|corporation|corp\.?|co\.?|company|ltd\.?|limited|plc|l\.?p\.?|holdings?|group)$",
    re.IGNORECASE)
# Same-name words a first-word alias must never be (they would match ordinary questions).
GENERIC_WORDS = {"the", "first", "general", "american", "united", "international", "national", "global"}

_YEAR = r"((?:19|20)\d{2})"
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
RE_DATE_US = re.compile(_MONTH + r"\s+(\d{1,2}),?\s+" + _YEAR, re.IGNORECASE)
RE_DATE_ISO = re.compile(r"\b" + _YEAR + r"-(\d{2})-(\d{2})\b")
RE_QUARTER_WORD = re.compile(
    r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(fiscal\s+)?quarter\s+(?:of\s+)?(?:the\s+)?"
    r"(fiscal\s+|calendar\s+)?(?:year\s+)?(?:FY\s?)?" + _YEAR + r"\b", re.IGNORECASE)
RE_QUARTER_Q = re.compile(r"\bQ([1-4])\s*(?:of\s+)?(fiscal\s+|calendar\s+|FY\s?'?|CY\s?'?)?'?((?:19|20)?\d{2})\b",
                          re.IGNORECASE)
RE_FY = re.compile(r"\bFY\s?'?((?:19|20)?\d{2})\b", re.IGNORECASE)
RE_FISCAL = re.compile(r"\bfiscal(?:\s+years?)?\s+" + _YEAR + r"\b", re.IGNORECASE)
RE_CALENDAR = re.compile(r"\b(?:calendar(?:\s+year)?|CY)\s?" + _YEAR + r"\b", re.IGNORECASE)
RE_YEAR = re.compile(r"(?<![\d.,$])" + _YEAR + r"(?![\d.,%]\d|\d|%)")


@dataclass(frozen=True)
class PeriodRef:
    kind: PeriodKind
    year: int
    text: str
    quarter: int | None = None
    day: date | None = None

    @property
    def label(self) -> str:
        if self.kind == "date" and self.day:
            return self.day.isoformat()
        if self.quarter:
            return f"Q{self.quarter} FY{self.year}" if self.kind == "fiscal_quarter" else f"Q{self.quarter} CY{self.year}"
        return f"CY{self.year}" if self.kind == "calendar_year" else f"FY{self.year}"


def _year4(text: str) -> int:
    y = int(text)
    return y + 2000 if y < 100 else y


def parse_periods(question: str) -> list[PeriodRef]:
    """Every period mentioned, in order of appearance; each year is read once (a year inside a
    date or a quarter is not read again as a bare year)."""
    found: list[tuple[int, PeriodRef]] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return not any(m.start() < e and s < m.end() for s, e in taken)

    def add(m: re.Match[str], ref: PeriodRef) -> None:
        taken.append((m.start(), m.end()))
        found.append((m.start(), ref))

    for m in RE_DATE_US.finditer(question):
        month_txt = m.group(1).lower().rstrip(".")
        month = MONTHS.get(month_txt) or MONTH_ABBR.get(month_txt[:4]) or MONTH_ABBR.get(month_txt[:3])
        try:
            d = date(int(m.group(3)), month, int(m.group(2)))
        except (TypeError, ValueError):
            continue
        add(m, PeriodRef("date", d.year, m.group(0), day=d))
    for m in RE_DATE_ISO.finditer(question):
        if free(m):
            try:
                d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError:
                continue
            add(m, PeriodRef("date", d.year, m.group(0), day=d))
    for m in RE_QUARTER_WORD.finditer(question):
        if free(m):
            calendar = bool(m.group(3)) and m.group(3).strip().lower() == "calendar"
            kind: PeriodKind = "calendar_quarter" if calendar else "fiscal_quarter"
            add(m, PeriodRef(kind, int(m.group(4)), m.group(0), quarter=ORDINAL_QUARTER[m.group(1).lower()]))
    for m in RE_QUARTER_Q.finditer(question):
        if free(m):
            marker = (m.group(2) or "").strip().lower()
            kind = "calendar_quarter" if marker.startswith(("calendar", "cy")) else "fiscal_quarter"
            add(m, PeriodRef(kind, _year4(m.group(3)), m.group(0), quarter=int(m.group(1))))
    for m in RE_CALENDAR.finditer(question):
        if free(m):
            add(m, PeriodRef("calendar_year", int(m.group(1)), m.group(0)))
    for regex in (RE_FY, RE_FISCAL):
        for m in regex.finditer(question):
            if free(m):
                add(m, PeriodRef("fiscal_year", _year4(m.group(1)), m.group(0)))
    for m in RE_YEAR.finditer(question):
        if free(m):
            add(m, PeriodRef("year", int(m.group(1)), m.group(0)))
    return [ref for _, ref in sorted(found, key=lambda x: x[0])]


class FiscalCalendar:
    """One company's fiscal calendar, from its filings' (fiscal_year, period_end_date) pairs.

    Without any period end date the calendar is assumed to end on December 31 (label = year)."""

    TOLERANCE_DAYS = 7  # 52/53-week years move the year end by up to a week (Apple: Sep 24 .. Oct 1)

    def __init__(self, filings: Iterable[CatalogFiling]):
        self.known = sorted({(f.period_end_date, f.fiscal_year) for f in filings if f.period_end_date},
                            key=lambda x: x[0])

    def _anniversary(self, year: int) -> tuple[date, int]:
        """The fiscal year end falling in calendar ``year`` and its label."""
        if not self.known:
            return date(year, 12, 31), year
        p0, fy0 = self.known[-1]
        day = min(p0.day, 28) if p0.month == 2 else p0.day
        return date(year, p0.month, day), year + (fy0 - p0.year)

    def fiscal_year_of(self, d: date) -> int:
        """The fiscal year label whose year contains ``d`` (a year end itself belongs to its year)."""
        # A known filing's own year: (previous end, end]. Exact, 52/53-week years included.
        for i, (end, fy) in enumerate(self.known):
            start = self.known[i - 1][0] if i > 0 and (end - self.known[i - 1][0]).days < 380 \
                else end - timedelta(days=364 if (end - timedelta(days=364)).weekday() == end.weekday() else 365)
            if start < d <= end or abs((d - end).days) <= self.TOLERANCE_DAYS:
                return fy
        end, label = self._anniversary(d.year)
        if abs((d - end).days) <= self.TOLERANCE_DAYS or d <= end:
            return label
        return label + 1

    def fiscal_years_overlapping(self, start: date, end: date, min_days: int = 1) -> list[int]:
        """Fiscal years whose span overlaps [start, end] by at least ``min_days``."""
        out = []
        for y in range(start.year - 1, end.year + 2):
            fy_end, label = self._anniversary(y)
            fy_start = fy_end - timedelta(days=365)
            overlap = (min(end, fy_end) - max(start, fy_start)).days
            if overlap >= min_days:
                out.append(label)
        return sorted(set(out))

    def map_period(self, ref: PeriodRef) -> list[int]:
        """The fiscal year labels (of this company) a period refers to."""
        if ref.kind in ("fiscal_year", "year", "fiscal_quarter"):
            return [ref.year]
        if ref.kind == "date" and ref.day:
            return [self.fiscal_year_of(ref.day)]
        if ref.kind == "calendar_quarter" and ref.quarter:
            q_end_month = 3 * ref.quarter
            q_end = date(ref.year, q_end_month, 31 if q_end_month in (3, 12) else 30)
            return [self.fiscal_year_of(q_end)]
        if ref.kind == "calendar_year":
            return self.fiscal_years_overlapping(date(ref.year, 1, 1), date(ref.year, 12, 31), min_days=120)
        return []


@dataclass
class CompanyAlias:
    key: str              # ticker when known, else the company name
    patterns: list[re.Pattern[str]]
    names: list[str] = field(default_factory=list)   # the alias texts, for display and tests


# Company names that are also ordinary words: matched only as a proper noun ("Block", "BLOCK").
ORDINARY_WORD_NAMES = {"block", "square", "target", "gap", "visa", "ford", "delta", "ball", "crown", "progressive",
                       "general", "united", "first", "alphabet", "meta", "match", "chewy", "carter", "best"}
_ARTICLES = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def company_key(ticker: Any, company: Any) -> str:
    """The catalog key of a filing's company: its ticker, else its name (NaN/None-safe)."""
    t = ticker if isinstance(ticker, str) and ticker.strip() else None
    return t or (company if isinstance(company, str) else "")


def name_aliases(name: str) -> set[str]:
    """"The Boeing Company" -> {"the boeing company", "boeing"}; "AMAZON.COM, INC." -> {..., "amazon.com",
    "amazon"}; "McDONALD'S CORPORATION" -> {..., "mcdonald's", "mcdonalds"}."""
    name = re.sub(r"\s+", " ", (name or "").replace("’", "'")).strip(" ,.")
    if not name:
        return set()
    out = {name.lower()}
    base = _ARTICLES.sub("", name)
    while COMPANY_SUFFIXES.search(base):
        base = COMPANY_SUFFIXES.sub("", base).strip(" ,.")
    base = re.sub(r"\s*/[A-Z]{2,3}/?$", "", base).strip(" ,.")   # EDGAR's "COSTCO WHOLESALE CORP /NEW"
    if base:
        out.update({base.lower(), base.lower().removesuffix(".com"), base.lower().replace(".com", "")})
        if "'" in base:
            out.add(base.lower().replace("'", ""))
        first = re.split(r"[\s,]+", base)[0].lower().removesuffix(".com").replace("'", "")
        if len(first) >= 4 and first not in GENERIC_WORDS and " " in base:
            out.add(first)
    return {a for a in out if len(a) >= 2 and a not in GENERIC_WORDS}


def _alias_pattern(alias: str) -> re.Pattern[str]:
    body = re.escape(alias).replace("'", "['’]?") if "'" in alias else re.escape(alias)
    if alias in ORDINARY_WORD_NAMES:
        return re.compile(r"(?<![\w])(?:" + body.capitalize() + "|" + body.upper() + r")(?![\w])")
    return re.compile(r"(?<![\w])" + body + r"(?![\w])", re.IGNORECASE)


def _company_aliases(filings: Sequence[CatalogFiling]) -> list[CompanyAlias]:
    """Aliases per company from the catalog and the company map: legal name, the name without articles
    and legal suffixes, its first word, common and former names, current and former tickers, CIK."""
    from finrag_pipeline.core.company_map import load_company_map

    cmap = load_company_map()
    by_key: dict[str, set[str]] = {}
    tickers: dict[str, set[str]] = {}
    ciks: dict[str, set[str]] = {}
    for f in filings:
        key = company_key(f.ticker, f.company)
        if not key:
            continue
        names = by_key.setdefault(key, set())
        names.update(name_aliases(f.company if isinstance(f.company, str) else ""))
        ticks = tickers.setdefault(key, set())
        if company_key(f.ticker, None):
            ticks.add(f.ticker.upper())
        known, _ = cmap.find(cik=getattr(f, "cik", None), ticker=company_key(f.ticker, None) or None,
                             name=f.company if isinstance(f.company, str) else None)
        if known is not None:
            for n in known.names():
                names.update(name_aliases(n))
            ticks.update(t.upper() for t in [*known.tickers[:1], *known.former_tickers])
            ciks.setdefault(key, set()).add(known.cik)
        if getattr(f, "cik", None):
            ciks.setdefault(key, set()).add(str(f.cik).lstrip("0"))
    out = []
    for key in sorted(by_key):
        names = by_key[key]
        pats = [_alias_pattern(n) for n in sorted(names)]
        for t in sorted(tickers.get(key, ())):
            if len(t) >= 2:
                # Tickers only in capitals ("AAPL", "MSFT"): lower-case tickers are often plain words.
                pats.append(re.compile(r"(?<![\w$])\$?" + re.escape(t) + r"(?![\w])"))
        for cik in sorted(ciks.get(key, ())):
            pats.append(re.compile(r"\bCIK\s*:?\s*0*" + re.escape(cik) + r"\b", re.IGNORECASE))
        out.append(CompanyAlias(key, pats, sorted(names | tickers.get(key, set()))))
    return out


@dataclass
class QueryUnderstanding:
    """What a question is about, resolved against a catalog."""

    question: str
    companies: list[str] = field(default_factory=list)          # catalog keys (tickers) named
    periods: list[PeriodRef] = field(default_factory=list)
    fiscal_years: dict[str, list[int]] = field(default_factory=dict)  # company key -> fiscal years
    filing_ids: list[str] | None = None                         # filings matching company AND period

    @property
    def constrained(self) -> bool:
        return bool(self.companies or self.periods)

    def all_fiscal_years(self) -> list[int]:
        return sorted({y for ys in self.fiscal_years.values() for y in ys})

    def to_filters(self) -> SearchFilters | None:
        if not self.constrained:
            return None
        if self.filing_ids is not None:
            return SearchFilters(filing_ids=tuple(self.filing_ids))
        # No catalog: fall back to what can be filtered without one.
        return SearchFilters(tickers=tuple(self.companies) or None,
                             fiscal_years=tuple(self.all_fiscal_years()) or None)

    def as_info(self) -> dict[str, Any]:
        return {"companies": self.companies, "periods": [p.label for p in self.periods],
                "fiscal_years": self.fiscal_years, "filing_ids": self.filing_ids}


class QueryParser:
    """Parses questions against one catalog (aliases and calendars are built once)."""

    def __init__(self, catalog: CorpusCatalog | None = None, covering_years: int = 0):
        self.catalog = catalog or CorpusCatalog()
        # A filing of fiscal year Y also reports Y-1 (balance sheet) and Y-2 (income statement);
        # covering_years=2 lets a FY2021 question match the FY2022 and FY2023 10-Ks as well.
        self.covering_years = covering_years
        self.aliases = _company_aliases(self.catalog.filings)
        self._calendars: dict[str, FiscalCalendar] = {}
        for a in self.aliases:
            self._calendars[a.key] = FiscalCalendar(f for f in self.catalog.filings
                                                    if company_key(f.ticker, f.company) == a.key)

    def calendar(self, company_key: str | None) -> FiscalCalendar:
        return self._calendars.get(company_key or "", FiscalCalendar([]))

    def companies_in(self, question: str) -> list[str]:
        return [a.key for a in self.aliases if any(p.search(question) for p in a.patterns)]

    def parse(self, question: str, scope: SearchFilters | None = None) -> QueryUnderstanding:
        qu = QueryUnderstanding(question=question, companies=self.companies_in(question),
                                periods=parse_periods(question))
        if not self.catalog.filings:
            qu.fiscal_years = {c: sorted({y for p in qu.periods for y in FiscalCalendar([]).map_period(p)})
                               for c in (qu.companies or ["*"])}
            return qu
        filings = self.catalog.in_scope(scope)
        keys = qu.companies or sorted({company_key(f.ticker, f.company) for f in filings})
        for key in keys:
            cal = self.calendar(key)
            years = sorted({y for p in qu.periods for y in cal.map_period(p)})
            if years:
                qu.fiscal_years[key] = years
        if qu.constrained:
            qu.filing_ids = [f.filing_id for f in filings if self._filing_matches(f, qu)]
        return qu

    def _filing_matches(self, f: CatalogFiling, qu: QueryUnderstanding) -> bool:
        key = company_key(f.ticker, f.company)
        if qu.companies and key not in qu.companies:
            return False
        if not qu.periods:
            return True
        years = qu.fiscal_years.get(key, [])
        return any(0 <= f.fiscal_year - y <= self.covering_years for y in years)
