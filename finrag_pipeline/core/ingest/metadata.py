"""Who filed what for which year: dei: facts (inline XBRL) or the cover page (PDF).

Fiscal year is the issuer's own label. iXBRL states it (dei:DocumentFiscalYearFocus: NVIDIA's year
ending 2025-01-26 is FY2025). A PDF cover only states the period end, so the fiscal year is the year
the period ends in (Microsoft, June 30, 2022 -> FY2022), which is how US issuers label their years.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from finrag_pipeline.core.ingest.tables import DATE_RE, clean_text, parse_date

# Fallback for covers that print no trading symbol: normalised company name -> ticker.
# Small on purpose; a sidecar YAML is the way to register anything else.
TICKER_FALLBACK: dict[str, str] = {
    "APPLE": "AAPL", "AMAZON.COM": "AMZN", "AMAZON": "AMZN", "MICROSOFT": "MSFT", "BOEING": "BA",
    "NVIDIA": "NVDA", "ALPHABET": "GOOGL", "META PLATFORMS": "META", "TESLA": "TSLA",
    "3M": "MMM", "JOHNSON & JOHNSON": "JNJ", "JPMORGAN CHASE": "JPM", "WALMART": "WMT",
    "INTEL": "INTC", "NETFLIX": "NFLX", "PEPSICO": "PEP", "COCA-COLA": "KO", "ADOBE": "ADBE",
    "ORACLE": "ORCL", "SALESFORCE": "CRM", "CISCO SYSTEMS": "CSCO", "VERIZON COMMUNICATIONS": "VZ",
}

_EXCHANGES = (r"(?:The\s+)?(?:Nasdaq|NASDAQ|New\s+York\s+Stock\s+Exchange|NYSE|Chicago\s+Stock\s+Exchange"
              r"|Cboe|CBOE)")
_TICKER_RE = re.compile(r"(?<![\w$.])([A-Z]{1,5}(?:\.[A-Z])?)\s+" + _EXCHANGES)
_FORM_RE = re.compile(r"\bFORM\s+(10-K(?:/A)?|10-KT?(?:405)?)\b", re.IGNORECASE)
_PERIOD_RE = re.compile(r"for\s+the\s+(?:fiscal\s+)?year\s+ended\s*:?\s*(.{6,40})", re.IGNORECASE)
_EXACT_NAME_RE = re.compile(r"\(\s*exact\s+name\s+of\s+registrant", re.IGNORECASE)
_LEGAL_SUFFIX_RE = re.compile(r"[,.]?\s+(INC|INCORPORATED|CORP|CORPORATION|CO|COMPANY|LTD|PLC|LLC|N\.V|S\.A)\.?$",
                              re.IGNORECASE)


@dataclass
class CoverInfo:
    """What a filing says about itself; any field may be missing."""

    company: str | None = None
    ticker: str | None = None
    cik: str | None = None
    form_type: str | None = None
    fiscal_year: int | None = None
    period_end_date: date | None = None
    fiscal_year_end: str | None = None     # "--09-24"
    source: str = ""
    notes: list[str] = field(default_factory=list)


def month_day(d: date | None) -> str | None:
    """date(2022, 9, 24) -> "--09-24" (XBRL gMonthDay, as dei:CurrentFiscalYearEndDate)."""
    return f"--{d.month:02d}-{d.day:02d}" if d else None


def ticker_from_name(company: str | None) -> str | None:
    """Fallback ticker for a registrant name ("APPLE INC." -> "AAPL"), None when unknown."""
    if not company:
        return None
    name = company.upper().strip()
    for _ in range(2):  # "AMAZON.COM, INC." -> "AMAZON.COM"; "THE BOEING COMPANY" -> "BOEING"
        name = _LEGAL_SUFFIX_RE.sub("", name).strip(" ,.")
    name = re.sub(r"^THE\s+", "", name)
    return TICKER_FALLBACK.get(name)


# ---------------------------------------------------------------- PDF cover page


def _company_from_cover(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        if _EXACT_NAME_RE.search(line):
            for prev in reversed(lines[max(0, i - 3):i]):
                if prev.strip() and not re.search(r"commission file|^_+$", prev, re.I):
                    return clean_text(prev)
    # No "(Exact name ...)" caption (Microsoft): the name follows the commission file number.
    for i, line in enumerate(lines):
        if re.search(r"commission\s+file\s+(number|no)", line, re.I):
            for nxt in lines[i + 1:i + 4]:
                s = clean_text(nxt)
                if s and not re.fullmatch(r"[_\-\s]+", s):
                    return s
    return None


def _ticker_from_cover(text: str) -> str | None:
    start = re.search(r"Section\s+12\s*\(b\)", text, re.I)
    block = text[start.end():start.end() + 1500] if start else text
    m = _TICKER_RE.search(block)
    return m.group(1) if m else None


def parse_pdf_cover(text: str) -> CoverInfo:
    """Company, ticker, form type and period from the cover page text of a 10-K PDF."""
    info = CoverInfo(source="pdf-cover")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    m = _FORM_RE.search(text)
    info.form_type = m.group(1).upper() if m else None
    m = _PERIOD_RE.search(text)
    if m:
        info.period_end_date = parse_date(clean_text(m.group(1)))
    if info.period_end_date is None:
        # Some covers put the date on the line after "For the fiscal year ended".
        m = re.search(r"year\s+ended\s*:?\s*\n?\s*" + DATE_RE.pattern, text, re.I)
        info.period_end_date = parse_date(m.group(0)) if m else None
    if info.period_end_date is not None:
        info.fiscal_year = info.period_end_date.year
        info.fiscal_year_end = month_day(info.period_end_date)
    info.company = _company_from_cover(lines)
    info.ticker = _ticker_from_cover(text)
    if info.ticker is None:
        info.ticker = ticker_from_name(info.company)
        if info.ticker:
            info.notes.append("ticker from the name fallback map")
    return info


def looks_like_10k(text: str) -> bool:
    """Cheap check that some text is a 10-K cover/body (for PDFs that carry no XBRL)."""
    t = text[:20000]
    return bool(re.search(r"\bFORM\s+10-K", t, re.I) or re.search(r"annual\s+report\s+pursuant\s+to\s+section\s+13",
                                                                  t, re.I))


# ---------------------------------------------------------------- inline XBRL (dei:)

_GMONTHDAY_RE = re.compile(r"--(\d{2})-(\d{2})")


def _fy_end_from_text(text: str) -> str | None:
    """"September 28" or "--09-28" -> "--09-28"."""
    t = clean_text(text)
    m = _GMONTHDAY_RE.search(t)
    if m:
        return f"--{m.group(1)}-{m.group(2)}"
    d = parse_date(f"{t}, 2000")  # any leap year parses Feb 29
    return month_day(d)


def cover_from_dei(dei: dict[str, str], period_end_from_context: date | None = None) -> CoverInfo:
    """CoverInfo from dei:* fact texts (keys without prefix: "DocumentType", "TradingSymbol", ...)."""
    info = CoverInfo(source="ixbrl-dei")
    info.company = clean_text(dei.get("EntityRegistrantName", "")) or None
    info.ticker = clean_text(dei.get("TradingSymbol", "")).upper() or None
    cik = clean_text(dei.get("EntityCentralIndexKey", ""))
    info.cik = cik or None
    info.form_type = clean_text(dei.get("DocumentType", "")) or None
    info.period_end_date = parse_date(dei.get("DocumentPeriodEndDate", "")) or period_end_from_context
    fy = clean_text(dei.get("DocumentFiscalYearFocus", ""))
    if re.fullmatch(r"\d{4}", fy):
        info.fiscal_year = int(fy)
    elif info.period_end_date is not None:
        info.fiscal_year = info.period_end_date.year
        info.notes.append("fiscal year derived from the period end (no dei:DocumentFiscalYearFocus)")
    info.fiscal_year_end = _fy_end_from_text(dei.get("CurrentFiscalYearEndDate", "")) or month_day(
        info.period_end_date)
    if info.ticker is None:
        info.ticker = ticker_from_name(info.company)
    return info
