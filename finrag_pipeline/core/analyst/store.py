"""Line-item lookups over one filing's table rows and XBRL facts.

``FilingFacts.lookup("revenue", 2022)`` resolves the lexicon concept to the statement line that
carries it (the concept's own statement first, consolidated totals before segment rows, rows
labelled "Total ..." included), reads the column of fiscal 2022, and, when the filing is inline
XBRL, the tagged fact of the same concept and period. Found both ways, the two are reconciled:
agreeing, the fact is returned with the row as its citation; disagreeing, the fact is returned
and the disagreement is kept in ``disagreements`` (data, not a log line only).

``FactStore`` holds one ``FilingFacts`` per filing, built from parsed filings (tests, benchmarks)
or read from the warehouse on first use (``core.filings``, ``core.table_rows``, ``core.xbrl_facts``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from finrag_pipeline.core.analyst.labels import normalize_label
from finrag_pipeline.core.analyst.lexicon import Concept, Lexicon
from finrag_pipeline.core.analyst.model import Disagreement, FactSource, FactValue
from finrag_pipeline.core.chunking.chunker import table_row_chunk_id
from finrag_pipeline.core.ingest.statements import classify_table
from finrag_pipeline.core.ingest.tables import normalize_period
from finrag_pipeline.core.models import FilingMeta, TableRow, XbrlFact
from finrag_pipeline.core.numbers import SCALE_WORDS, cell_decimal, unit_scale

log = logging.getLogger(__name__)


def _unit_scale(unit: str | None) -> tuple[str | None, int]:
    """core.numbers.unit_scale with an integer multiplier: values here are exact Decimals."""
    base, multiplier = unit_scale(unit)
    return base, int(multiplier)



STATEMENT_ORDER = ("income_statement", "balance_sheet", "cash_flow")
_VAGUE_LABELS = frozenset({"diluted", "products", "services", "americas", "international", "deferred"})
# what a company spent, named by one word: "spend on fuel", "spent on advertising", "fuel expense", "rent costs"
_SPENT_ON_RE = re.compile(r"\bspen(?:d|t|ds|ding)\s+on\s+(?P<a>[a-z]+)\b|\b(?P<b>[a-z]+)\s+(?:expenses?|costs?)\b")
_BALANCE_WORDS = re.compile(r"\bas of\b|\bat the end of\b|\bbalance\b|\byear[- ]end\b|\bat (?:fiscal )?year", re.I)
# "Payments for repurchases of common stock", "Payments of dividends to stockholders": a cash-flow outflow line named by
# what it pays for; the rest of the label is the line item
_PAYMENT_LEAD = re.compile(r"^(?:cash\s+)?(?:payments?|paid)\s+(?:for|of|to)\s+(?:the\s+)?")
_CONTRA_TAIL = re.compile(r"\s+\(?(?:net\s+of|of\s+allowances?|less\s+(?:allowances?|accumulated|reserves?)|after\s+allowances?)\b")
# "Total shareholders' equity, ending balances" (an equity statement): the balance itself, the years the balance sheet
# no longer shows
_BALANCE_TAIL = re.compile(r"\b(?:ending|closing) balances?$|\bend of (?:the )?(?:year|period)$")
_BEGINNING_RE = re.compile(r"\bbeginning\b|\bbeginning of (?:the )?(?:year|period)\b")
_SHARES_SCALE_RE = re.compile(r"shares[^)]{0,60}?\b(thousands|millions|billions)\b", re.IGNORECASE)
# group headings that name a category of lines ("Revenue:", "Operating expenses:"), not a segment
# cash-flow group headings that name the reconciliation, not a segment ("Adjustments to reconcile net income to net
# cash provided by operating activities:", "Changes in assets and liabilities, net of business combinations:")
# A table of another entity's figures: an equity-method joint venture's or investee's summarized statements
# (General Mills 2021 p58 "Summary combined financial information for the joint ventures": "Total net sales" 2,189.2)
_OTHER_ENTITY_TITLE = re.compile(r"\b(?:joint\s+ventures?|equity[\s-]+method\s+investees?|unconsolidated\s+(?:affiliates?"
                                 r"|subsidiaries|entities|investees?)|investees?|affiliated\s+compan(?:y|ies))\b", re.I)
_RECONCILING_HEADING = re.compile(r"^(?:adjustments?|changes?|(?:increase|decrease)s?|effect|supplemental|cash flows?)\b")
_CATEGORY_HEADINGS = ("expenses", "income", "revenues", "revenue", "sales", "costs", "assets", "liabilities",
                      "equity", "activities")


# the sign words of a line that can be either ("Net income/(loss)", "Net cash provided by/(used for) operating
# activities", "Net (loss) income"): the line is the same item whichever sign the year had
_SIGN_WORDS = re.compile(r"\s*/?\s*\((?:loss|losses|income|used\s+(?:in|for)|used|deficit)\)\s*|/(?:loss|used\s+(?:in|for))\b")
_LOSS_FOR_INCOME = re.compile(r"^(net|operating) loss(?= |$)")
# detail printed after the line item: "Long-term debt (includes $1.0 billion ... related to VIEs)", "(Note 9)"
_TRAILING_DETAIL = re.compile(r"\s*\([^()]*\)$")


def plain_label(label: str) -> str:
    """A normalized row label without its sign words and trailing detail: "operating income/(loss)" -> "operating
    income", "net loss" -> "net income", "long term debt (includes 1 0 billion related to vies)" -> "long term debt"."""
    out = re.sub(r"\s+", " ", _SIGN_WORDS.sub(" ", label)).strip()
    out = _LOSS_FOR_INCOME.sub(r"\1 income", out)
    bare = _TRAILING_DETAIL.sub("", out).strip()
    return bare or out or label


def strip_total(label: str) -> str:
    return label[6:] if label.startswith("total ") else label


def to_decimal(value_text: str | None, value: float | None) -> Decimal | None:
    """The number as printed, exactly: '(1,234.5)' -> Decimal('-1234.5') (core.numbers.cell_decimal);
    falls back to the float."""
    printed = cell_decimal(value_text)
    if printed is not None:
        return printed
    if value is None:
        return None
    try:
        return Decimal(repr(value))
    except InvalidOperation:
        return None


@dataclass(frozen=True)
class Breakdown:
    """A total row and the rows above it that add up to it (segments, categories, regions)."""

    total: TableRow
    components: list[TableRow]


@dataclass
class _RowCandidate:
    score: float
    row: TableRow
    statement_type: str
    reason: str


