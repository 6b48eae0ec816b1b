"""ix:nonFraction facts with their contexts (periods, dimensions), units, scale/sign and page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from lxml import etree

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.html import local_name
from finrag_pipeline.core.ingest.tables import clean_text
from finrag_pipeline.core.models import XbrlFact, stable_id
from finrag_pipeline.core.numbers import ix_value, parse_ixt

_XSI_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"


@dataclass(frozen=True)
class Context:
    period_type: str                 # "instant" | "duration"
    start: date | None
    end: date | None
    dimensions: dict[str, str]


def _child_text(el: etree._Element, name: str) -> str | None:
    for c in el.iter():
        if local_name(c) == name.lower():
            return (c.text or "").strip()
    return None


def _iso(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def parse_contexts(root: etree._Element) -> dict[str, Context]:
    """xbrli:context id -> Context (period and explicit/typed dimension members)."""
    out: dict[str, Context] = {}
    for ctx in root.iter():
        if local_name(ctx) != "context" or not ctx.get("id"):
            continue
        instant = _child_text(ctx, "instant")
        dims: dict[str, str] = {}
        for m in ctx.iter():
            name = local_name(m)
            if name == "explicitmember":
                dims[m.get("dimension", "")] = (m.text or "").strip()
            elif name == "typedmember":
                dims[m.get("dimension", "")] = clean_text("".join(m.itertext()))
        if instant:
            out[ctx.get("id")] = Context("instant", None, _iso(instant), dims)
        else:
            out[ctx.get("id")] = Context("duration", _iso(_child_text(ctx, "startDate")),
                                         _iso(_child_text(ctx, "endDate")), dims)
    return out


def _measure_name(measure: str) -> str:
    """"iso4217:USD" -> "USD", "xbrli:shares" -> "shares", "xbrli:pure" -> "pure"."""
    return measure.strip().rsplit(":", 1)[-1]


def parse_units(root: etree._Element) -> dict[str, str]:
    """xbrli:unit id -> "USD", "shares", "USD/shares", "pure"."""
    out: dict[str, str] = {}
    for unit in root.iter():
        if local_name(unit) != "unit" or not unit.get("id"):
            continue
        num = [c for c in unit.iter() if local_name(c) == "unitnumerator"]
        den = [c for c in unit.iter() if local_name(c) == "unitdenominator"]
        if num and den:
            n = "*".join(_measure_name(m.text or "") for m in num[0].iter() if local_name(m) == "measure")
            d = "*".join(_measure_name(m.text or "") for m in den[0].iter() if local_name(m) == "measure")
            out[unit.get("id")] = f"{n}/{d}"
        else:
            out[unit.get("id")] = "*".join(_measure_name(m.text or "") for m in unit.iter()
                                           if local_name(m) == "measure")
    return out


parse_ix_number = parse_ixt   # the ixt parser lives in core/numbers.py (kept under this name)


def _decimals(raw: str | None) -> int | None:
    if raw is None or raw.upper() == "INF":
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def ix_scale(el: etree._Element) -> int:
    """The integer ``scale`` of an ix:nonFraction; IngestError("ixbrl_error") for anything else, since a
    fact with an unreadable scale has no value."""
    raw = (el.get("scale") or "0").strip()
    try:
        scale = int(raw)
        if not -30 <= scale <= 30:
            raise ValueError(raw)
    except ValueError:
        raise IngestError("ixbrl_error", f"ix:nonFraction {el.get('name', '?')!r:.80} (id {el.get('id', '?')!r:.40}, "
                          f"line {el.sourceline}) has scale={raw!r:.20}, not an integer power of ten") from None
    return scale


def check_ix_facts(root: etree._Element) -> None:
    """Raise ixbrl_error for the first numeric fact whose attributes cannot give a value (registration
    runs this, so a broken fact never becomes a partition)."""
    for el in root.iter():
        if local_name(el) == "nonfraction":
            ix_scale(el)


def extract_facts(root: etree._Element, filing_id: str, fact_pages: dict[str, int] | None = None,
                  *, include_nil: bool = False) -> list[XbrlFact]:
    """Every ix:nonFraction in the document as an XbrlFact (value = displayed number x 10^scale,
    negated for sign="-"). ``fact_pages`` (from html.parse_html_document) gives page numbers.

    xsi:nil facts (e.g. the empty "Commitments and contingencies" balance-sheet line) state that no
    value exists; they are left out unless ``include_nil`` (then their value is None)."""
    contexts = parse_contexts(root)
    units = parse_units(root)
    pages = fact_pages or {}
    facts: list[XbrlFact] = []
    for el in root.iter():
        if local_name(el) != "nonfraction":
            continue
        ctx = contexts.get(el.get("contextRef", ""))
        text = clean_text("".join(el.itertext()))
        scale = ix_scale(el)
        value: float | None = None
        if el.get(_XSI_NIL) == "true" and not include_nil:
            continue
        if el.get(_XSI_NIL) != "true":
            value = ix_value(text, el.get("format"), scale, el.get("sign"))
        fid = el.get("id") or stable_id(filing_id, el.get("name"), el.get("contextRef"), text)
        facts.append(XbrlFact(
            filing_id=filing_id, fact_id=fid, concept=el.get("name", ""), value=value, value_text=text,
            unit=units.get(el.get("unitRef", ""), el.get("unitRef")), decimals=_decimals(el.get("decimals")),
            period_type="instant" if ctx and ctx.period_type == "instant" else "duration",
            period_start=ctx.start if ctx else None, period_end=ctx.end if ctx else None,
            dimensions=dict(ctx.dimensions) if ctx else {}, context_id=el.get("contextRef", ""),
            scale=scale, page_number=pages.get(el.get("id", "")),
        ))
    return facts


def dei_values(root: etree._Element) -> dict[str, str]:
    """dei:* ix:nonNumeric texts by local concept name ("DocumentType" -> "10-K"); first one wins."""
    out: dict[str, str] = {}
    for el in root.iter():
        if local_name(el) != "nonnumeric":
            continue
        name = el.get("name", "")
        if name.startswith("dei:"):
            out.setdefault(name[4:], clean_text("".join(el.itertext())))
    return out


def dei_context_end(root: etree._Element) -> date | None:
    """Period end of the context dei:DocumentPeriodEndDate is reported in (a fallback for its text)."""
    for el in root.iter():
        if local_name(el) == "nonnumeric" and el.get("name") == "dei:DocumentPeriodEndDate":
            ctx = parse_contexts(root).get(el.get("contextRef", ""))
            return ctx.end if ctx else None
    return None
