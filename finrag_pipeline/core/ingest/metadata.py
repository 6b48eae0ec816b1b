"""Who filed what for which year: dei: facts (inline XBRL) or the cover page (PDF).

Fiscal year is the issuer's own label. iXBRL states it (dei:DocumentFiscalYearFocus: NVIDIA's year
ending 2025-01-26 is FY2025). A PDF cover only states the period end, so the fiscal year is the year
the period ends in (Microsoft, June 30, 2022 -> FY2022), which is how US issuers label their years.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from finrag_pipeline.core.company_map import load_company_map
from finrag_pipeline.core.ingest.tables import DATE_RE, clean_text, parse_date

_EXCHANGES = (r"(?:The\s+)?(?:Nasdaq|NASDAQ|New\s+York\s+Stock\s+Exchange|NYSE|Chicago\s+Stock\s+Exchange"
              r"|Cboe|CBOE)")
_TICKER_RE = re.compile(r"(?<![\w$.])([A-Z]{1,5}(?:[.-][A-Z]{1,2})?)\s+" + _EXCHANGES)
_FORM_RE = re.compile(r"\bFORM\s+(10-K(?:/A)?|10-KT?(?:405)?)\b", re.IGNORECASE)
_PERIOD_RE = re.compile(r"for\s+the\s+(?:fiscal\s+)?year\s+ended\s*:?\s*(.{6,40})", re.IGNORECASE)
_EXACT_NAME_RE = re.compile(r"\(?\s*exact\s+name\s+of\s+(?:each\s+)?registrants?", re.IGNORECASE)
_FILE_NUMBER_RE = re.compile(r"commission\s+file\s+(?:number|no\.?)\s*[:.]?\s*((?:\d{1,3}-)?\d{3,6})", re.I)
_EIN_RE = re.compile(r"\b\d{2}-\d{7}\b")
_US_STATES = ("Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|"
              "Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|"
              "Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New\s+Hampshire|New\s+Jersey|New\s+Mexico|"
              "New\s+York|North\s+Carolina|North\s+Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode\s+Island|"
              "South\s+Carolina|South\s+Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West\s+Virginia|"
              "Wisconsin|Wyoming|Bermuda|Ireland|Maryland|DE|NY|CA|WA|TX|NJ|MN|OR|IL|OH|PA|MD|VA|GA|NC|MA")
# "1-12609 PG&E CORPORATION California 94-3234914": file number, name, state, IRS number in a row.
_REGISTRANT_ROW_RE = re.compile(r"(?:\b(?:\d{1,3}-)?\d{4,6}\s+)?([A-Z0-9][^()]{1,90}?)\s+\(?(?:" + _US_STATES
                                + r")\)?\s+(?:\(State[^)]*\)\s*)?(\d{2}-\d{7})\b", re.I)
# Words that are cover boilerplate, never part of a registrant's name.
_BOILERPLATE_RE = re.compile(r"\b(?:pursuant|transition\s+period|transition\s+report|annual\s+report|securities\s+"
                             r"exchange\s+act|commission\s+file|for\s+the\s+(?:fiscal\s+)?year|exact\s+name|"
                             r"registrant|jurisdiction|incorporation|identification|washington,?\s+d\.?\s?c|"
                             r"mark\s+one|check\s+mark|form\s+10-k|\bOR\b\s*$)", re.I)
_CHECKBOX_RE = re.compile(r"[☐☒☑✓✔■□ý¨þ]")
_LEGAL_SUFFIX_RE = re.compile(r"[,.]?\s+(INC|INCORPORATED|CORP|CORPORATION|CO|COMPANY|LTD|PLC|LLC|N\.V|S\.A)\.?$",
                              re.IGNORECASE)


@dataclass
class CoverInfo:
    """What a filing says about itself; any field may be missing. ``field_sources`` says how each
    field was found ("cover:exact-name", "company-map:name", "pdf-info:title", ...)."""

    company: str | None = None
    ticker: str | None = None
    cik: str | None = None
    form_type: str | None = None
    fiscal_year: int | None = None
    period_end_date: date | None = None
    fiscal_year_end: str | None = None     # "--09-24"
    source: str = ""
    notes: list[str] = field(default_factory=list)
    commission_file_number: str | None = None
    trading_symbols: list[str] = field(default_factory=list)
    co_registrants: list[str] = field(default_factory=list)
    field_sources: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.0


def month_day(d: date | None) -> str | None:
    """date(2022, 9, 24) -> "--09-24" (XBRL gMonthDay, as dei:CurrentFiscalYearEndDate)."""
    return f"--{d.month:02d}-{d.day:02d}" if d else None


def ticker_from_name(company: str | None) -> str | None:
    """The primary ticker of a registrant name in the company map ("THE BOEING COMPANY" -> "BA")."""
    if not company:
        return None
    found = load_company_map().by_name(company)
    return found.ticker if found else None


# ---------------------------------------------------------------- PDF cover page


def normalize_cover_text(text: str) -> str:
    """One line of single-spaced text: covers come one word per line, in columns, or with
    underscore rules between the name and its caption; none of that may matter."""
    t = re.sub(r"_{2,}", " ", text or "")
    t = t.replace("\u00a0", " ").replace("’", "'")
    return re.sub(r"\s+", " ", t).strip()


def plausible_company_name(name: str | None) -> bool:
    """A registrant name, not a cover caption, a checkbox line or a fragment of one."""
    if not name:
        return False
    n = name.strip()
    if not 2 <= len(n) <= 90 or not re.search(r"[A-Za-z]{2}", n) or _BOILERPLATE_RE.search(n):
        return False
    if _CHECKBOX_RE.search(n) or re.search(r"\d{2}-\d{7}|\(\d{3}\)", n):
        return False
    words = n.split()
    # "salesforce.com, inc." and "eBay Inc." are names; "report pursuant to section" is not.
    lower = [w for w in words if w[:1].islower() and "." not in w.rstrip(".,") and not _LEGAL_SUFFIX_RE.search(" " + w)
             and w.lower() not in ("and", "of", "the", "de", "du")]
    return len(words) <= 10 and len(lower) <= max(1, len(words) // 3)


def _tidy_name(text: str) -> str:
    t = _CHECKBOX_RE.sub(" ", text)
    t = re.sub(r"^[\s.:;,\-–—]+|[\s:;,\-–—(]+$", "", t)
    return clean_text(t)


def _name_before_caption(flat: str) -> list[str]:
    """Names written just before "(Exact name of registrant as specified in its charter)"."""
    out = []
    for m in _EXACT_NAME_RE.finditer(flat):
        before = flat[max(0, m.start() - 200):m.start()]
        # The name starts after the last piece of boilerplate before it.
        cut = 0
        for pat in (_FILE_NUMBER_RE, re.compile(r"\bto\s*$|\bfrom\s+to\b|\bOR\b|[☐☒ý¨]|\b1934\b|"
                                                r"\d{4}\s*,?\s*or\b|\(Mark One\)", re.I)):
            for mm in pat.finditer(before):
                cut = max(cut, mm.end())
        name = _tidy_name(before[cut:])
        if name.lower().endswith(" or") or name.lower() == "or":
            name = name[:-2].strip()
        out.append(name)
    return out


def _names_from_registrant_rows(flat: str) -> list[str]:
    """Registrant rows of a cover table: "<file no.> <NAME> <State> <IRS no.>" (one or several)."""
    start = _EXACT_NAME_RE.search(flat) or _FILE_NUMBER_RE.search(flat)
    block = flat[start.start():start.start() + 900] if start else flat[:3000]
    names = []
    for m in _REGISTRANT_ROW_RE.finditer(block):
        name = m.group(1)
        # Drop captions caught before the name ("... Identification Number 1-12609 PG&E CORPORATION").
        name = re.split(r"\)\s*|Number\s+|No\.\s+|charter\s+|\d{1,3}-\d{4,6}\s+", name)[-1]
        name = _tidy_name(name)
        if plausible_company_name(name):
            names.append(name)
    return names


def _symbols(flat: str) -> list[str]:
    start = re.search(r"Section\s+12\s*\(b\)", flat, re.I)
    block = flat[start.end():start.end() + 2500] if start else flat[:6000]
    end = re.search(r"Section\s+12\s*\(g\)", block, re.I)
    block = block[:end.start()] if end else block
    return list(dict.fromkeys(m.group(1) for m in _TICKER_RE.finditer(block)))


def parse_pdf_cover(text: str, *, running_header: str | None = None, info: dict[str, str] | None = None
                    ) -> CoverInfo:
    """Company, ticker, form type, period, commission file number and trading symbols from the cover
    of a 10-K PDF, whatever its line layout; then cross-checked against the company map.

    Fallbacks when the cover does not say: the PDF's Info/XMP title and subject (``info``), and the
    running header repeated on the body pages (``running_header``).
    """
    out = CoverInfo(source="pdf-cover")
    flat = normalize_cover_text(text)
    m = _FORM_RE.search(flat)
    out.form_type = m.group(1).upper() if m else None
    m = _PERIOD_RE.search(flat)
    if m:
        out.period_end_date = parse_date(m.group(1))
    if out.period_end_date is None:
        m = re.search(r"(?:year|period)\s+ended\s*:?\s*" + DATE_RE.pattern, flat, re.I)
        out.period_end_date = parse_date(m.group(0)) if m else None
    if out.period_end_date is not None:
        out.fiscal_year = out.period_end_date.year
        out.fiscal_year_end = month_day(out.period_end_date)
        out.field_sources["fiscal_year"] = "cover:year-ended"
    m = _FILE_NUMBER_RE.search(flat)
    out.commission_file_number = m.group(1) if m else None
    if out.commission_file_number is None:  # a registrant table: "1-12609 PG&E CORPORATION California ..."
        m = re.search(r"\(?exact\s+name.{0,300}?\b((?:\d{1,3}-)?\d{4,6})\s+[A-Z]", flat, re.I)
        out.commission_file_number = m.group(1) if m else None
    out.trading_symbols = _symbols(flat)
    if out.trading_symbols:
        out.ticker = out.trading_symbols[0]
        out.field_sources["ticker"] = "cover:trading-symbol"

    candidates: list[tuple[str, str]] = []
    rows = _names_from_registrant_rows(flat)
    candidates += [(n, "cover:exact-name") for n in _name_before_caption(flat)]
    candidates += [(n, "cover:registrant-row") for n in rows]
    if len(rows) > 1:
        out.co_registrants = rows[1:]
        out.notes.append(f"{len(rows)} registrants on one cover: {', '.join(rows)}; the first is the filer")
    if m := _FILE_NUMBER_RE.search(flat):  # Microsoft: no caption, the name follows the file number
        after = flat[m.end():m.end() + 120]
        stop = re.search(r"\s(?:" + _US_STATES + r")\b|\(|\d{2}-\d{7}", after)
        candidates.append((_tidy_name(after[:stop.start()] if stop else ""), "cover:after-file-number"))
    for key in ("Title", "XMPTitle", "Subject", "Author"):
        if info and info.get(key):
            candidates.append((clean_text(info[key]), f"pdf-info:{key.lower()}"))
    if running_header:
        candidates.append((running_header, "running-header"))

    cmap = load_company_map()
    # EDGAR's PDF renderings put the accession number in the Info title ("0001512673-18-000004"); its
    # first ten digits are the CIK of whoever submitted it: the registrant itself when it self-files.
    accession = re.fullmatch(r"(\d{10})-\d{2}-\d{6}", clean_text((info or {}).get("Title", "")))
    submitter = cmap.by_cik(accession.group(1)) if accession else None
    if accession:
        out.notes.append(f"EDGAR accession number {accession.group(0)} (PDF Info title)")
    if submitter is not None:
        candidates.append((submitter.name, "pdf-info:accession-cik"))
    chosen: tuple[str, str] | None = None
    for name, how in candidates:
        if not plausible_company_name(name):
            continue
        if how.startswith(("pdf-info:title", "pdf-info:xmp", "pdf-info:subject", "pdf-info:author", "running-header")) \
                and cmap.by_name(name) is None:
            continue  # a title such as "Document" or "aapl-20220924" is no company unless the map knows it
        chosen = (name, how)
        break
    if chosen:
        out.company, out.field_sources["company"] = chosen
    _cross_check(out, cmap)
    if submitter is not None and (out.cik or "").lstrip("0") == submitter.cik \
            and out.field_sources.get("company") != "pdf-info:accession-cik":
        out.notes.append("the accession number's CIK confirms the registrant")
    return out


def _cross_check(out: CoverInfo, cmap) -> None:
    """Company map: CIK, a ticker when the cover prints none, and a confidence from agreement."""
    by_name, how_name = cmap.find(name=out.company) if out.company else (None, "")
    by_ticker = cmap.by_ticker(out.ticker) if out.ticker else None
    company = by_name or by_ticker
    confidence = 0.0
    if out.company:
        confidence += 0.4 if out.field_sources.get("company", "").startswith("cover") else 0.25
    if out.fiscal_year:
        confidence += 0.3
    if company is not None:
        out.cik = out.cik or company.cik.zfill(10)   # EDGAR's 10-digit form, as dei:EntityCentralIndexKey
        out.field_sources.setdefault("cik", f"company-map:{'name' if by_name else 'ticker'}")
        if by_name is not None and by_ticker is not None and by_name.cik != by_ticker.cik:
            out.notes.append(f"the cover's name matches CIK {by_name.cik} but its first trading symbol "
                             f"{out.ticker} matches CIK {by_ticker.cik}")
            confidence -= 0.2
        else:
            confidence += 0.3 if by_name is not None else 0.15
        if out.ticker is None and company.ticker:
            out.ticker = company.ticker
            out.field_sources["ticker"] = f"company-map:{how_name or 'name'}"
            out.notes.append(f"ticker {company.ticker} from the company map ({how_name} match)")
        if out.company is None:
            out.company = company.name
            out.field_sources["company"] = "company-map:ticker"
    elif out.company:
        out.notes.append("the company is not in the company map (finrag company-map refresh updates it)")
    out.confidence = round(max(0.0, min(1.0, confidence)), 2)


def running_header(page_texts: list[str], sample: int = 40) -> str | None:
    """The company name repeated at the top or bottom of body pages ("Apple Inc. | 2022 Form 10-K | 21")."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for text in page_texts[2:2 + sample]:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for ln in lines[:2] + lines[-2:]:
            head = re.split(r"\s*\|\s*|\s+\d{4}\s+(?:Annual\s+Report|Form\s+10-K)|\s+Form\s+10-K", ln, flags=re.I)[0]
            head = clean_text(re.sub(r"\s*\d+$", "", head))
            if 2 <= len(head) <= 60:
                counts[head] += 1
    for head, n in counts.most_common(5):
        if n >= 3 and plausible_company_name(head):
            return head
    return None


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
    info.field_sources = {k: f"ixbrl-dei:{v}" for k, v in (
        ("company", "EntityRegistrantName"), ("ticker", "TradingSymbol"), ("cik", "EntityCentralIndexKey"),
        ("fiscal_year", "DocumentFiscalYearFocus")) if getattr(info, k)}
    _cross_check(info, load_company_map())
    info.confidence = 1.0 if info.company and info.fiscal_year else info.confidence
    return info
