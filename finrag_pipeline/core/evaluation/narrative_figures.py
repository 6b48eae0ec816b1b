"""The change a cause question asks about, read from the filing's tables: the figures the narrative answer leads with.

"What drove the increase in Apple's Services net sales in FY2021?" is answered by the MD&A's cause ("due primarily to
higher net sales from advertising, the App Store and cloud services"), and analysts state the magnitude beside it
("Services net sales rose 27% to $68,425 million from $53,768 million"). The line, its segment and its figures are
read by the calculator (core/analyst/calculator.py: the lexicon, the fact layer's table rows and XBRL facts), never
by a second table reader: the question without its cause frame ("Apple's Services net sales in FY2021") is asked of
the calculator as a value question, once for the asked year and once for the year before, in ONE filing (the
filing whose sentence the narrative answer quotes, so the two years are the same table's columns).

The lead is given only when the line is found unambiguously:
- the question names one line (no "which segment ...", no list), and the calculator answers both years with a value
  plan of the same formula, unit and segment, read from rows of the same labels;
- the change's direction is the one the question asks, when it asks one ("Why did ... decline" and a line that
  rose is a misread line or period: no lead).
Otherwise the narrative answer stays as it was (quoted sentences only).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb

from finrag_pipeline.core.analyst.calculator import CalculatorAnswerer, format_result, round_decimal
from finrag_pipeline.core.analyst.store import FactStore
from finrag_pipeline.core.analyst.vocabulary import default_vocabulary
from finrag_pipeline.core.answering import Citation
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.question_kind import classify_question

# the cause frame a question wraps its line in ("What drove the increase in", "Why did", "What were the main
# drivers of the growth in", "What explains the rise in"); what follows names the line, its company and year
_FRAME_RE = re.compile(
    r"^\s*(?:"
    r"what\s+(?:drove|drives|caused|causes|explains?|led\s+to|contributed\s+to|was\s+behind|were\s+behind|lies\s+behind)"
    r"|what\s+(?:was|were|are|is)\s+(?:the\s+)?(?:main\s+|primary\s+|key\s+|principal\s+|major\s+)?"
    r"(?:drivers?|reasons?|factors?|causes?)\s+(?:of|for|behind)"
    r"|(?:what|which)\s+(?:main\s+|key\s+|primary\s+)?(?:factors?|reasons?|drivers?)\s+(?:contributed\s+to|drove|led\s+to|"
    r"caused|explains?|were\s+behind|was\s+behind)"
    r"|why\s+(?:did|does|do|was|were|is|are|has|have|had)"
    r")\s+", re.IGNORECASE)
# the change asked, as a noun ("the year-over-year increase in", "expansion") or a verb at the end ("decline")
_CHANGE = (r"increases?|decreases?|growth|declines?|rises?|drops?|falls?|expansion|contraction|improvements?|"
           r"deteriorations?|changes?|jump|reductions?|widening|narrowing")
_CHANGE_NOUN_RE = re.compile(r"\b(?:the\s+)?(?:(?:year[\s-]+(?:over|on)[\s-]+year|yoy|overall|significant|sharp)\s+)?"
                             rf"(?:{_CHANGE})\s+(?:in|of)\s+", re.IGNORECASE)
_CHANGE_AFTER_RE = re.compile(rf"(?<=\w)\s+(?:{_CHANGE})\b", re.IGNORECASE)
_VERB_RE = re.compile(r"\s+(?:(?:so\s+)?(?:slightly|sharply|significantly|much)\s+)?"
                      r"(?:increase|decrease|rise|grow|fall|decline|drop|improve|jump|widen|narrow|shrink|expand|"
                      r"contract|deteriorate|change|go\s+(?:up|down)|be\s+(?:higher|lower))\b"
                      r"(?:\s+(?:slightly|sharply|significantly))?", re.IGNORECASE)
_UP_WORDS = re.compile(r"\b(?:increase|grow|growth|rise|rose|expan|improv|jump|widen|higher|gain)", re.IGNORECASE)
_DOWN_WORDS = re.compile(r"\b(?:decrease|decline|fall|fell|drop|shrink|contract|deteriorat|narrow|lower|reduc)",
                         re.IGNORECASE)
# a question that asks to pick among lines or segments, or several lines at once: no one line to lead with
_NOT_ONE_LINE_RE = re.compile(r"^\s*which\b|\b(?:segments|lines|regions|geographies)\b|\bfastest\b|\bslowest\b",
                              re.IGNORECASE)
# what a question adds after its line that names no part of it: a contrast ("even though its revenue grew"), the
# figure it already quotes ("net of $(16.8) billion"), a degree ("slightly"), a move between signs ("to swing to an",
# "from an operating loss to")
_CONTRAST_RE = re.compile(r"\s*,?\s+(?:even\s+though|although|though|despite|while|whereas|given|when)\b.*$",
                          re.IGNORECASE)
_QUOTED_FIGURE_RE = re.compile(r"\s+(?:of|at|to)\s+-?\$?\(?-?[\d.,]+\)?\s*(?:billion|million|thousand|%)?(?=\s|$)",
                               re.IGNORECASE)
_DEGREE_RE = re.compile(r"\s+(?:so\s+)?(?:slightly|sharply|significantly|substantially|modestly|materially|much)\b",
                        re.IGNORECASE)
_SWING_RE = re.compile(r"\s+(?:to\s+)?(?:swing|turn|move|go|shift|flip)\s+(?:from\s+.+?\s+)?to\s+(?:an?\s+)?|"
                       r"\s+from\s+an?\s+[\w\s]+?\s+to\s+(?:an?\s+)?", re.IGNORECASE)
_COMPARATIVE_RE = re.compile(r"\s+(?:higher|lower|larger|smaller|bigger|wider|narrower)(?=\s+(?:in|than|for|during)\b|$)",
                             re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(?:FY\s?'?|fiscal\s+(?:year\s+)?)?((?:19|20)\d\d)\b", re.IGNORECASE)


def asked_line(question: str) -> tuple[str, int] | None:
    """The line a cause question asks about, as a value question's words ("Apple's Services net sales in FY2021"),
    and the direction asked (+1 an increase, -1 a decrease, 0 none); None when the question has no cause frame
    this reads or asks about several lines ("Which segment ...", "... and why ...")."""
    first = re.split(r"(?:,\s*|\s+)and\s+(?:why|how|what|which)\b", question, maxsplit=1, flags=re.IGNORECASE)[0]
    frame = _FRAME_RE.match(first)
    if frame is None or _NOT_ONE_LINE_RE.search(first):
        return None
    rest = _CONTRAST_RE.sub("", first[frame.end():].strip().rstrip("?. "))
    rest = _DEGREE_RE.sub("", _QUOTED_FIGURE_RE.sub("", rest))
    swing = _SWING_RE.search(rest)
    if swing is not None:
        rest = rest[:swing.start()] + " " + rest[swing.end():]
    direction = 0
    comparative = _COMPARATIVE_RE.search(rest)
    if comparative is not None:
        direction = 1 if _UP_WORDS.search(comparative.group(0)) or "wider" in comparative.group(0).lower() else -1
        rest = rest[:comparative.start()] + rest[comparative.end():]
    change = _CHANGE_NOUN_RE.match(rest) or _CHANGE_AFTER_RE.search(rest) or _VERB_RE.search(rest)
    if change is not None:
        said = change.group(0)
        direction = direction or (1 if _UP_WORDS.search(said) else -1 if _DOWN_WORDS.search(said) else 0)
        rest = (rest[:change.start()] + " " + rest[change.end():]).strip()
    rest = re.sub(r"\s+(?:than|compared\s+(?:to|with)|versus|vs\.?)\s+(?:in\s+)?(?:FY\s?|fiscal\s+)?(?:19|20)\d\d\b", "",
                  rest, flags=re.IGNORECASE)
    rest = re.sub(r"^the\s+", "", " ".join(rest.split()), flags=re.IGNORECASE)
    if len(_YEAR_RE.findall(rest)) != 1 or len(rest.split()) < 3:
        return None
    return rest, direction


# a line asked as a rate ("gross profit rate", "gross margin percentage"): its figures are percentages, never dollars
_RATE_RE = re.compile(r"\b(?:rate|percentage|percent|ratio|margin\s+%)\b", re.IGNORECASE)
# the company's possessive opening the line ("Intel's NSG operating income"): what follows names the line
_OWNER_RE = re.compile(r"^\s*(?:the\s+)?[\w.&\-]+(?:\s+[A-Z][\w.&\-]*){0,3}(?:'s|’s|s'|’)\s+")
_NAME_RE = re.compile(r"\b[A-Z][A-Za-z&\-]*[A-Z][A-Za-z&\-]*\b|\b[A-Z][a-z]+\b")
_NOT_A_NAME = frozenset({"FY", "Fiscal", "Year", "Total", "Net", "Gross", "Operating", "The"})


def misread_line(words: str, unit: str, segment: str | None, labels: Sequence[tuple[str, str]],
                 company: str = "") -> str | None:
    """Why the calculator's read cannot be the line the question names, or None: a rate asked and an amount read
    ("Walmart's gross profit rate" read as gross profit in dollars); a segment, program or product the question
    names ("Intel's NSG operating income") that neither the segment read nor the rows' labels carry (the company's
    operating income read instead)."""
    if _RATE_RE.search(words) and unit not in ("percent", "percentage points"):
        return f"a rate asked, an amount read ({unit})"
    line = _OWNER_RE.sub("", _YEAR_RE.sub(" ", words), count=1)
    read = " ".join([segment or "", company] + [f"{item} {label}" for item, label in labels]).lower()
    # an analyst abbreviation ("R&D", "SG&A") is a line item the calculator read by its expansion, not a name
    missing = [n for n in _NAME_RE.findall(line) if n not in _NOT_A_NAME and n.lower() not in read
               and not default_vocabulary().match(n)]
    return f"{', '.join(missing)} named, not read (rows: {read[:80]!r})" if missing else None


@dataclass(frozen=True)
class LineChange:
    """A line's figures for the asked year and the year before, as the calculator read them, and where."""

    line: str                 # as the question names it, its year left out ("Apple's Services net sales")
    year: int
    current: str              # formatted ("$68,425 million", "35.3%")
    prior: str
    unit: str
    change_pct: Decimal | None   # relative change of an amount, None for a percentage (its change is in points)
    change_points: Decimal | None
    citations: tuple[Citation, ...]   # the table rows' pages (filing, page, chunk)
    change_amount: str | None = None  # an amount's change, formatted ("$14,657 million")

    def sentence(self) -> str:
        """"Apple's Services net sales rose 27% to $68,425 million in FY2021 from $53,768 million in FY2020"; a
        percentage moves in points; a move between a profit and a loss states both figures, no percent."""
        was, now = f"in FY{self.year - 1}", f"in FY{self.year}"
        if self.change_points is not None:
            points = self.change_points
            verb = "rose" if points > 0 else "fell" if points < 0 else "was unchanged"
            return (f"{self.line} {verb} to {self.current} {now} from {self.prior} {was} "
                    f"({'+' if points >= 0 else '-'}{abs(points):.1f} points)")
        if self.change_pct is None:
            return f"{self.line} was {self.current} {now} against {self.prior} {was}"
        pct = abs(self.change_pct)
        # as 10-K tables print a change: whole percent, a tenth below 1%
        by = f"{pct:.0f}%" if pct >= 1 else f"{pct:.1f}%"
        verb = "rose" if self.change_pct > 0 else "fell" if self.change_pct < 0 else "was unchanged"
        amount = f"{self.change_amount} or " if self.change_amount and self.change_pct else ""
        return f"{self.line} {verb} {amount}{by} to {self.current} {now} from {self.prior} {was}"


