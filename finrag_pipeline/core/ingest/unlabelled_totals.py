"""Rows of figures printed without a label: a subtotal or total under a rule, kept when the arithmetic says so.

Many statements print a block's total as a bare row of figures after the items it sums (Foot Locker's balance
sheet: total current assets, total assets, total current liabilities, total liabilities and equity). A table
extractor hands such a row over with an empty label (``""``); this module decides what it is:

- a **total** when, in every value column, it equals the sum of the rows above it back to a boundary (a group
  heading, the start of the table, or a total row it does not include), within the rounding of printed
  figures. A total above it (printed "Total ..." / "... Subtotal", or recognised here) counts as one item and
  stands for the rows it sums (total assets = total current assets + the non-current rows). A row labelled
  "Less ..." that is printed positive is subtracted; percentages are not summed.
- It is **named from the block's heading** ("Current liabilities:" -> "Total current liabilities", "ASSETS" ->
  "Total assets") when the heading covers exactly the rows summed: directly above them, every item indented
  deeper than a heading that ends in a colon (otherwise "Current assets:" would name a sum that runs past the
  current rows), and the total closing the heading's block (the next row is another heading, a total, the end,
  or out of the heading's reach). Lacking such a heading it is labelled plain ``"Total"``: the total of the rows
  it sums, no guessed name. Without a layout (HTML: no indents) an unnamed total that runs past group headings is
  left out: the row paths could not place it.
- A bare figure row that sums nothing, right under a label without figures that groups nothing (no colon, the rows
  below not indented under it), is that label's figures (the label printed a line above its figures: Costco's
  "United States" over "9 18 17").
- Any other bare figure row is left out of the table (its figures stay in the page text).

Pure functions over (label, values) rows so that the PDF and HTML extractors can share it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from finrag_pipeline.core.numbers import NIL_DASHES, cell_decimal

UNLABELLED = ""            # the label an extractor gives a row of figures printed without one
UNNAMED_TOTAL = "Total"    # a total whose block has no heading that covers exactly the rows it sums

_TOTAL_LABEL_RE = re.compile(r"^\s*total\b|\bsub-?total\b", re.I)   # "Total ...", "Argentina Subtotal"
_LESS_RE = re.compile(r"^\s*less\b", re.I)
_WORD_RE = re.compile(r"[a-z0-9]+")
_DANGLING_RE = re.compile(r"(?:\b(?:in|by|of|for|to|as|at|from|with|on|the|following|include|includes|were|are|is|and|or)|"
                          r"[&—–-])$",
                          re.I)


@dataclass
class _Total:
    """A row known to be a total: where its summed range starts and whether it owns the heading above it."""

    first: int            # index of the first row of its range (its owned heading when it owns one)
    owns_heading: bool


def _values(row_values: list[str]) -> list[Decimal | None]:
    out: list[Decimal | None] = []
    for v in row_values:
        t = (v or "").strip()
        if t.endswith(("%", "%)")):
            out.append(None)   # percentages (margins, changes) are not summed
        elif t in NIL_DASHES or t.strip("()$ ") in NIL_DASHES:
            out.append(Decimal(0) if t else None)
        else:
            out.append(cell_decimal(t))
    return out


def _step(text: str) -> Decimal:
    """One unit of the last printed digit: "1,234" -> 1, "12.5" -> 0.1."""
    m = re.search(r"\.(\d+)", text or "")
    return Decimal(1).scaleb(-len(m.group(1))) if m else Decimal(1)


def _is_heading(label: str, values: list[str]) -> bool:
    return bool(label.strip()) and not any((v or "").strip() for v in values)


def _heading_name(heading: str) -> str | None:
    """ "Current liabilities:" -> "Total current liabilities"; "ASSETS" -> "Total assets"; None for text that is
    no group heading (a sentence, a figure, a heading that already says total)."""
    h = re.sub(r"\s+", " ", heading).strip().rstrip(":").strip()
    if not h or len(h) > 80 or h.endswith((".", ";", ",")) or re.search(r"\d", h) or _TOTAL_LABEL_RE.search(h) \
            or not re.search(r"[A-Za-z]{3}", h):
        return None
    if _DANGLING_RE.search(h):
        return None   # "Balance Sheet caption reported in:" introduces rows; it names no quantity
    words = h.split()
    if h.isupper():
        h = h.lower()
    elif h[:1].isupper() and h[1:2].islower() and not any(w[:1].isupper() for w in words[1:]):
        h = h[:1].lower() + h[1:]   # sentence case ("Current liabilities"); a name keeps its capitals ("Data Center Group")
    return f"Total {h}"


def _words(text: str) -> set[str]:
    return set(_WORD_RE.findall(text.lower().replace("’", "'").replace("'", "")))


class _Resolver:
    def __init__(self, rows: list[tuple[str, list[str]]], indents: list[float | None]) -> None:
        self.rows = rows
        self.indents = indents
        self.labels = [label for label, _ in rows]
        self.totals: dict[int, _Total] = {}
        self.dropped: set[int] = set()

    def _is_total_row(self, j: int) -> bool:
        return j in self.totals or bool(_TOTAL_LABEL_RE.search(self.labels[j]))

    def _heading_covers(self, h: int, items: list[int]) -> bool:
        """The heading at ``h`` covers the rows ``items`` (indexes of the rows and nested totals summed)."""
        hi = self.indents[h]
        if hi is None:
            return True
        indents = [self.indents[i] for i in items if self.indents[i] is not None and self.labels[i].strip()]
        if self.labels[h].rstrip().endswith(":"):
            return all(i > hi + 1 for i in indents)    # a group label holds the rows indented under it
        return all(i >= hi - 1 for i in indents)        # a section heading ("ASSETS") holds the rows at its level

    def walk(self, t: int, min_items: int = 2) -> tuple[int, int | None, list[int]] | None:
        """The block row ``t`` totals: (index of its first row, index of the heading that names it or None, the
        items summed); None when no boundary above it gives its figures."""
        target = _values(self.rows[t][1])
        cols = [k for k, v in enumerate(target) if v is not None]
        if not cols or all(target[k] == 0 for k in cols):
            return None
        steps = [_step(self.rows[t][1][k]) for k in range(len(target))]
        sums = [Decimal(0)] * len(target)
        items: list[int] = []

        def matches() -> bool:
            if len(items) < min_items:
                return False
            # each printed figure is off by at most half a unit: n items and the total by (n + 1) / 2 at most, and
            # seldom by more than three standard deviations of their sum (sqrt(n / 12) each)
            n = len(items)
            slack = max(1, min((n + 1) // 2, math.ceil(3 * math.sqrt((n + 1) / 12))))
            return all(abs(sums[k] - target[k]) <= steps[k] * slack for k in cols)  # type: ignore[operator]

        pos = t - 1
        while pos >= -1:
            if pos == -1:
                return (0, None, items) if matches() else None
            label, values = self.rows[pos]
            if pos in self.dropped:
                pos -= 1
                continue
            if _is_heading(label, values):
                if matches():
                    first = pos + 1
                    h = self._naming_heading(pos, items, t)
                    return first, h, items
                pos -= 1
                continue
            if self._is_total_row(pos) and matches():
                return pos + 1, None, items     # a total above that this one does not include
            vals = _values(values)
            if any(vals[k] is None and (values[k] or "").strip() for k in cols):
                return None    # a cell that is text or a percentage where this row has a figure: not a sum
            sign = -1 if _LESS_RE.match(label) and all((v or 0) >= 0 for v in vals) else 1
            for k in cols:
                sums[k] += sign * (vals[k] or Decimal(0))
            items.append(pos)
            nested = self.totals.get(pos)
            pos = (nested.first if nested else pos) - 1
        return None

    def _naming_heading(self, pos: int, items: list[int], t: int) -> int | None:
        """The heading at ``pos`` or, past headings that do not cover the items, the next one up (no rows between);
        only a heading whose block the total closes."""
        while pos >= 0 and _is_heading(*self.rows[pos]):
            if _heading_name(self.labels[pos]) and self._heading_covers(pos, items) and self._closes(pos, t):
                return pos
            pos -= 1
        return None

    def _closes(self, h: int, t: int) -> bool:
        """Row ``t`` ends the block of heading ``h``: the next row is another heading, a total, the end of the table,
        or a row out of the heading's reach (at or left of a group label ending in a colon, left of a section
        heading). Pepsi's "Property, plant and equipment, net" heading runs on past the gross sum to "Accumulated
        depreciation" and the net "Total": the gross sum is not the heading's total."""
        nxt = next((i for i in range(t + 1, len(self.rows)) if i not in self.dropped), None)
        if nxt is None:
            return True
        label, values = self.rows[nxt]
        if _is_heading(label, values) or _TOTAL_LABEL_RE.search(label) or not label.strip():
            return True
        hi, ni = self.indents[h], self.indents[nxt]
        if hi is None or ni is None:
            return self.labels[h].rstrip().endswith(":")   # no layout: a colon group is closed by its total
        return ni <= hi + 1 if self.labels[h].rstrip().endswith(":") else ni < hi - 1

    def _label_above(self, t: int) -> int | None:
        """The row right above ``t`` when it is a label without figures that groups nothing: no colon, not a
        capitalised section heading, and the next row (if any) not indented under it. Costco's "United States"
        over "9 18 17", with its siblings "Canada 4 3 3" at the same indent."""
        above = t - 1
        if above < 0 or not _is_heading(*self.rows[above]) or above in self.dropped:
            return None
        label = self.labels[above].strip()
        if label.endswith(":") or label.isupper() or not re.search(r"[A-Za-z]{3}", label):
            return None
        after = next((i for i in range(t + 1, len(self.rows)) if i not in self.dropped), None)
        ind, ind_after = self.indents[above], self.indents[after] if after is not None else None
        if ind is not None and ind_after is not None and self.labels[after].strip() and ind_after > ind + 1:
            return None   # the rows below are indented under it: it is their group heading
        return above

    def resolve(self) -> list[int]:
        """Label the unlabelled totals in place; return the indexes of unlabelled rows that sum nothing."""
        for t, (label, values) in enumerate(self.rows):
            if not any((v or "").strip() for v in values):
                continue
            unlabelled = label.strip() == UNLABELLED
            if not unlabelled and not _TOTAL_LABEL_RE.search(label):
                continue
            # a printed total may total one row (AES's "Dominican Republic Subtotal" of one plant); a bare figure row
            # must sum two or more (one row repeated is no evidence of a total)
            found = self.walk(t, min_items=2 if unlabelled else 1)
            if found is None:
                if unlabelled and self._label_above(t) is not None:
                    above = self._label_above(t)
                    self.rows[above] = (self.labels[above], values)   # its label printed on the line above
                    self.dropped.add(t)
                elif unlabelled:
                    self.dropped.add(t)
                continue
            first, heading, items = found
            if unlabelled:
                name = _heading_name(self.labels[heading]) if heading is not None else None
                if name is None and self.indents[t] is None and any(_is_heading(*self.rows[i]) for i in range(first, t)):
                    # without a layout (HTML) an unnamed total that runs past group headings cannot be placed in the
                    # row paths: it would read as the last heading's total ("Level 2 securities > Total")
                    self.dropped.add(t)
                    continue
                self.labels[t] = name or UNNAMED_TOTAL
                self.rows[t] = (self.labels[t], values)
                # printed at the level of its heading (or of the rows and headings it sums), as a labelled total
                # would be: the group headings it runs past close before it
                level = self.indents[heading] if heading is not None else min(
                    (self.indents[i] for i in range(first, t) if self.indents[i] is not None), default=None)
                self.indents[t] = level if level is not None else self.indents[t]
                self.totals[t] = _Total(heading if heading is not None else first, heading is not None)
                continue
            # a printed total owns its heading when it names it ("Total shareholders' equity" under
            # "Shareholders' equity:"), not when the heading is wider ("LIABILITIES AND EQUITY" over "Total liabilities")
            owns = first > 0 and _is_heading(*self.rows[first - 1]) and bool(_words(self.labels[first - 1])) \
                and _words(self.labels[first - 1]) <= _words(label)
            self.totals[t] = _Total(first - 1 if owns else first, owns)
        return sorted(self.dropped)


def resolve_unlabelled_totals(rows: list[tuple[str, list[str]]], indents: list[float | None] | None = None
                              ) -> tuple[list[tuple[str, list[str]]], list[float | None], list[int]]:
    """``rows`` with every unlabelled figure row (label ``""``) that totals the rows above it named, and the ones
    that total nothing left out: (rows, their indents, the indexes left out of the input)."""
    indents = list(indents) if indents is not None else [None] * len(rows)
    if not any(label.strip() == UNLABELLED and any((v or "").strip() for v in values) for label, values in rows):
        return rows, indents, []
    resolver = _Resolver(list(rows), indents)
    dropped = set(resolver.resolve())
    keep = [i for i in range(len(rows)) if i not in dropped]
    return [resolver.rows[i] for i in keep], [resolver.indents[i] for i in keep], sorted(dropped)
