"""A subtotal or total printed without a label is kept when the arithmetic says what it is (issue 26, fact layer).

The rule (core/ingest/unlabelled_totals.py) is tested on hand-made tables whose sums are computed here; the real
case is Foot Locker's FY2021 balance sheet (robustness2/FOOTLOCKER_2022_10K.pdf, PDF page 44, printed "2021 Form
10-K Page 41"), which prints total current assets, total assets, total current liabilities and total liabilities
and shareholders' equity as bare rows of figures under a rule. Those rows skip cleanly without /work/shared/corpus.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest

from finrag_pipeline.core.ingest.unlabelled_totals import UNNAMED_TOTAL, resolve_unlabelled_totals

CORPUS = Path(os.environ.get("FINRAG_SHARED_CORPUS", "/work/shared/corpus"))
FOOTLOCKER = CORPUS / "robustness2" / "FOOTLOCKER_2022_10K.pdf"


def _labels(rows):
    return [label for label, _ in rows]


# ---------------------------------------------------------------- the rule on hand-made tables

# (label, values, indent): "" is a row of figures printed without a label
BALANCE_SHEET = [
    ("ASSETS", ["", ""], 66),
    ("Current assets:", ["", ""], 66),
    ("Cash", ["100", "90"], 71),
    ("Receivables", ["50", "(5)"], 71),      # a negative item: 100 + 50 = 150; 90 - 5 = 85
    ("", ["150", "85"], 398),                 # -> Total current assets
    ("Property, net", ["40", "15"], 66),
    ("", ["190", "100"], 398),                # 150 + 40, 85 + 15 -> Total assets (the subtotal stands for its rows)
    ("LIABILITIES AND EQUITY", ["", ""], 66),
    ("Current liabilities:", ["", ""], 66),
    ("Payables", ["30", "20"], 71),
    ("Accrued", ["20", "10"], 71),
    ("", ["50", "30"], 398),                  # -> Total current liabilities
    ("Long-term debt", ["60", "40"], 66),
    ("Total liabilities", ["110", "70"], 66),  # printed: 50 + 60, 30 + 40
    ("Equity:", ["", ""], 66),
    ("Common stock", ["70", "20"], 71),
    ("Retained earnings", ["10", "10"], 71),
    ("Total equity", ["80", "30"], 66),
    ("", ["190", "100"], 398),                # 110 + 80, 70 + 30 -> Total liabilities and equity
]


def test_balance_sheet_totals_are_named_from_their_headings():
    rows, indents, dropped = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in BALANCE_SHEET],
                                                       [i for _, _, i in BALANCE_SHEET])
    assert dropped == []
    named = {label: values for label, values in rows if label.startswith("Total")}
    assert named == {
        "Total current assets": ["150", "85"],
        "Total assets": ["190", "100"],
        "Total current liabilities": ["50", "30"],
        "Total liabilities": ["110", "70"],
        "Total equity": ["80", "30"],
        "Total liabilities and equity": ["190", "100"],
    }
    # a named total sits at its heading's level (the group it closes), not at the value column's x
    assert indents[_labels(rows).index("Total current assets")] == 66


@pytest.mark.parametrize(("items", "total", "kept"), [
    (["10", "20", "31"], "62", True),            # 61 printed as 62: rounding of three printed figures
    (["10", "20", "31"], "60", True),            # 1 under
    (["10", "20", "31"], "66", False),           # 5 off: not a sum of these rows
    (["10", "20", "31"], "51", False),           # 10 + 20 + 31 is not 51 (no partial sums from the middle)
    (["1.2", "2.3"], "3.5", True),               # decimals: the unit is the last printed digit
    (["1.2", "2.3"], "3.7", False),              # two tenths off
    (["10"], "10", False),                       # one row repeated is no total
    (["10", "—", "5"], "15", True),              # a nil dash is zero
])
def test_rounding_tolerance_and_non_summing_rows(items, total, kept):
    table = [("Group:", [""], 10)] + [(f"Item {i}", [v], 20) for i, v in enumerate(items)] + [("", [total], 300)]
    rows, _, dropped = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in table], [i for *_, i in table])
    if kept:
        assert rows[-1] == ("Total group", [total]) and dropped == []
    else:
        assert dropped == [len(table) - 1] and "" not in _labels(rows) and len(rows) == len(table) - 1


def test_every_column_must_sum_and_percentages_are_not_summed():
    table = [("Revenue:", ["", "", ""]), ("A", ["10", "20", "40%"]), ("B", ["5", "6", "25%"])]
    rows, _, _ = resolve_unlabelled_totals(table + [("", ["15", "26", "8%"])], [10, 20, 20, 300])
    assert rows[-1][0] == "Total revenue"          # the % column (a margin) is not summed
    _, _, dropped = resolve_unlabelled_totals(table + [("", ["15", "29", ""])], [10, 20, 20, 300])
    assert dropped == [3]                          # 20 + 6 is not 29: one column off is no total


def test_without_a_heading_the_total_is_unnamed():
    table = [("Land", ["4"]), ("Buildings", ["47"]), ("Equipment", ["1,331"]), ("", ["1,382"])]
    rows, _, dropped = resolve_unlabelled_totals(table, [66, 66, 66, 398])
    assert rows[-1] == (UNNAMED_TOTAL, ["1,382"]) and dropped == []


def test_a_group_heading_does_not_name_a_sum_that_runs_past_its_rows():
    """"Current assets:" holds the rows indented under it; a sum that also takes the non-current row at the
    heading's own level is the outer section's total ("ASSETS"), or unnamed without one - never current assets."""
    body = [("Current assets:", [""], 66), ("Cash", ["100"], 71), ("Inventory", ["50"], 71),
            ("Property, net", ["40"], 66), ("", ["190"], 398)]
    rows, _, _ = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in body], [i for *_, i in body])
    assert rows[-1][0] == UNNAMED_TOTAL
    with_section = [("ASSETS", [""], 66), *body]
    rows, _, _ = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in with_section], [i for *_, i in with_section])
    assert rows[-1][0] == "Total assets"


def test_less_row_printed_positive_is_subtracted_and_a_dangling_heading_names_nothing():
    table = [("Amounts reported in:", ["", ""]), ("Payments", ["3,441", "87"]), ("Less: Interest", ["506", "24"]),
             ("", ["2,935", "63"])]
    rows, _, dropped = resolve_unlabelled_totals(table, [66, 66, 66, 398])
    assert dropped == [] and rows[-1] == (UNNAMED_TOTAL, ["2,935", "63"])


def test_rows_without_figures_and_labelled_rows_are_untouched():
    table = [("Revenue", ["10", "12"]), ("Cost", ["(4)", "(5)"]), ("Gross margin", ["6", "7"])]
    assert resolve_unlabelled_totals(table, [1, 1, 1]) == (table, [1, 1, 1], [])
    again = resolve_unlabelled_totals(*resolve_unlabelled_totals(
        [("Grants:", [""]), ("a", ["1"]), ("b", ["2"]), ("", ["3"])], [0, 5, 5, 9])[:2])
    assert again[0][-1] == ("Total grants", ["3"]) and again[2] == []     # idempotent: a re-run changes nothing


# ---------------------------------------------------------------- the real filing

@pytest.fixture(scope="module")
def footlocker():
    if not FOOTLOCKER.exists():
        pytest.skip(f"{FOOTLOCKER} is absent")
    from finrag_pipeline.core.ingest.parse import parse_filing

    return parse_filing(FOOTLOCKER)


# printed label (derived from the heading), figures as printed: January 29, 2022 (FY2021), January 30, 2021 (FY2020)
FOOTLOCKER_BALANCE_SHEET = [
    ("Total current assets", "2,363", "2,835"),                       # 804 + 1,266 + 293
    ("Total assets", "8,135", "7,043"),                               # 2,363 + 917 + 2,616 + 86 + 797 + 454 + 781 + 121
    ("Total current liabilities", "1,735", "1,644"),                  # 596 + 561 + 6 + 572
    ("Total liabilities and shareholders’ equity", "8,135", "7,043"),  # 4,892 + 3,243
]


@pytest.mark.parametrize(("label", "fy2021", "fy2020"), FOOTLOCKER_BALANCE_SHEET)
def test_footlocker_balance_sheet_keeps_its_unlabelled_totals(footlocker, label, fy2021, fy2020):
    rows = [r for r in footlocker.table_rows if r.page_number == 44 and r.row_label == label]
    assert len(rows) == 1, [r.row_label for r in footlocker.table_rows if r.page_number == 44]
    row = rows[0]
    assert row.statement_type == "balance_sheet" and row.unit == "USD millions"
    assert [(c.period, c.value_text) for c in row.cells] == [("2022-01-29", fy2021), ("2021-01-30", fy2020)]


@pytest.mark.parametrize(("concept", "year", "value"), [
    ("total_current_liabilities", 2021, 1735), ("total_current_liabilities", 2020, 1644),
    ("total_assets", 2021, 8135), ("total_current_assets", 2021, 2363),
])
def test_footlocker_fact_layer_reads_the_totals(footlocker, concept, year, value):
    from finrag_pipeline.core.analyst.store import FactStore

    fact = FactStore.from_parsed([footlocker]).filing(footlocker.meta.filing_id).lookup(concept, year)
    assert fact is not None and fact.value == Decimal(value) and fact.scale == 1_000_000
    assert fact.source.page == 44


def test_footlocker_rows_that_sum_nothing_stay_out_of_tables_but_not_out_of_the_page(footlocker):
    """Note 13 (PDF p62): "$ 451 $ 8" is debt less its current portion (457 - 6), no sum of the rows above: it is
    no table row, and the page text still prints it."""
    page = footlocker.pages[61]
    assert "$ 451 $ 8" in page.text
    assert not any(c.value_text == "451" and r.page_number == 62 and r.row_label in ("", UNNAMED_TOTAL)
                   for r in footlocker.table_rows for c in r.cells)
    assert all(r.row_label for r in footlocker.table_rows)


def test_figures_a_line_below_their_label_join_it():
    """Costco FY2020 p26: "United States" on one line, "9 18 17" on the next, then "Canada 4 3 3" at the same indent:
    the figures are the label's. A group heading (a colon, or rows indented under it) never takes figures."""
    table = [("Warehouse openings:", ["", ""], 18), ("United States", ["", ""], 34), ("", ["9", "18"], 436),
             ("Canada", ["4", "3"], 34), ("Total warehouse openings", ["13", "21"], 18)]
    rows, _, dropped = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in table], [i for *_, i in table])
    assert rows[1] == ("United States", ["9", "18"]) and dropped == [2]
    grouped = [("Segment A", ["", ""], 18), ("", ["7", "8"], 436), ("Product", ["1", "2"], 34)]
    rows, _, dropped = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in grouped], [i for *_, i in grouped])
    assert rows == [("Segment A", ["", ""]), ("Product", ["1", "2"])] and dropped == [1]


