"""Who filed what for which year: dei: facts (inline XBRL) or the cover page (PDF).

Fiscal year is the issuer's own label. iXBRL states it (dei:DocumentFiscalYearFocus: NVIDIA's year
ending 2025-01-26 is FY2025). A PDF cover only states the period end, so the fiscal year is the year
the period ends in (Microsoft, June 30, 2022 -> FY2022), which is how US issuers label their years.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

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
_REGISTRANT_ROW_RE = re.compile(r"(?:\b(?:\d{1,3}-\d{3,6}|\d{4,6})\s+)?([A-Z0-9][^()]{1,90}?)\s+\(?(?:" + _US_STATES
                                + r")\)?\s+(?:\(State[^)]*\)\s*)?(\d{2}-\d{7})\b", re.I)
# Words that are cover boilerplate, never part of a registrant's name.
_BOILERPLATE_RE = re.compile(r"\b(?:pursuant|transition\s+period|transition\s+report|annual\s+report|securities\s+"
                             r"exchange\s+act|commission\s+file|for\s+the\s+(?:fiscal\s+)?year|exact\s+name|"
                             r"registrant|jurisdiction|incorporation|identification|washington,?\s+d\.?\s?c|"
                             r"mark\s+one|check\s+mark|form\s+10-k|\bOR\b\s*$)", re.I)
_CHECKBOX_RE = re.compile(r"[☐☒☑✓✔■□ý¨þ]")
_LEGAL_SUFFIX_RE = re.compile(r"[,.]?\s+(INC|INCORPORATED|CORP|CORPORATION|CO|COMPANY|LTD|PLC|LLC|N\.V|S\.A)\.?$",
                              re.IGNORECASE)


# Per-field confidence of each source of a registrant name (the order is the fallback order).
NAME_SOURCE_CONFIDENCE = {"cover": 0.9, "running-header": 0.7, "signature-page": 0.75, "pdf-info": 0.6,
                          "statement-heading": 0.7, "auditor-report": 0.7, "file-name": 0.3}
REVIEW_BELOW = 0.6   # a field less sure than this puts the filing in the review queue


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
    # how sure each field is (0..1) and why a filing goes to the review queue (never out of the catalog)
    field_confidence: dict[str, float] = field(default_factory=dict)
    review_reasons: list[str] = field(default_factory=list)
    candidates: list[FieldCandidate] = field(default_factory=list)   # everything considered, for inspect
    cover_lines: list[str] = field(default_factory=list)            # the cover as read (normalised)
    in_company_map: bool | None = None


@dataclass
class FieldCandidate:
    """One value considered for a field, where it came from, and why it was taken or passed over."""

    field: str
    value: str | None
    source: str
    confidence: float
    accepted: bool = False
    reason: str = ""


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


_SINGLE_CAP_RE = re.compile(r"^[A-Z]$")
_CAPS_WORD_RE = re.compile(r"^[A-Z][A-Z&.,'’-]*$")


def join_spaced_letters(line: str, *, letter_spacing: bool = True) -> str:
    """Undo two renderings of display type that split words: letter-spacing ("A P P L E  I N C .",
    words apart by two spaces or more) and small caps whose first letter is a separate run
    ("M GM R ESORTS I NTERNATIONAL" -> "MGM RESORTS INTERNATIONAL"). The second is only undone for
    two or more such pairs in a row, which ordinary text ("PART I ITEM 1") never shows."""
    pieces = re.split(r"(\s{2,})", line)
    for i, piece in enumerate(pieces):
        tokens = piece.split(" ")
        if letter_spacing and len(tokens) >= 3 and all(len(t) == 1 for t in tokens) and sum(t.isalpha() for t in tokens) >= 3:
            pieces[i] = "".join(tokens)
    tokens = " ".join(p if not p.isspace() else "  " for p in pieces).split(" ")
    out: list[str] = []
    i = 0
    while i < len(tokens):
        run = 0   # consecutive (single capital, capitals) pairs starting at i
        while i + 2 * run + 1 < len(tokens) and _SINGLE_CAP_RE.match(tokens[i + 2 * run]) \
                and _CAPS_WORD_RE.match(tokens[i + 2 * run + 1]) and len(tokens[i + 2 * run + 1]) >= 2:
            run += 1
        if run >= 2:
            out += [tokens[i + 2 * k] + tokens[i + 2 * k + 1] for k in range(run)]
            i += 2 * run
        else:
            out.append(tokens[i])
            i += 1
    return re.sub(r" {2,}", " ", " ".join(out))


def normalize_cover_text(text: str) -> str:
    """One line of single-spaced text: covers come one word per line, in columns, letter-spaced, or
    with underscore rules between the name and its caption; none of that may matter."""
    t = re.sub(r"_{2,}", " ", text or "")
    t = t.replace("\u00a0", " ").replace("’", "'")
    lines = [join_spaced_letters(ln) for ln in t.splitlines()]
    # one word per line: small caps split over lines ("M\nGM\nR\nESORTS") joined the same way
    flat = re.sub(r"\s+", " ", " ".join(lines)).strip()
    return join_spaced_letters(flat, letter_spacing=False)   # word gaps are gone: small caps only


def cover_lines(text: str, limit: int = 40) -> list[str]:
    """The first ``limit`` non-blank lines of the cover, as read (letter-spacing undone)."""
    lines = [clean_text(join_spaced_letters(ln.replace("\u00a0", " "))) for ln in (text or "").splitlines()]
    return [ln for ln in lines if ln][:limit]


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
        name = re.split(r"\)\s*|Number\s+|No\.\s+|charter\s+|\d{1,3}-\d{3,6}\s+", name)[-1]
        name = _tidy_name(name)
        if plausible_company_name(name):
            names.append(name)
    return names


# Words that stand before an exchange's name on a cover but are never a trading symbol
# ("The NASDAQ Stock Market LLC / New York Stock Exchange LLC" reads "LLC New York Stock Exchange").
# Two-letter legal forms (SE, AG, NV) stay possible: they are real tickers too.
_NOT_A_SYMBOL = frozenset({"LLC", "INC", "CORP", "LTD", "PLC", "THE", "AND", "STOCK", "MARKET", "GLOBAL", "SELECT",
                           "CAPITAL", "EXCHANGE", "NEW", "YORK", "PAR", "NONE", "DUE", "NOTES", "CLASS", "SHARES"})


def _symbols(flat: str) -> list[str]:
    start = re.search(r"Section\s+12\s*\(b\)", flat, re.I)
    block = flat[start.end():start.end() + 2500] if start else flat[:6000]
    end = re.search(r"Section\s+12\s*\(g\)", block, re.I)
    block = block[:end.start()] if end else block
    found = (m.group(1) for m in _TICKER_RE.finditer(block))
    return list(dict.fromkeys(t for t in found if t.upper() not in _NOT_A_SYMBOL))


_LEGAL_FORM_RE = re.compile(r"\b(?:INC|INCORPORATED|CORP|CORPORATION|COMPANY|CO|LTD|LIMITED|PLC|LLC|L\.?P|N\.?V|"
                            r"S\.?A|AG|SE|HOLDINGS?|GROUP|TRUST|BANCORP(?:ORATION)?|PARTNERS|REIT)\b\.?", re.I)


def _named_like_a_registrant(name: str) -> bool:
    """A name that carries a legal form ("Foot Locker, Inc.", "Readable Text Corp"): what a weak source
    (running header, PDF title, heading) must show to count as a registrant the company map does not know."""
    return plausible_company_name(name) and bool(_LEGAL_FORM_RE.search(name))


def signature_name(page_texts: list[str]) -> str | None:
    """The registrant on the signature page: "SIGNATURES / Pursuant to the requirements of Section 13 or
    15(d) ... has duly caused this report to be signed ... / [Date: ...] / NAME / By: /s/ ..."."""
    for text in reversed(page_texts):
        m = re.search(r"duly\s+caused\s+this\s+(?:annual\s+)?report", text, re.I)
        if not m:
            continue
        lines = [clean_text(ln) for ln in text[m.end():m.end() + 1500].splitlines() if clean_text(ln)]
        for i, ln in enumerate(lines[:12]):
            if re.match(r"By\s*:|/s/", ln, re.I):
                before = [x for x in lines[max(0, i - 3):i] if not re.match(r"(?:Date|Dated)\b|\(Registrant\)|"
                                                                             r".*authorized\.?$", x, re.I)]
                if before:
                    return _tidy_name(re.sub(r"\(Registrant\)", "", before[-1], flags=re.I))
                break
    return None