_DATE_IN_HEADER_RE = re.compile(r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
                                r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s*\d{1,2}\s*,?\s*(?:19|20)\d\d\b", re.I)


def _with_leading_years(rows: Sequence[TableRow]) -> list[TableRow]:
    """A statement whose first column lost its year to the unit caption above it ("In millions, except per share
    data | 2022 2021 2020" read as "" | "2021" | "2020": McDonald's 2022 statements): a first column with no header
    at all that holds a figure in every row of its table, followed by two or more fiscal years counting down by one,
    is the year after them. Any other layout (a spacer column that is empty in some rows: Foot Locker's lease table;
    a "Change" column, ascending years, a gap) is left as it is."""
    def leading_year(row: TableRow) -> int | None:
        cells = row.cells
        if (len(cells) < 3 or cells[0].period or (cells[0].header or "").strip() or cells[0].value is None
                or not (cells[0].value_text or "").strip()):
            return None
        years = [int(c.period[2:]) if c.period and re.fullmatch(r"FY\d{4}", c.period) else None for c in cells[1:]]
        if None in years or any(a - b != 1 for a, b in zip(years, years[1:], strict=False)):
            return None
        return years[0] + 1

    by_table: dict[str, set[int | None]] = defaultdict(set)
    for r in rows:
        by_table[r.table_id].add(leading_year(r))
    out = []
    for r in rows:
        years = by_table[r.table_id]
        if len(years) == 1 and None not in years:
            r = dataclasses.replace(r, cells=[dataclasses.replace(r.cells[0], period=f"FY{next(iter(years))}"),
                                              *r.cells[1:]])
        out.append(r)
    return out


def _with_column_periods(row: TableRow) -> TableRow:
    """A row stored before ingest read a column's own date after its spanning title ("As of May 31, 2019 and 2018
    May 31, 2018" was filed as 2019-05-31 in every column): its periods read again from the headers by ingest's
    one reader (``normalize_period``), when that makes them distinct. Other rows are returned as they are."""
    periods = [c.period for c in row.cells if c.period]
    if len(periods) == len(set(periods)):
        return row
    again = [normalize_period(c.header) if c.period else None for c in row.cells]
    kept = [p for p in again if p]
    if len(kept) != len(periods) or len(kept) != len(set(kept)):
        return row
    return dataclasses.replace(row, cells=[dataclasses.replace(c, period=p) for c, p in zip(row.cells, again, strict=True)])


class FilingFacts:
    """The figures of one filing, by lexicon concept and fiscal year."""

    def __init__(self, meta: FilingMeta, table_rows: Sequence[TableRow], facts: Sequence[XbrlFact],
                 lexicon: Lexicon | None = None) -> None:
        self.meta = meta
        self.filing_id = meta.filing_id
        self.lexicon = lexicon or Lexicon.load_default()
        self.rows = _with_leading_years([_with_column_periods(r) for r in table_rows])
        self.facts = [f for f in facts if f.value is not None]
        self.disagreements: list[Disagreement] = []
        self._disagreement_keys: set[tuple] = set()
        tables: dict[str, list[TableRow]] = defaultdict(list)
        for r in self.rows:
            tables[r.table_id].append(r)
        self.table_size = {tid: len(rs) for tid, rs in tables.items()}
        self.statement_of: dict[str, str] = {}
        self.label_counts: dict[str, dict[str, int]] = {}
        for tid, rs in tables.items():
            given = next((getattr(r, "statement_type", None) for r in rs if getattr(r, "statement_type", None)), None)
            self.statement_of[tid] = given or classify_table(rs[0].table_title, [r.row_label for r in rs],
                                                             rs[0].section)
            counts: dict[str, int] = defaultdict(int)
            for r in rs:
                # "Net income $ 3.72" under an earnings-per-share heading is no repeat of the "Net income" line
                # (Boston Properties prints both in one statement): per-share rows count apart from amounts
                if (getattr(r, "unit", None) or "") not in ("USD per share",) or not any(
                        normalize_label(o.row_label) == normalize_label(r.row_label)
                        and (getattr(o, "unit", None) or "") != "USD per share" for o in rs):
                    counts[normalize_label(r.row_label)] += 1
            self.label_counts[tid] = counts
        self.norm_labels = {(r.table_id, r.row_index): normalize_label(r.row_label) for r in self.rows}
        self.distinct_labels = set(self.norm_labels.values())
        self._phrase_cache: dict[tuple, tuple[list[str], list[str]]] = {}
        self._candidate_cache: dict[tuple, list[_RowCandidate]] = {}
        self._segments: dict[str, str] | None = None
        self._breakdowns: list[Breakdown] | None = None
        self._label_phrases: list[str] | None = None
        # balance-sheet rows between "Total current liabilities" and "Total liabilities" are non-current
        self.noncurrent_rows: dict[tuple[str, int], bool] = {}
        for tid, rs in tables.items():
            if self.statement_of[tid] == "balance_sheet":
                self.noncurrent_rows.update(_current_sections(sorted(rs, key=lambda r: r.row_index)))
        # "as a percentage of revenue" tables print "%" on some rows only and no unit: not amounts
        self.percent_tables = {tid for tid, rs in tables.items() if not rs[0].unit
                               and any((c.value_text or "").strip().endswith("%") for r in rs for c in r.cells)}
        # 10-K amounts share one scale across the statements; a table that prints none is read in it
        units = [r.unit for r in self.rows if r.unit and r.unit.startswith("USD ")
                 and self.statement_of[r.table_id] in ("income_statement", "balance_sheet", "cash_flow")]
        self.default_unit = max(set(units), key=units.count) if units else None
        self.facts_by_concept: dict[str, list[XbrlFact]] = defaultdict(list)
        for f in self.facts:
            self.facts_by_concept[f.concept].append(f)
        self.rows_by_page: dict[int, list[TableRow]] = defaultdict(list)
        for r in self.rows:
            self.rows_by_page[r.page_number].append(r)
        self.first_statement_rows = _first_statement_rows(self.rows, self.statement_of)
        self.first_balance_sheet_years = {y for r in self.rows if self.statement_of[r.table_id] == "balance_sheet"
                                          and (r.table_id, r.row_index) in self.first_statement_rows
                                          for c in r.cells if (y := self._period_year(c.period)) is not None}

    # ---- periods --------------------------------------------------------------------------------

    def fiscal_year_of(self, d: date) -> int | None:
        """The fiscal-year label whose year ENDS on ``d`` (within two weeks: 52/53-week years), else None; in the
        filer's own labels (``label_offset``)."""
        end = self.meta.period_end_date
        if end is None:
            return d.year if (d.month, d.day) >= (12, 17) or (d.month, d.day) <= (1, 14) else None
        days = (end - d).days
        years = round(days / 365.25)
        if abs(days - years * 365.25) > 15:
            return None
        return self.meta.fiscal_year - years + self.label_offset

    @property
    def label_offset(self) -> int:
        """-1 for a filer whose fiscal year ends in January or early February and who labels it by the year it BEGINS
        (its statements head the year ended January 29, 2022 "2021", as many retailers do): dated columns and balance
        sheet dates then take the filer's label, so that "fiscal 2021" pairs that year's income statement with the
        balance sheet at its end. 0 for every other filer (labels by the year the fiscal year ends)."""
        if not hasattr(self, "_label_offset"):
            self._label_offset = 0
            end = self.meta.period_end_date
            if end is not None and (end.month == 1 or (end.month == 2 and end.day <= 15)):
                bare = [int(c.period[2:]) for r in self.rows
                        if self.statement_of.get(r.table_id) in ("income_statement", "cash_flow")
                        for c in r.cells if c.period and c.period.startswith("FY") and c.period[2:].isdigit()
                        and not _DATE_IN_HEADER_RE.search(c.header or "")]
                if bare and max(bare) == self.meta.fiscal_year - 1:
                    self._label_offset = -1
        return self._label_offset

    def _cell_year(self, cell) -> int | None:
        """The fiscal year of a table cell: its period, a dated duration column in the filer's labels."""
        year = self._period_year(cell.period)
        if (year is not None and self.label_offset and cell.period.startswith("FY")
                and _DATE_IN_HEADER_RE.search(cell.header or "")):
            return year + self.label_offset  # "Year ended January 29, 2022" of a filer calling it fiscal 2021
        return year

    def _period_year(self, period: str | None) -> int | None:
        if not period:
            return None
        if period.startswith("FY") and period[2:].isdigit():
            return int(period[2:])
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", period):
            return self.fiscal_year_of(date.fromisoformat(period))
        return None

    # ---- table rows -----------------------------------------------------------------------------

    def _phrases(self, concept: Concept) -> tuple[list[str], list[str]]:
        key = (concept.key, id(concept))
        if key not in self._phrase_cache:
            self._phrase_cache[key] = ([normalize_label(x) for x in concept.line_items],
                                       [normalize_label(x) for x in concept.aliases])
        return self._phrase_cache[key]

    def _without_own_name(self, label: str) -> str:
        """The label without the company's own name: "Total Costco stockholders' equity" is "total stockholders
        equity" (the parent's, before noncontrolling interests), "Net income attributable to Costco" is "net income
        attributable"."""
        if not hasattr(self, "_own_name_re"):
            words = [w for w in normalize_label(self.meta.company).split() if w not in ("the", "a")]
            # the name as the statements print it, with the rest of it ("Total Oracle Corporation stockholders' equity")
            rest = "|".join(re.escape(w) for w in [*words[1:], "corporation", "corp", "inc", "incorporated", "company",
                                                   "co", "ltd", "plc", "holdings", "group"])
            self._own_name_re = re.compile(rf"\s*\b{re.escape(words[0])}s?\b(?:\s+(?:{rest})\b)*") \
                if words and len(words[0]) > 2 else None
        if self._own_name_re is None or not self._own_name_re.search(label):
            return label
        out = re.sub(r"\s+", " ", self._own_name_re.sub(" ", label)).strip()
        return re.sub(r"\s+(?:to|of|for)$", "", out)

    def _label_score(self, label: str, concept: Concept) -> tuple[float, str]:
        if concept.outflow and _PAYMENT_LEAD.match(label):
            paid_for = _PAYMENT_LEAD.sub("", label)
            return max(self._label_score_of(label, concept), self._label_score_of(paid_for, concept))
        return self._label_score_of(label, concept)

    def _label_score_of(self, label: str, concept: Concept) -> tuple[float, str]:
        printed = self._printed_label_score(label, concept)
        plain = plain_label(label)
        if plain == label:
            return printed
        score, reason = self._printed_label_score(plain, concept)
        # the plain label scores just under the printed one, so that a line printed exactly as named wins a tie
        return max(printed, (score - 0.3, f"{reason} (sign words / detail dropped)") if score > 0 else (0.0, ""))

    def _printed_label_score(self, label: str, concept: Concept) -> tuple[float, str]:
        items, aliases = self._phrases(concept)
        bare = strip_total(label)
        if label in items:
            return 10.0 - 0.1 * items.index(label), "line item"
        if bare in items:
            return 9.5 - 0.1 * items.index(bare), "total line item"
        if label in aliases or bare in aliases:
            return 8.0, "alias"
        best = 0.0
        for phrase in items + aliases:
            if len(phrase) > 3 and (label.startswith(phrase + " ") or bare.startswith(phrase + " ")):
                if "equity" not in phrase and re.search(r"\bequity\b|\bdeficit\b", bare[len(phrase):]):
                    continue  # "Total liabilities, temporary equity, and stockholders' equity" is the balance total
                extra = len(bare.split()) - len(phrase.split())
                # a long label that spells out what the line covers ("Depreciation and amortization of property and
                # equipment and capitalized content costs, operating lease assets, and other") still names it: a
                # small positive score, so that the line on its own statement wins over a note's exact label
                best = max(best, 5.0 - 0.75 * extra, 0.5)
                if _CONTRA_TAIL.match(bare[len(phrase):]):
                    # "Accounts receivable, net of allowance for doubtful accounts of $633 and $751": the
                    # line itself, its contra account spelled out
                    best = max(best, 9.0)
        return best, "label starts with a line item"

    def row_candidates(self, concept: Concept, fiscal_year: int, segment: str | None = None) -> list[_RowCandidate]:
        key = (concept.key, id(concept), fiscal_year, segment)
        if key not in self._candidate_cache:
            self._candidate_cache[key] = self._row_candidates(concept, fiscal_year, segment)
        return self._candidate_cache[key]

    def _row_candidates(self, concept: Concept, fiscal_year: int, segment: str | None) -> list[_RowCandidate]:
        label_scores = {label: max(self._label_score(label, concept), self._label_score(self._without_own_name(label),
                                                                                        concept))
                        for label in self.distinct_labels}
        out = []
        seg = normalize_label(segment) if segment else None
        for r in self.rows:
            label = self.norm_labels[(r.table_id, r.row_index)]
            score, reason = label_scores[label]
            under_heading = False
            if score <= 0 and seg and label == seg and getattr(r, "row_path", None) and len(r.row_path) >= 2:
                # a segment table that prints the line as a heading and the segments under it ("Earnings/(loss) from
                # operations: ... Global Services 2,017"): the segment's row of that line
                heading = normalize_label(r.row_path[-2])
                score = max(self._label_score(heading, concept)[0], self._label_score(
                    self._without_own_name(heading), concept)[0])
                reason, under_heading = "segment row under the line's heading", score > 0
            if score <= 0 and concept.unit == "USD per share" and (getattr(r, "unit", None) or "") == "USD per share":
                # "Diluted earnings per common share ...:" heading, then "Net income $ 3.72" (Boston Properties): the
                # per-share line is named by its heading
                heading = normalize_label(((getattr(r, "row_path", None) or [])[:-1] or [""])[-1])
                phrase = concept.line_items[0] if concept.line_items else ""
                if phrase and heading.startswith(phrase) and re.match(r"net (?:income|earnings)\b", label):
                    score, reason = 6.0, "per-share line under its heading"
            if score <= 0:
                continue
            stype = self.statement_of[r.table_id]
            if (not seg and concept.statement and stype != concept.statement and score < 8
                    and reason.startswith("label starts with") and not _BALANCE_TAIL.search(label)):
                # a longer label off the concept's statement is another item ("Operating loss carryforwards" in the
                # tax note, "Borrowings available under the credit facility", "Gross profit rate"): only the
                # statement's own lines are read by their first words
                continue
            cell = self._cell_for(r, fiscal_year)
            if cell is None or _BEGINNING_RE.search(label) or (r.table_id in self.percent_tables
                                                                and concept.unit != "percent"):
                continue  # an opening balance sits in the NEXT year's column of an equity statement
            if concept.unit in ("USD per share", "shares") and ("." in cell.value_text) != (concept.unit != "shares"):
                continue  # "Diluted" is both a per-share amount (6.08) and a share count (15,408,095)
            if concept.statement == "balance_sheet" and stype == "cash_flow":
                continue  # "Accounts payable" in a cash-flow statement is the year's change, not the balance
            if (concept.statement in ("income_statement", "cash_flow")
                    and stype not in ("income_statement", "cash_flow", "balance_sheet", "equity")
                    and (cell.period or "")[:1].isdigit()):
                continue  # a note's balance at a date is no flow of the year ("Depreciation and amortization" deferred tax)
            if (not seg and concept.statement == "balance_sheet" and not concept.fallback
                    and fiscal_year in self.first_balance_sheet_years
                    and (r.table_id, r.row_index) not in self.first_statement_rows):
                # a balance of a year the balance sheet shows is the balance sheet's line: a note's "Accounts
                # receivable" (a lease, a VIE, other current assets) is another scope, and an item the balance sheet
                # does not print is no line item. Older years (an equity statement's ending balance) and items most
                # balance sheets print in parts (total debt: its fallback) are read as before.
                continue
            title = normalize_label(r.table_title or "")
            if not seg and _OTHER_ENTITY_TITLE.search(r.table_title or ""):
                continue  # a joint venture's "Total net sales" is not the filer's
            path = [normalize_label(p) for p in (getattr(r, "row_path", None) or [])[:-1]]
            if seg:
                # a heading naming the segment alone ("Services", "Intelligent Cloud segment"); one naming several
                # categories ("Products and Services Performance") heads their total too, which is no segment's
                by_path = seg in path or any(_title_names_only(p, seg) for p in path)
                if not (seg == title or by_path or under_heading or _title_names_only(title, seg)):
                    continue  # a segment was asked: never fall back to the consolidated line
                if label != seg and seg != title and not by_path and self.label_counts[r.table_id].get(seg):
                    continue  # the segment is a row of this table: its other rows (the total) are not the segment's
                score += 6
                if self.label_counts[r.table_id][label] > 1:
                    score -= 3  # one of several same-named lines: which segment it belongs to is a guess
            else:
                if concept.statement and stype == concept.statement:
                    score += 5
                elif stype == "segment_note":
                    score -= 6
                elif stype not in ("other",) and concept.statement:
                    score -= 1
                groups = [p for p in path if p and not p.endswith(_CATEGORY_HEADINGS) and not _RECONCILING_HEADING.match(p)]
                if groups and not self._statement_total(r, label, stype, groups):
                    score -= 3  # a row under a group heading (a segment) rather than the consolidated line
                if (r.table_id, r.row_index) in self.first_statement_rows:
                    score += 0.5  # a combined 10-K prints the filer's statements first, its subsidiary's after
                if _in_audited_statements(r):
                    score += 1  # the audited statement, not an MD&A summary that repeats its lines
                if self.label_counts[r.table_id][label] > 1:
                    # the same label twice in a balance sheet is a current and a non-current line ("Term
                    # debt"); elsewhere the same line repeated per segment
                    noncurrent = self.noncurrent_rows.get((r.table_id, r.row_index))
                    if stype == "balance_sheet" and noncurrent is not None:
                        score -= 0 if noncurrent == _wants_noncurrent(concept) else 2
                    else:
                        score -= 3
                elif (stype == "balance_sheet" and _wants_noncurrent(concept)
                      and self.noncurrent_rows.get((r.table_id, r.row_index)) is False):
                    score -= 3  # "Long-term debt, classified as current" sits above "Total current liabilities"
            score += min(self.table_size[r.table_id], 40) / 40.0
            out.append(_RowCandidate(score, r, stype, reason))
        if seg:
            out += self._component_candidates(concept, fiscal_year, seg)
        out.sort(key=lambda c: (-c.score, c.row.page_number, c.row.table_id, c.row.row_index))
        return out

    def _statement_total(self, row: TableRow, label: str, stype: str, groups: list[str]) -> bool:
        """A statement's own total printed once under group headings it does not name ("Total current assets" read
        under "Inventories", the last group above it): the statement's line, not a segment's."""
        return (stype in STATEMENT_ORDER and label.startswith("total ") and self.label_counts[row.table_id][label] == 1
                and not any(_has_words(label, g) for g in groups))

    def _component_candidates(self, concept: Concept, fiscal_year: int, seg: str) -> list[_RowCandidate]:
        """Rows named like the segment that are components of a total of the concept: the table's total
        row names the line item ("Total net sales"), or the table is titled with it ("Operating Income
        (Loss)"), or its bare "Total"/"Consolidated" row equals the consolidated line for the year."""
        out = []
        consolidated: FactValue | None | bool = False
        for b in self.breakdowns():
            comps = [r for r in b.components if self.norm_labels[(r.table_id, r.row_index)] == seg]
            if not comps or self._cell_for(comps[0], fiscal_year) is None:
                continue
            total_label = self.norm_labels[(b.total.table_id, b.total.row_index)]
            named = max(self._label_score(total_label, concept)[0],
                        self._label_score(normalize_label(b.total.table_title or ""), concept)[0])
            if named <= 0:
                if consolidated is False:
                    consolidated = self.lookup(concept, fiscal_year)
                total_cell = self._cell_for(b.total, fiscal_year)
                if not consolidated or total_cell is None:
                    continue
                _, scale = _unit_scale(b.total.unit)
                total_value = to_decimal(total_cell.value_text, total_cell.value)
                if total_value is None or not _agree(consolidated.base_value, total_value * scale, 0):
                    continue
                named = 5.0
            out.append(_RowCandidate(named + 6, comps[0], self.statement_of[comps[0].table_id],
                                     "segment component of the line item's total"))
        return out

    def breakdowns(self) -> list[Breakdown]:
        """Runs of rows closed by a "Total ..."/"Consolidated" row whose first values they sum to."""
        if self._breakdowns is None:
            self._breakdowns = []
            by_table: dict[str, list[TableRow]] = defaultdict(list)
            for r in self.rows:
                by_table[r.table_id].append(r)
            for rows in by_table.values():
                rows.sort(key=lambda r: r.row_index)
                start = 0
                for i, r in enumerate(rows):
                    label = self.norm_labels[(r.table_id, r.row_index)]
                    if not (label.startswith("total") or label == "consolidated"):
                        continue
                    comps = rows[start:i]
                    start = i + 1
                    if len(comps) >= 2 and _sums_to(comps, r):
                        self._breakdowns.append(Breakdown(r, comps))
        return self._breakdowns

        # ---- segments -------------------------------------------------------------------------------

    def _collect_segments(self) -> dict[str, str]:
        """Segment names this filing reports (normalized -> as printed): components of a total
        (core.table_rows), group headings (row_path) of segment notes, and the members of XBRL segment
        axes ("AmazonWebServicesSegmentMember" -> "amazon web services", also "aws")."""
        names: dict[str, str] = {}
        for b in self.breakdowns():
            for r in b.components:
                label = self.norm_labels[(r.table_id, r.row_index)]
                if _segment_like(label):
                    names.setdefault(label, r.row_label)
        for r in self.rows:
            if self.statement_of[r.table_id] == "segment_note":
                for heading in (getattr(r, "row_path", None) or [])[:-1]:
                    if _segment_like(normalize_label(heading)):
                        names.setdefault(normalize_label(heading), heading)
        for f in self.facts:
            for axis, member in f.dimensions.items():
                if "segment" in axis.lower():
                    words = _member_words(member)
                    if words and _segment_like(words):
                        names.setdefault(words, words)
                        initials = "".join(w[0] for w in words.split())
                        if len(initials) >= 2:
                            names.setdefault(initials, words)
        return names

    def segments(self) -> dict[str, str]:
        if self._segments is None:
            # a component named like a line item ("Cash and cash equivalents", "Current") is not a segment
            items = {normalize_label(p) for c in self.lexicon.concepts.values() for p in c.phrases}
            self._segments = {k: v for k, v in self._collect_segments().items()
                              if k not in items and k not in ("current", "deferred", "domestic", "foreign")}
        return self._segments

    def find_label_phrase(self, text: str) -> str | None:
        """The longest statement row label (two words or more, not a bare "total") written in a text."""
        if self._label_phrases is None:
            self._label_phrases = sorted(
                {lab for (tid, _), lab in self.norm_labels.items()
                 if (len(lab.split()) >= 2 or (len(lab) >= 8 and lab not in _VAGUE_LABELS))
                 and not lab.startswith(("total", "less")) and tid not in self.percent_tables
                 and self.statement_of[tid] in STATEMENT_ORDER},
                key=lambda lab: (-len(lab), lab))
        norm = normalize_label(text)
        best: tuple[int, str] | None = None   # (position in the text, label) among the longest labels written
        for lab in self._label_phrases:
            if best is not None and len(lab) < len(best[1]):
                break
            m = re.search(r"(?<![\w&])" + re.escape(lab) + r"(?![\w&])", norm)
            if m and _label_ends_item(norm[m.end():]) and (best is None or m.start() < best[0]):
                # two labels of the same length written: the one written first (never the set's hash order)
                best = (m.start(), lab)
        if best is None:
            return self._cost_word_label(norm)
        return best[1]

    def _cost_word_label(self, norm: str) -> str | None:
        """A one-word cost line of the income statement ("Fuel", "Rent", "Advertising") written as what was spent:
        "spend on fuel", "fuel expense", "fuel costs". A short word is read only there (elsewhere in a question it
        is too often no line item)."""
        for m in _SPENT_ON_RE.finditer(norm):
            word = m.group("a") or m.group("b")
            if word in _VAGUE_LABELS or word in ("other", "total", "net") or len(word) < 3:
                continue
            if any(lab == word and self.statement_of[tid] == "income_statement" and tid not in self.percent_tables
                   for (tid, _), lab in self.norm_labels.items()):
                return word
        return None

    def statement_label(self, phrase: str) -> str | None:
        """The statement row label a phrase is, word for word (normalised), or None. For an operand a
        question's formula names that is no lexicon line ("commercial paper", "principal repayments of
        finance leases"): only a label printed as written is read, never a near one."""
        norm = normalize_label(re.sub(r"^(?:the|its|their)\s+", "", phrase.strip(), flags=re.I))
        if not norm or norm.startswith("less"):
            return None
        found = any(lab == norm and tid not in self.percent_tables and self.statement_of[tid] in STATEMENT_ORDER
                    for (tid, _), lab in self.norm_labels.items())
        if found:
            return norm
        # "technology and content expense": the statement prints the cost line without the word "expense(s)"
        bare = re.sub(r"\s+(?:expenses?|costs?|spend(?:ing)?)$", "", norm)
        if bare != norm and len(bare.split()) >= 2:
            return self.statement_label(bare)
        if bare != norm:   # "fuel expense": a one-word cost line of the income statement ("Fuel")
            return self._cost_word_label(norm)
        # "unsecured senior notes": the statement prints the line with its detail in parentheses ("Unsecured senior
        # notes (net of discount of $10,683 and $12,296, respectively)"); the full printed label is the row
        detailed = [lab for (tid, _), lab in self.norm_labels.items()
                    if lab.startswith(norm + " (") and re.sub(r"\s*\(.*$", "", lab) == norm
                    and tid not in self.percent_tables and self.statement_of[tid] in STATEMENT_ORDER]
        if detailed:
            return detailed[0]
        # "current term debt" / "non-current term debt": a balance-sheet label printed once in each section
        side = re.match(r"(?:non\s?current|current)\s+(?P<rest>.+)$", norm)
        if side and any(lab == side.group("rest") and self.statement_of[tid] == "balance_sheet"
                        and self.label_counts[tid][lab] > 1 and (tid, i) in self.noncurrent_rows
                        for (tid, i), lab in self.norm_labels.items()):
            return side.group("rest")
        return None

    def labels_starting(self, prefixes: Sequence[str], statement: str) -> list[str]:
        """The row labels of the filing's first ``statement`` table (page order) that prints two or more rows
        starting with one of ``prefixes`` ("cost of services", "cost of wireless equipment"), totals excluded;
        [] when no such table: the parts of a line printed without its total."""
        by_table: dict[str, list[str]] = {}
        for (tid, _), lab in self.norm_labels.items():
            if (self.statement_of[tid] == statement and tid not in self.percent_tables
                    and lab.startswith(tuple(p + " " for p in prefixes)) and lab not in by_table.get(tid, [])):
                by_table.setdefault(tid, []).append(lab)
        tables = [t for t in self.tables_in_order() if len(by_table.get(t, [])) >= 2]
        return by_table[tables[0]] if tables else []

    def tables_in_order(self) -> list[str]:
        """Table ids in the order the filing prints them (page, then position)."""
        seen: dict[str, tuple[int, int]] = {}
        for i, r in enumerate(self.rows):
            seen.setdefault(r.table_id, (r.page_number or 0, i))
        return sorted(seen, key=seen.get)

    def label_statement(self, label: str, text: str = "", prefer: Sequence[str] = ()) -> str | None:
        """Which statement to read a row label from: one the question points at (``prefer``: "primarily
        using the balance sheet") that prints it, the balance sheet when the text asks for a
        balance ("as of", "at the end of"), else the first of income statement, balance sheet, cash
        flow that prints it (a cash-flow line of the same name is usually the year's change)."""
        found = {self.statement_of[tid] for (tid, _), lab in self.norm_labels.items() if lab == label}
        for statement in prefer:
            if statement in found:
                return statement
        if "balance_sheet" in found and _BALANCE_WORDS.search(text):
            return "balance_sheet"
        return next((st for st in STATEMENT_ORDER if st in found), None)

    def find_segment(self, text: str) -> str | None:
        """The segment a text names (its longest mention), normalized, or None."""
        norm = normalize_label(text)
        found = [seg for seg in self.segments() if _has_words(norm, seg)]
        return max(found, key=len) if found else None

    def _cell_for(self, row: TableRow, fiscal_year: int):
        for cell in row.cells:
            if cell.value is None or not (cell.value_text or "").strip():
                continue
            if self._cell_year(cell) == fiscal_year:
                return cell
        return None

    def _row_fact(self, concept: Concept, cand: _RowCandidate, fiscal_year: int) -> FactValue | None:
        row = cand.row
        cell = self._cell_for(row, fiscal_year)
        value = to_decimal(cell.value_text, cell.value) if cell else None
        if value is None:
            return None
        base, scale = _unit_scale(row.unit or self.default_unit)
        if (cell.value_text or "").strip().endswith("%"):
            base, scale = "percent", 1
        elif concept.unit == "shares":
            # "(In millions, except number of shares, which are reflected in thousands, ...)"
            m = _SHARES_SCALE_RE.search(row.unit_text or "")
            if m:
                scale = int(SCALE_WORDS[m.group(1).lower()])
            elif abs(value) >= 1_000_000 and scale > 1_000:
                scale = 1_000  # "15,408,095" millions would be 15 trillion shares: counts are in thousands
            base = "shares"
        elif concept.unit in ("USD per share", "shares") and base == "USD" and "." in (cell.value_text or ""):
            base, scale = "USD per share", 1
        period_end = date.fromisoformat(cell.period) if cell.period and cell.period[:1].isdigit() else None
        source = FactSource(
            kind="table_row", filing_id=self.filing_id, page=row.page_number,
            chunk_id=table_row_chunk_id(self.filing_id, row.table_id, row.row_index), table_id=row.table_id,
            row_index=row.row_index, row_label=row.row_label, column_header=cell.header,
            table_title=row.table_title, statement_type=cand.statement_type,
            unit_inferred=row.unit is None and base == "USD")
        return FactValue(self.filing_id, concept.key, row.row_label, f"FY{fiscal_year}", period_end, value,
                         base, scale, cell.value_text, source)

    # ---- XBRL facts -----------------------------------------------------------------------------

    def _fact_year(self, f: XbrlFact) -> int | None:
        if f.period_end is None:
            return None
        if f.period_type == "duration" and (f.period_start is None
                                            or not 340 <= (f.period_end - f.period_start).days <= 380):
            return None  # quarters and multi-year spans are not a fiscal year
        return self.fiscal_year_of(f.period_end)

    def fact_candidates(self, concept: Concept, fiscal_year: int, segment: str | None = None) -> list[XbrlFact]:
        seg = normalize_label(segment) if segment else None
        for name in concept.xbrl:
            found = []
            for f in self.facts_by_concept.get(name, []):
                if self._fact_year(f) != fiscal_year:
                    continue
                if seg is None and f.dimensions:
                    continue
                if seg is not None and not (len(f.dimensions) == 1 and _member_matches(
                        next(iter(f.dimensions.values())), seg)):
                    continue
                found.append(f)
            if found:
                return sorted(found, key=lambda f: (f.page_number or 10**6, f.fact_id))
        return []

    def _displaying_row(self, f: XbrlFact) -> tuple[TableRow, Any, int] | None:
        """The table row on the fact's page whose cell shows the fact's value (its citation)."""
        fact_value = Decimal(repr(f.value))
        for row in self.rows_by_page.get(f.page_number or -1, []):
            # the row's stated unit, else the fact's own display scale (share counts in a "$ in millions" table)
            for scale in dict.fromkeys((_unit_scale(row.unit)[1], 10 ** max(f.scale, 0))):
                for cell in row.cells:
                    v = to_decimal(cell.value_text, cell.value)
                    if v is not None and v != 0 and _agree(fact_value, v * scale, f.decimals):
                        return row, cell, scale
        return None

    def _xbrl_fact(self, concept: Concept, f: XbrlFact, fiscal_year: int,
                   row_fact: FactValue | None) -> FactValue:
        fact_value = Decimal(repr(f.value))
        shown = self._displaying_row(f)
        if row_fact is not None and _agree(fact_value, row_fact.base_value, f.decimals):
            scale, chunk_id, page_row = row_fact.scale, row_fact.source.chunk_id, row_fact.source
        elif shown is not None:
            row, _, scale = shown
            chunk_id = table_row_chunk_id(self.filing_id, row.table_id, row.row_index)
            page_row = None
        else:
            scale, chunk_id, page_row = 10 ** f.scale if f.scale > 0 else 1, None, None
        base = {"USD/shares": "USD per share", "pure": None}.get(f.unit or "", f.unit)
        source = FactSource(kind="xbrl_fact", filing_id=self.filing_id,
                            page=f.page_number or (page_row.page if page_row else None), chunk_id=chunk_id,
                            concept=f.concept, context_id=f.context_id, fact_id=f.fact_id,
                            dimensions=tuple(sorted(f.dimensions.items())))
        value = fact_value / scale
        return FactValue(self.filing_id, concept.key, f.concept, f"FY{fiscal_year}", f.period_end,
                         value.to_integral_value() if value == value.to_integral_value() else value, base, scale,
                         f.value_text, source, corroborated_by=[page_row] if page_row else [])

    # ---- the lookup -----------------------------------------------------------------------------

    def lookup(self, line_item: str | Concept, fiscal_year: int, *, segment: str | None = None) -> FactValue | None:
        """The figure of a line item (a lexicon concept key, or a Concept) for a fiscal year, or None."""
        concept = line_item if isinstance(line_item, Concept) else self.lexicon.concepts.get(line_item)
        if concept is None:
            raise KeyError(f"unknown line item {line_item!r}; known: {sorted(self.lexicon.concepts)}")
        if concept.formula:
            raise ValueError(f"{concept.key!r} is derived ({concept.formula}); look up its inputs")
        cands = self.row_candidates(concept, fiscal_year, segment)
        row_fact = next((rf for c in cands if (rf := self._row_fact(concept, c, fiscal_year)) is not None), None)
        if row_fact is not None and segment is None and self._parts_on_statement(concept, row_fact, fiscal_year):
            row_fact = None
        facts = self.fact_candidates(concept, fiscal_year, segment)
        if not facts:
            return row_fact
        out = self._xbrl_fact(concept, facts[0], fiscal_year, row_fact)
        if row_fact is not None and not out.corroborated_by:
            self._record_disagreement(concept, fiscal_year, facts[0], out, row_fact)
        return out

    def _parts_on_statement(self, concept: Concept, row_fact: FactValue, fiscal_year: int) -> bool:
        """The line was read off its statement (a note's "Depreciation and amortization": the deferred-tax table, a
        segment) while the statement prints the parts of its ``fallback`` (Oracle's "Depreciation" and
        "Amortization of intangible assets"): the calculator adds the statement's parts instead."""
        if not concept.fallback or not concept.statement:
            return False
        # on its statement's kind but outside the filing's first statement of that kind (General Mills 2021 p.91: a
        # quarterly table's "Gross margin" 1,590.4 beside the income statement's net sales and cost of sales): the
        # parts the first statement prints win too
        first = (row_fact.source.table_id, row_fact.source.row_index) in self.first_statement_rows
        if row_fact.source.statement_type == concept.statement and (first or not self.first_statement_rows):
            return False
        parts = [self.lexicon.concepts[k] for k in re.findall(r"[a-z_]+", concept.fallback) if k in self.lexicon.concepts]
        if not parts:
            return False
        for part in parts:
            found = next((c for c in self.row_candidates(part, fiscal_year)
                          if self._row_fact(part, c, fiscal_year) is not None), None)
            if found is None or found.statement_type != concept.statement:
                return False
            if (row_fact.source.statement_type == concept.statement
                    and (found.row.table_id, found.row.row_index) not in self.first_statement_rows):
                return False
        return True

    def reconcile(self) -> list[Disagreement]:
        """Look every XBRL-tagged line item up for every fiscal year the facts cover, so that each
        fact/table disagreement of the filing is in ``disagreements`` (returned)."""
        years = sorted({y for f in self.facts if (y := self._fact_year(f)) is not None})
        for concept in self.lexicon.concepts.values():
            if concept.xbrl and not concept.formula:
                for year in years:
                    self.lookup(concept, year)
        return list(self.disagreements)

    def _record_disagreement(self, concept: Concept, fiscal_year: int, f: XbrlFact, fact: FactValue,
                             row_fact: FactValue) -> None:
        key = (concept.key, fiscal_year, f.fact_id, row_fact.source.chunk_id)
        if key in self._disagreement_keys:
            return
        self._disagreement_keys.add(key)
        d = Disagreement(self.filing_id, concept.key, f"FY{fiscal_year}", Decimal(repr(f.value)),
                         row_fact.base_value, fact.source, row_fact.source)
        self.disagreements.append(d)
        log.info("fact/table disagreement in %s: %s %s XBRL %s vs row %r %s", self.filing_id, concept.key,
                 fiscal_year, f.value, row_fact.label, row_fact.base_value)


_NOT_SEGMENTS = re.compile(r"^(?:total|consolidated|other|corporate|unallocated|eliminations?|reconciling|"
                           r"all other|intersegment|segment)\b|\d")


_STATEMENT_PAGES = 3   # a primary statement runs over at most three pages (balance sheet: assets, then liabilities)
_STATEMENT_ROWS = 15   # an untitled table this long in Item 8 is a statement, not a summary


def _first_statement_rows(rows: Sequence[TableRow], statement_of: dict[str, str]) -> set[tuple[str, int]]:
    """Rows of the FIRST primary statement of each kind in Item 8 (its first page and the pages it continues on).
    A combined 10-K (PG&E Corporation and Pacific Gas and Electric Company) prints the filer's statements, then the
    subsidiary registrant's under the same titles; a parent-only schedule (Schedule I) comes after Item 8."""
    size: dict[str, int] = defaultdict(int)
    for r in rows:
        size[r.table_id] += 1
    first_page: dict[str, int] = {}
    for r in rows:
        stype = statement_of.get(r.table_id)
        # a statement: titled as one, or long (an MD&A summary misfiled under Item 8 is neither: PG&E 2018 p68)
        title = (r.table_title or "").strip()
        full = _STATEMENT_TITLE.match(title) or (not title and size[r.table_id] >= _STATEMENT_ROWS)
        if stype in STATEMENT_ORDER and _in_audited_statements(r) and full:
            first_page[stype] = min(first_page.get(stype, r.page_number), r.page_number)
    return {(r.table_id, r.row_index) for r in rows
            if (stype := statement_of.get(r.table_id)) in first_page and _in_audited_statements(r)
            and 0 <= r.page_number - first_page[stype] < _STATEMENT_PAGES}


_TITLE_ITEM = re.compile(r"^item\s+(\d+)[a-z]?\b", re.I)
_STATEMENT_TITLE = re.compile(r"^consolidated\s+(?:statements?|balance\s+sheets?)\b", re.I)


def _in_audited_statements(row: TableRow) -> bool:
    """Item 8; or, where the filing's sections were not found (Square 2017), a table titled as a consolidated
    statement: the selected financial data of Item 6 repeats the same lines untitled."""
    titled_item = _TITLE_ITEM.match((row.table_title or "").strip())
    if titled_item:   # "ITEM 6. SELECTED FINANCIAL DATA" under a section misread as Item 8 (PG&E 2018 p55)
        return titled_item.group(1) == "8"
    titled = bool(_STATEMENT_TITLE.match((row.table_title or "").strip()))
    if row.section:
        section = row.section.strip().lower()
        # filers whose Item 8 points to statements printed after Item 15 (Verizon 2019, Netflix 2020: read as
        # Items 15-16): a table titled as a consolidated statement there is the audited statement
        return section.startswith("item 8") or (titled and bool(re.match(r"item\s+1[56]\b", section)))
    return titled


def _first_value(row: TableRow) -> Decimal | None:
    cell = next((c for c in row.cells if c.value is not None and (c.value_text or "").strip()), None)
    return to_decimal(cell.value_text, cell.value) if cell else None


def _sums_to(components: list[TableRow], total: TableRow) -> bool:
    """The components' first values add up to the total's (each printed value may be rounded by 1)."""
    values = [_first_value(r) for r in components]
    t = _first_value(total)
    if t is None or any(v is None for v in values) or t == 0 or (total.cells and "%" in total.cells[0].value_text):
        return False
    return abs(sum(values, Decimal(0)) - t) <= len(values)  # type: ignore[arg-type]


def _segment_like(label: str) -> bool:
    return 2 <= len(label) <= 60 and not _NOT_SEGMENTS.search(label)


def _wants_noncurrent(concept: Concept) -> bool:
    words = " ".join([concept.key, *concept.aliases, *concept.line_items[:1]]).lower()
    return ("non-current" in words or "noncurrent" in words or "non_current" in words or "long-term" in words
            or "long_term" in words)


def _current_sections(rows: list[TableRow]) -> dict[tuple[str, int], bool]:
    """(table_id, row_index) -> is the row non-current, for rows of a balance sheet's asset or liability
    block: before "Total current ..." current, after it (up to the block's total) non-current."""
    out: dict[tuple[str, int], bool] = {}
    block: list[TableRow] = []
    seen_current_total = False
    for r in rows:
        label = normalize_label(r.row_label)
        if label in ("total current assets", "total current liabilities"):
            for b in block:
                out[(b.table_id, b.row_index)] = False
            block, seen_current_total = [], True
            continue
        if label in ("total assets", "total liabilities") or label.startswith("total liabilities and"):
            for b in block:
                out[(b.table_id, b.row_index)] = seen_current_total
            block, seen_current_total = [], False
            continue
        block.append(r)
    return out


def _label_ends_item(after: str) -> bool:
    """A row label found in a question is the whole line item when what follows starts the period,
    the company or the end ("goodwill" in "goodwill impairment charge" is not)."""
    from finrag_pipeline.core.analyst.plan import trailing_words

    return trailing_words(after) is None


def _has_words(text: str, phrase: str) -> bool:
    return bool(phrase) and re.search(r"(?<![\w&])" + re.escape(phrase) + r"(?![\w&])", text) is not None


def _title_names_only(title: str, segment: str) -> bool:
    """The table's title names ``segment`` and no other category beside it: "Intelligent Cloud" or
    "Commercial Airplanes segment results" title that segment's rows; "Products and Services Performance"
    titles a table of several categories, whose total row is no one category's."""
    if not _has_words(title, segment):
        return False
    rest = re.sub(r"(?<![\w&])" + re.escape(segment) + r"(?![\w&])", " ", title)
    return re.search(r"\b(?:and|or)\b|&|,|/", rest) is None


def _member_words(member: str) -> str:
    """"amzn:AmazonWebServicesSegmentMember" -> "amazon web services"."""
    local = member.rsplit(":", 1)[-1]
    local = re.sub(r"(?:Segment)?Member$", "", local)
    return normalize_label(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", local))


def _member_matches(member: str, segment: str) -> bool:
    words = _member_words(member)
    return words == segment or "".join(w[0] for w in words.split()) == segment.replace(" ", "")


def _agree(fact_value: Decimal, row_value: Decimal, decimals: int | None) -> bool:
    """Equal within the rounding the fact declares (decimals=-6: half a million)."""
    tol = Decimal("0.5") * (Decimal(10) ** -decimals) if decimals is not None else Decimal(0)
    return abs(abs(fact_value) - abs(row_value)) <= tol + Decimal("1e-9") * max(abs(fact_value), 1)


class FactStore:
    """``FilingFacts`` per filing: given up front, or read from a warehouse on first use."""

    def __init__(self, filings: Iterable[FilingFacts] = (), *, warehouse: Any = None,
                 lexicon: Lexicon | None = None) -> None:
        self.lexicon = lexicon or Lexicon.load_default()
        self._filings: dict[str, FilingFacts] = {f.filing_id: f for f in filings}
        self.warehouse = warehouse
        self._metas: dict[str, FilingMeta] | None = None

    @classmethod
    def from_parsed(cls, parsed: Iterable[Any], lexicon: Lexicon | None = None) -> FactStore:
        lexicon = lexicon or Lexicon.load_default()
        return cls([FilingFacts(p.meta, p.table_rows, p.facts, lexicon) for p in parsed], lexicon=lexicon)

    def metas(self) -> dict[str, FilingMeta]:
        if self._metas is None:
            metas = {fid: f.meta for fid, f in self._filings.items()}
            if self.warehouse is not None:
                from finrag_pipeline.core.records import from_row

                df = self.warehouse.query_df("SELECT * FROM core.filings WHERE NOT coalesce(removed, false)")
                for r in df.to_dict("records"):
                    metas.setdefault(r["filing_id"], from_row(FilingMeta, r))
            self._metas = metas
        return self._metas

    def filing(self, filing_id: str) -> FilingFacts | None:
        if filing_id not in self._filings:
            meta = self.metas().get(filing_id)
            if meta is None or self.warehouse is None:
                return None
            from finrag_pipeline.core.records import load_facts, load_table_rows

            self._filings[filing_id] = FilingFacts(meta, load_table_rows(self.warehouse, filing_id),
                                                   load_facts(self.warehouse, filing_id), self.lexicon)
        return self._filings[filing_id]

    def catalog(self):
        from finrag_pipeline.core.query_understanding import CorpusCatalog

        return CorpusCatalog([{"filing_id": m.filing_id, "ticker": m.ticker, "company": m.company,
                               "fiscal_year": m.fiscal_year, "period_end_date": m.period_end_date}
                              for m in self.metas().values()])

    def disagreements(self) -> list[Disagreement]:
        return [d for f in self._filings.values() for d in f.disagreements]