@pytest.mark.skipif(not (CORPUS / "robustness" / "COSTCO_2020_10K.pdf").exists(), reason="corpus absent")
def test_costco_label_above_its_figures():
    from finrag_pipeline.core.ingest.pdf import extract_tables
    from finrag_pipeline.core.ingest.tables import to_table_rows

    rows = [r for raw in extract_tables(CORPUS / "robustness" / "COSTCO_2020_10K.pdf", [26])
            for r in to_table_rows(raw, "COST-2020-10K", 0)]
    by_label = {r.row_label: [c.value_text for c in r.cells] for r in rows}
    assert by_label["United States"] == ["9", "18", "17"]      # 2020, 2019, 2018 warehouse openings
    assert by_label["Total warehouse openings, including relocations"] == ["16", "25", "25"]   # 9 + 4 + 3
    canada = next(r for r in rows if r.row_label == "Canada")
    assert "United States" not in canada.row_path


def test_a_heading_names_only_the_total_that_closes_its_block():
    """PepsiCo FY2020 p107: "Property, plant and equipment, net" over Land ... Construction in progress, a bare
    46,340 (gross), "Accumulated depreciation (24,971)" and "Total 21,369" (net), all at one indent. The bare sum is
    not the heading's total (its block runs on), so it is no "Total property, plant and equipment, net"."""
    table = [("Property, plant and equipment, net", ["", ""], 17), ("Land", ["1,171", "1,130"], 17),
             ("Buildings", ["10,214", "9,314"], 17), ("Machinery", ["31,276", "29,390"], 17),
             ("Construction in progress", ["3,679", "3,169"], 17), ("", ["46,340", "43,003"], 416),
             ("Accumulated depreciation", ["(24,971)", "(23,698)"], 17), ("Total", ["21,369", "19,305"], 17)]
    rows, _, dropped = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in table], [i for *_, i in table])
    assert rows[5] == (UNNAMED_TOTAL, ["46,340", "43,003"]) and dropped == []
    # the same block closed by the next heading: the heading names it (PepsiCo p94 "Short-term debt obligations")
    closed = table[:6] + [("Other assets", ["", ""], 17)]
    rows, _, _ = resolve_unlabelled_totals([(lbl, v) for lbl, v, _ in closed], [i for *_, i in closed])
    assert rows[5][0] == "Total property, plant and equipment, net"