_HEADING_RE = re.compile(r"^\s*(?:CONSOLIDATED\s+)?(?:BALANCE\s+SHEETS?|STATEMENTS?\s+OF\s+[A-Z' ’,]+)\s*$", re.I)


def statement_heading_name(page_texts: list[str]) -> str | None:
    """The registrant over its statements: "THE COCA-COLA COMPANY AND SUBSIDIARIES / CONSOLIDATED BALANCE
    SHEETS" (the name within three lines above a statement heading, the most frequent one)."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for text in page_texts:
        lines = [clean_text(ln) for ln in text.splitlines()[:12]]
        for i, ln in enumerate(lines):
            if not _HEADING_RE.match(ln) or not re.search(r"consolidated|balance", ln, re.I):
                continue
            for above in lines[max(0, i - 3):i]:
                name = re.sub(r"\s+and\s+(?:its\s+)?(?:consolidated\s+)?subsidiar(?:y|ies)\s*$", "", above, flags=re.I)
                if name != above or _LEGAL_FORM_RE.search(name):
                    name = _tidy_name(name)
                    if plausible_company_name(name):
                        counts[name] += 1
    return counts.most_common(1)[0][0] if counts else None


_ADDRESSEES = r"(?:Board\s+of\s+Directors|Share(?:holders|owners)|Stockholders|Members|Partners)"


def auditor_report_name(page_texts: list[str]) -> str | None:
    """The addressee of the auditor's report: "To the Shareholders and Board of Directors / Foot Locker, Inc.:"
    or "To the Stockholders and the Board of Directors of eBay Inc.", on one line or two."""
    pattern = re.compile(r"To\s+the\s+" + _ADDRESSEES + r"(?:\s+and\s+(?:the\s+)?" + _ADDRESSEES + r")?"
                         r"(?:\s+of)?[ \t]*\n?[ \t]*([^\n]{2,90})", re.I)
    for text in page_texts:
        for m in pattern.finditer(text):
            name = _tidy_name(re.sub(r"^of\s+", "", clean_text(m.group(1)), flags=re.I).rstrip(":"))
            if re.match(r"(?:Opinion|Report|We\s|In\s+our)", name, re.I):
                continue
            if plausible_company_name(name):
                return name
    return None


def file_name_parts(file_name: str | None) -> tuple[str | None, int | None]:
    """"FOOTLOCKER_2022_10K.pdf" -> ("FOOTLOCKER", 2022): the last resort, always flagged for review."""
    if not file_name:
        return None, None
    stem = re.sub(r"\.(?:pdf|html?)$", "", Path(file_name).name, flags=re.I)
    stem = re.sub(r"(?i)[_\s-]*10-?K[A-Z0-9]*", " ", stem)
    years = re.findall(r"(?<!\d)((?:19|20)\d{2})(?!\d)", stem)
    name = clean_text(re.sub(r"[_\s-]+", " ", re.sub(r"(?<!\d)(?:19|20)\d{2}(?!\d)", " ", stem)))
    return (name if re.search(r"[A-Za-z]{2}", name) else None), (int(years[0]) if years else None)


def parse_pdf_cover(text: str, *, running_header: str | None = None, info: dict[str, str] | None = None,
                    page_texts: list[str] | None = None, file_name: str | None = None) -> CoverInfo:
    """Company, ticker, form type, period, commission file number and trading symbols from the cover
    of a 10-K PDF, whatever its line layout; then resolved against the company map.

    A registrant name is taken from the first source that gives one, in this order: the cover block,
    the running header of the body pages (``running_header``), the signature page, the PDF's Info/XMP
    title (``info``), the statement headings, the auditor's report (those three read ``page_texts``),
    and the file name (``file_name``, always flagged). Every value considered is kept in
    ``candidates`` with why it was taken or passed over; fields under REVIEW_BELOW confidence, a
    registrant the company map does not know, and disagreements put the filing in the review queue.
    """
    out = CoverInfo(source="pdf-cover")
    out.cover_lines = cover_lines(text)
    flat = normalize_cover_text(text)
    m = _FORM_RE.search(flat)
    out.form_type = m.group(1).upper() if m else None
    m = _PERIOD_RE.search(flat)
    if m:
        out.period_end_date = parse_date(m.group(1))
    if out.period_end_date is None:
        m = re.search(r"(?:year|period)\s+ended\s*:?\s*" + DATE_RE.pattern, flat, re.I)
        out.period_end_date = parse_date(m.group(0)) if m else None
    file_company, file_year = file_name_parts(file_name)
    if out.period_end_date is not None:
        out.fiscal_year = out.period_end_date.year
        out.fiscal_year_end = month_day(out.period_end_date)
        out.field_sources["fiscal_year"] = "cover:year-ended"
        out.field_confidence["fiscal_year"] = 0.95
        out.candidates.append(FieldCandidate("fiscal_year", str(out.fiscal_year), "cover:year-ended", 0.95, True,
                                             f"period end {out.period_end_date}"))
    else:
        out.candidates.append(FieldCandidate("fiscal_year", None, "cover:year-ended", 0.0, False,
                                             "no 'for the fiscal year ended <date>' on the cover"))
    if file_year is not None:
        taken = out.fiscal_year is None
        out.candidates.append(FieldCandidate("fiscal_year", str(file_year), "file-name", 0.3, taken,
                                             "last resort: the year in the file name" if taken
                                             else "the cover says the year"))
        if taken:
            out.fiscal_year = file_year
            out.field_sources["fiscal_year"] = "file-name"
            out.field_confidence["fiscal_year"] = 0.3
    m = _FILE_NUMBER_RE.search(flat)
    out.commission_file_number = m.group(1) if m else None
    if out.commission_file_number is None:  # a registrant table: "1-12609 PG&E CORPORATION California ..."
        m = re.search(r"\(?exact\s+name.{0,300}?\b((?:\d{1,3}-)?\d{4,6})\s+[A-Z]", flat, re.I)
        out.commission_file_number = m.group(1) if m else None
    out.trading_symbols = _symbols(flat)
    if out.trading_symbols:
        out.ticker = out.trading_symbols[0]
        out.field_sources["ticker"] = "cover:trading-symbol"
        out.field_confidence["ticker"] = 0.8

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
    pages = page_texts or []
    candidates.append((running_header or "", "running-header"))
    candidates.append((signature_name(pages[-40:]) or "", "signature-page"))
    for key in ("Title", "XMPTitle", "Subject", "Keywords", "Author"):
        value = clean_text((info or {}).get(key, ""))
        # "Form 10-K for Foot Locker INC filed 03/27/2023", "Foot Locker INC 10-K"
        value = re.sub(r"^(?:Form\s+)?10-K\S*\s+(?:for\s+)?|\s+(?:filed\s+[\d/]+|10-K\S*)$", "", value, flags=re.I)
        candidates.append((value, f"pdf-info:{key.lower()}"))
    candidates.append((statement_heading_name(pages) or "", "statement-heading"))
    candidates.append((auditor_report_name(pages[:len(pages) * 2 // 3 + 1]) or "", "auditor-report"))
    candidates.append((file_company or "", "file-name"))

    cmap = load_company_map()
    # EDGAR's PDF renderings put the accession number in the Info title ("0001512673-18-000004"); its
    # first ten digits are the CIK of whoever submitted it: the registrant itself when it self-files.
    accession = re.fullmatch(r"(\d{10})-\d{2}-\d{6}", clean_text((info or {}).get("Title", "")))
    submitter = cmap.by_cik(accession.group(1)) if accession else None
    if accession:
        out.notes.append(f"EDGAR accession number {accession.group(0)} (PDF Info title)")
    if submitter is not None:
        candidates.insert(len(candidates) - 1, (submitter.name, "pdf-info:accession-cik"))
    chosen: tuple[str, str] | None = None
    for name, how in candidates:
        kind = how.split(":")[0]
        conf = NAME_SOURCE_CONFIDENCE.get(kind, 0.5)
        if not name:
            continue
        if chosen is not None:
            reason = f"a stronger source ({chosen[1]}) gave the name"
        elif not plausible_company_name(name):
            reason = "not a registrant name (boilerplate, a fragment, digits or too long)"
        elif kind in ("running-header", "pdf-info", "statement-heading") and how != "pdf-info:accession-cik" \
                and cmap.by_name(name) is None and not _named_like_a_registrant(name):
            # a title such as "Document" or "aapl-20220924" is no company unless the map knows it or it
            # carries a legal form ("Inc.", "Corporation")
            reason = "neither known to the company map nor carrying a legal form (Inc., Corp., ...)"
        else:
            chosen, reason = (name, how), "taken"
            out.candidates.append(FieldCandidate("company", name, how, conf, True, reason))
            continue
        out.candidates.append(FieldCandidate("company", name, how, conf, False, reason))
    if chosen:
        out.company, out.field_sources["company"] = chosen
        out.field_confidence["company"] = NAME_SOURCE_CONFIDENCE.get(chosen[1].split(":")[0], 0.5)
    _resolve_in_map(out, cmap, submitter)
    if submitter is not None and (out.cik or "").lstrip("0") == submitter.cik \
            and out.field_sources.get("company") != "pdf-info:accession-cik":
        out.notes.append("the accession number's CIK confirms the registrant")
    _review(out)
    return out


def _resolve_in_map(out: CoverInfo, cmap, submitter) -> None:
    """The company map over the cover: when it knows the registrant (by the accession number's CIK, by the
    name read, or by the cover's trading symbol), its CIK and primary ticker win over a trading symbol read
    off the cover, and a name from a weak source gives way to its canonical name. Disagreements are notes."""
    by_name, how_name = cmap.find(name=out.company) if out.company else (None, "")
    by_cik = submitter if submitter is not None and (by_name is None or by_name.cik == submitter.cik) else None
    by_symbol = next((c for c in map(cmap.by_ticker, out.trading_symbols) if c is not None), None)
    company, how = (by_cik, "cik") if by_cik is not None else (by_name, how_name) if by_name is not None else (
        (by_symbol, "ticker") if by_symbol is not None and out.field_confidence.get("company", 0) < 0.9 else (None, ""))
    name_conf = out.field_confidence.get("company", 0.0)
    confidence = (0.4 if out.field_sources.get("company", "").startswith("cover") else 0.25) if out.company else 0.0
    confidence += 0.3 if out.fiscal_year and out.field_sources.get("fiscal_year", "").startswith("cover") else 0.0
    if company is None:
        out.in_company_map = False
        if out.company:
            out.notes.append("the company is not in the company map (finrag company-map refresh updates it)")
        out.confidence = round(max(0.0, min(1.0, confidence)), 2)
        return
    out.in_company_map = True
    out.cik = out.cik or company.cik.zfill(10)   # EDGAR's 10-digit form, as dei:EntityCentralIndexKey
    out.field_sources.setdefault("cik", f"company-map:{how}")
    out.field_confidence["cik"] = 0.95
    if by_name is not None and by_symbol is not None and by_name.cik != by_symbol.cik:
        out.notes.append(f"the cover's name matches CIK {by_name.cik} but its first trading symbol "
                         f"{out.ticker} matches CIK {by_symbol.cik}")
        confidence -= 0.2
    else:
        confidence += 0.3 if how != "ticker" else 0.15
    map_tickers = [t.upper() for t in (*company.tickers, *company.former_tickers)]
    if company.ticker and out.ticker != company.ticker:
        if out.ticker and out.ticker.upper().replace(".", "-") not in map_tickers:
            out.notes.append(f"the cover's trading symbol {out.ticker} disagrees with the company map's ticker "
                             f"{company.ticker} for CIK {company.cik}; the map's is used")
        elif out.ticker:
            out.notes.append(f"the cover's trading symbol {out.ticker} is an older or secondary ticker of CIK "
                             f"{company.cik}; the map's primary ticker {company.ticker} is used")
        else:
            out.notes.append(f"ticker {company.ticker} from the company map ({how} match)")
        out.ticker = company.ticker
        out.field_sources["ticker"] = f"company-map:{how or 'name'}"
    if out.ticker:
        out.field_confidence["ticker"] = 0.95
    if out.company is None or name_conf < 0.6:
        if out.company is not None:
            out.notes.append(f"company {out.company!r} ({out.field_sources.get('company')}) replaced by the "
                             f"company map's name {company.name!r}")
        out.company = company.name
        out.field_sources["company"] = f"company-map:{how}"
        out.field_confidence["company"] = 0.8
        confidence += 0.15
    else:
        out.field_confidence["company"] = max(name_conf, 0.95)
    out.confidence = round(max(0.0, min(1.0, confidence)), 2)


def _review(out: CoverInfo) -> None:
    """Why the filing goes to the review queue: a field read from a weak source, or a registrant the
    company map does not know. Review never keeps a filing out of the catalog."""
    for name in ("company", "fiscal_year"):
        conf = out.field_confidence.get(name)
        if conf is not None and conf < REVIEW_BELOW:
            out.review_reasons.append(f"{name} from {out.field_sources.get(name)} (confidence {conf})")
        elif any(c.field == name and c.accepted and c.source == "file-name" for c in out.candidates):
            # the file name is always flagged, even when the company map then knows the name
            out.review_reasons.append(f"{name} from the file name (then {out.field_sources.get(name)})")
    if out.company and out.in_company_map is False:
        out.review_reasons.append("not in the company map")
    if any("disagrees" in n for n in out.notes):
        out.review_reasons.append("the cover's trading symbol disagrees with the company map")


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