class LineFigures:
    """Reads the change a cause question asks about with the calculator, one filing at a time (see the module)."""

    def __init__(self, store: FactStore | None = None, *, warehouse: Any = None) -> None:
        if store is None and warehouse is not None:
            store = FactStore(warehouse=warehouse)
        self.store = store
        self._calculators: dict[str, CalculatorAnswerer | None] = {}

    @classmethod
    def of_store(cls, store: FactStore) -> LineFigures:
        """The reader over ``store``: the warehouse's shared one when ``store`` is its store, else a new one."""
        try:
            shared = _SHARED.get(store.warehouse) if store.warehouse is not None else None
        except TypeError:   # a warehouse that cannot be weakly referenced has no shared reader
            shared = None
        return shared if shared is not None and shared.store is store else cls(store)

    @classmethod
    def of_warehouse(cls, warehouse: Any) -> LineFigures:
        """One reader per warehouse object and catalog, shared by the answerers built on it (the runner builds three
        that route cause questions here: each would read every filing's facts again), dropped with the warehouse.
        A filing added, removed or ingested again since (another content hash) makes a new one: the session builds
        answerers per corpus state, and a shared reader must not keep an earlier catalog's facts."""
        fresh = cls(warehouse=warehouse)
        try:
            shared = _SHARED.get(warehouse)
        except TypeError:   # a warehouse that cannot be weakly referenced: its own reader
            return fresh
        if shared is not None and _catalog(shared.store) == _catalog(fresh.store):
            return shared
        _SHARED[warehouse] = fresh
        return fresh

    def _calculator(self, filing_id: str) -> CalculatorAnswerer | None:
        if filing_id not in self._calculators:
            try:
                filing = self.store.filing(filing_id) if self.store is not None else None
            except duckdb.Error:
                filing = None   # a warehouse without the fact layer's tables (chunks only): no figures, no lead
            if filing is None:
                self._calculators[filing_id] = None     # asked once per filing, not once per question
                return None
            # one filing: both years are read from the filing the quoted cause comes from (the same table's columns)
            self._calculators[filing_id] = CalculatorAnswerer(FactStore([filing], lexicon=self.store.lexicon),
                                                              lexicon=self.store.lexicon)
        return self._calculators[filing_id]

    def change(self, question: str, filing_id: str, year: int | None = None,
               hits: Sequence[Hit] = ()) -> tuple[LineChange | None, str]:
        """The asked line's change in ``filing_id`` (the asked year, else the question's, else the filing's), or
        None with the reason no lead is given. ``hits`` (of that filing) name the company when the question
        names only a segment ("AWS operating income")."""
        asked = asked_line(question)
        if asked is None:
            return None, "no single line asked with a cause frame"
        words, direction = asked
        if "cause" in classify_question(words).topics:
            return None, f"still a cause question without its frame: {words!r}"
        calc = self._calculator(filing_id)
        if calc is None:
            return None, f"no facts for {filing_id}"
        if year is None:
            found = _YEAR_RE.search(words)
            year = int(found.group(1)) if found else calc.store.filing(filing_id).meta.fiscal_year
        # "How much was ...": a "What was Apple's Products ..." reads to the calculator as "which products"
        value_question = f"How much was {words}?"
        own = [h for h in hits if h.filing_id == filing_id]
        results = []
        for y in (year, year - 1):
            results.append(calc.answer(value_question, own, [f"FY{y}"]))
            if results[-1].response_state != "answered":
                return None, f"the calculator did not answer FY{y}: " + results[-1].text[:120]
        now, before = (r.details for r in results)
        plans = [d.get("plan") or {} for d in (now, before)]
        if any(p.get("operation") != "value" for p in plans) or plans[0].get("formula") != plans[1].get("formula") \
                or now.get("unit") != before.get("unit") or now.get("segment") != before.get("segment"):
            return None, "the two years were not read as the same line"
        labels = [sorted((i["line_item"], i["label"]) for i in d.get("inputs", [])) for d in (now, before)]
        if labels[0] != labels[1] or not labels[0]:
            return None, "the two years were read from rows of different labels"
        unit = now["unit"]
        # the company's own name ("LinkedIn's revenue at Microsoft") is in its passages' context header
        company = " ".join((h.text or "").split("|", 1)[0] for h in own)
        misread = misread_line(words, unit, now.get("segment"), labels[0], company)
        if misread:
            return None, misread
        v_now, v_before = Decimal(now["value"]), Decimal(before["value"])
        loss = bool(re.search(r"\bloss(?:es)?\b", words, re.IGNORECASE)) and v_now <= 0 and v_before <= 0
        if unit in ("percent", "percentage points"):
            # the points between the percentages as shown (35.3% and 31.5%: 3.8 points, as the filing would say)
            pct, points = None, round_decimal(v_now * 100, 1) - round_decimal(v_before * 100, 1)
            moved = points
        elif unit in ("USD", "shares") and (v_now < 0) != (v_before < 0):
            pct, points = None, None     # a profit to a loss or back: both figures say it, a percent does not
            moved = v_now - v_before
        elif unit in ("USD", "shares") and v_before != 0:
            pct, points = (v_now - v_before) / abs(v_before) * 100, None
            # a loss asked as a loss ("Why did the operating loss widen?") grows as its size grows
            moved = -pct if loss else pct
        else:
            return None, f"no change stated for unit {unit!r}"
        if direction and moved and (moved > 0) != (direction > 0):
            return None, "the figures moved against the direction asked"
        scale = now["scale"]
        if unit == "USD" and scale == 1_000 and max(abs(v_now), abs(v_before)) >= 10**9:
            scale = 1_000_000   # a table in thousands (Netflix): "$24,996 million", as analysts state it
        current = _shown(v_now, unit, scale)
        prior = _shown(v_before, unit, scale)
        line = _YEAR_RE.sub("", words)
        line = re.sub(r"\s+(?:in|for|during|of)\s*$", "", " ".join(line.split())).strip(" ,")
        citations = tuple(dict.fromkeys((i["source"]["filing_id"], i["source"].get("page"), i["source"].get("chunk_id"))
                                        for d in (now, before) for i in d["inputs"] if i["source"].get("page")))
        # the change as an MD&A states it: "increased $3.8 billion or 18%" (a billion and more to a tenth of a
        # billion), the figures as the table prints them
        moved_by = abs(v_now - v_before)
        amount = None if pct is None else _shown(moved_by, unit, 10**9) if unit == "USD" and moved_by >= 10**9 \
            else _shown(moved_by, unit, scale)
        return LineChange(line[:1].upper() + line[1:], year, current, prior, unit, pct, points, citations,
                          amount), "found"


_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _catalog(store: FactStore) -> dict[str, str]:
    """The filings a store reads, by content hash (one catalog query, cached by the store)."""
    return {fid: str(meta.content_sha256) for fid, meta in store.metas().items()}


def _shown(value: Decimal, unit: str, scale: int) -> str:
    """A figure as the calculator formats it: amounts in the table's scale, whole when whole, percentages to 0.1."""
    if unit in ("percent", "percentage points"):
        return format_result(round_decimal(value * 100, 1), unit, 1)
    shown = value / scale
    decimals = 1 if scale == 10**9 else 0 if shown == shown.to_integral_value() or abs(shown) >= 1_000 else 1
    return format_result(round_decimal(shown, decimals), unit, decimals, scale)