def test_printed_subtotals_stand_for_their_rows_even_of_one_row():
    """AES FY2021 p37 (MCAC generation): "Panama Subtotal 670" of one plant, "Dominican Republic Subtotal 50" of one,
    then a bare 720 (MW; the % column is not summed): the grand total of the subtotals, no double count."""
    table = [("Gatun Panama Gas", ["670", "49%"]), ("Panama Subtotal", ["670", ""]),
             ("Santanasol Dominican Republic Solar", ["50", "85%"]), ("Dominican Republic Subtotal", ["50", ""]),
             ("", ["720", ""])]
    rows, _, dropped = resolve_unlabelled_totals(table, [18, 24, 18, 24, 362])
    assert rows[-1] == (UNNAMED_TOTAL, ["720", ""]) and dropped == []


def test_html_grid_rows_without_a_label_go_through_the_same_rule():
    """An inline-XBRL table's grid (cells as (first column, last column, text)): a row of figures in the value columns
    under "Current liabilities:" is its total; without a layout, a heading-less sum across group headings is left
    out (it would read as the last heading's total)."""
    from finrag_pipeline.core.ingest.html import build_raw_table
    from finrag_pipeline.core.ingest.tables import to_table_rows

    grid = [[(2, 3, "2024"), (4, 5, "2023")],
            [(0, 1, "Current liabilities:")],
            [(0, 1, "Accounts payable"), (2, 3, "596"), (4, 5, "402")],
            [(0, 1, "Accrued liabilities"), (2, 3, "561"), (4, 5, "560")],
            [(2, 3, "1,157"), (4, 5, "962")],
            [(0, 1, "Long-term debt:")],
            [(0, 1, "Notes"), (2, 3, "451"), (4, 5, "8")],
            [(0, 1, "Leases"), (2, 3, "100"), (4, 5, "2")],
            [(2, 3, "551"), (4, 5, "10")],
            [(2, 3, "1,709"), (4, 5, "972")]]   # 1,157 + 551: no heading covers it, no layout to place it
    raw = build_raw_table(grid, page_number=7)
    rows = to_table_rows(raw, "X-2024-10K", 0)
    assert [(r.row_label, [c.value_text for c in r.cells]) for r in rows if r.row_label.startswith("Total")] == [
        ("Total current liabilities", ["1,157", "962"]), ("Total long-term debt", ["551", "10"])]
    assert not any(c.value_text == "1,709" for r in rows for c in r.cells)
