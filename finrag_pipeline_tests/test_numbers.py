"""core/numbers.py: the one parser and formatter of figures (table-driven)."""

from decimal import Decimal

import pytest

from finrag_pipeline.core.numbers import (
    cell_decimal,
    format_amount,
    format_figure,
    format_printed_figure,
    ix_value,
    parse_cell,
    parse_figure,
    parse_figures,
    parse_ixt,
    scale_of_text,
    unit_scale,
    years_in,
)


@pytest.mark.parametrize("text,value,kind,scale", [
    ("$394,328 million", 394328e6, "currency", 1e6),
    ("$394.3 billion", 394.3e9, "currency", 1e9),
    ("$4.2B", 4.2e9, "currency", 1e9),
    ("4.2bn", 4.2e9, "plain", 1e9),
    ("$(1,234)", -1234.0, "currency", 1.0),
    ("(1,234)", -1234.0, "plain", 1.0),
    ("-3.2%", -3.2, "percent", 1.0),
    ("12.5 percent", 12.5, "percent", 1.0),
    ("1.5 percentage points", 1.5, "points", 1.0),
    ("150 bps", 1.5, "points", 1.0),
    ("$6.11 per diluted share", 6.11, "per_share", 1.0),
    ("5 m", 5.0, "plain", 1.0),                 # a lone letter scales only after a currency sign
    ("US$ 2,000 thousand", 2e6, "currency", 1e3),
])
def test_parse_figure(text, value, kind, scale):
    f = parse_figure(text)
    assert f.value == pytest.approx(value) and f.kind == kind and f.scale == scale


@pytest.mark.parametrize("text,values", [
    ("$63,090 million [September 25, 2021]", [63090e6]),
    ("Years ended Sept. 24, 2022: 394,328", [394328.0]),
    ("as of 25 September 2021, 4,061", [4061.0]),
    ("period ended 2022-09-24: 12.5%", [12.5]),
    ("May 5, 2022 sales rose 12 to 1,500", [12.0, 1500.0]),
])
def test_parse_figures_skips_dates(text, values):
    assert [f.value for f in parse_figures(text)] == values


def test_parse_figures_skips_years_and_citations():
    text = "Net sales were $394,328 million in fiscal 2022 (source: AAPL-2022-10K, page 40); see Item 7 and 10-K."
    assert [f.text for f in parse_figures(text)] == ["$394,328 million"]
    assert years_in("Fiscal 2022, with FY2021 and September 24, 2022") == {2021, 2022}


# One parser per job, one table of the cases the retired parse_amount and parse_cell both read:
# parse_cell (a cell that is one number and nothing else; a lone dash is nil, here None) and
# parse_figure (the figure of a short text: as printed, and with its scale applied).
@pytest.mark.parametrize("text,cell,printed,value", [
    ("(1,234)", -1234.0, -1234.0, -1234.0), ("$ 394,328", 394328.0, 394328.0, 394328.0),
    ("12.5 %", 12.5, 12.5, 12.5), ("12.5%", 12.5, 12.5, 12.5), ("(0.5)", -0.5, -0.5, -0.5), ("(8)%", -8.0, -8.0, -8.0),
    ("$ 1.2 billion", None, 1.2, 1.2e9),      # a scale word: no cell, a figure of 1.2 billion
    ("\u2014", None, None, None), ("-", None, None, None), ("(\u2013)", None, None, None), ("", None, None, None),
])
def test_one_parser_for_cells_and_short_texts(text, cell, printed, value):
    assert parse_cell(text, dash_value=None) == cell
    figure = parse_figure(text)
    if printed is None:
        assert figure is None
    else:
        assert figure.as_printed == pytest.approx(printed) and figure.value == pytest.approx(value)


def test_one_dash_set():
    """A lone dash of any kind is nil, in a table cell (0.0, or the dash_value asked for) as in an XBRL fact."""
    for dash in ("\u2014", "\u2013", "-", "\u2212", "\u2014\u2014", "\u2014 \u2014", "(\u2014)", "(\u2013)"):
        assert parse_cell(dash) == 0.0 and parse_cell(dash, dash_value=None) is None, dash
        assert cell_decimal(dash) is None, dash
        assert parse_ixt(dash, "ixt:num-dot-decimal") == 0.0, dash   # an inline-XBRL fact shown as a dash is nil


@pytest.mark.parametrize("unit,expected", [
    ("USD millions", ("USD", 1e6)), ("USD thousands", ("USD", 1e3)), ("USD billions", ("USD", 1e9)),
    ("USD per share", ("USD per share", 1.0)), ("percent", ("percent", 1.0)), ("shares millions", ("shares", 1e6)),
    ("USD/shares", ("USD per share", 1.0)), ("pure", ("ratio", 1.0)), (None, (None, 1.0)), ("days", ("days", 1.0)),
])
def test_unit_scale(unit, expected):
    assert unit_scale(unit) == expected


@pytest.mark.parametrize("text,scale", [
    ("Total net sales | 2022: 394,328 | USD millions", 1e6),
    ("(In millions, except number of shares)", 1e6),
    ("(Dollars in thousands)", 1e3),
    ("Net sales increased 8% to $394.3 billion", None),
])
def test_scale_of_text(text, scale):
    assert scale_of_text(text) == scale


@pytest.mark.parametrize("value,unit,text,expected", [
    (394328, "USD millions", "394,328", "$394,328 million"), (-334, "USD millions", "(334)", "-$334 million"),
    (6.11, "USD per share", "6.11", "$6.11 per share"), (12.5, "percent", "12.5", "12.5%"),
    (15943, "shares millions", "15,943", "15,943 million shares"), (1.5, "percentage points", "1.5",
                                                                     "1.5 percentage points"),
])
def test_format_amount(value, unit, text, expected):
    assert format_amount(value, unit, text) == expected


@pytest.mark.parametrize("value,unit,text,expected", [
    (45, "days", "45", "45"),                       # a table's days: a plain number (QA sets were built so)
    (4, None, "$4", "$4"), (-4, None, "$(4)", "-$4"), (1.53, "ratio", "1.53", "1.53"), (1.5, "ratio", "2", "2"),
])
def test_format_amount_other_units(value, unit, text, expected):
    assert format_amount(value, unit, text) == expected


@pytest.mark.parametrize("value,unit,decimals,scale,expected", [
    (Decimal("42.14"), "percent", 1, 1, "42.1%"), (Decimal("-50.8"), "percent", 1, 1, "-50.8%"),
    (Decimal("12248"), "USD", 0, 10**6, "$12,248 million"), (Decimal("-334"), "USD", 0, 10**6, "-$334 million"),
    (Decimal("6.11"), "USD per share", 2, 1, "$6.11 per share"), (Decimal("45.2"), "days", 1, 1, "45.2 days"),
    (Decimal("1.53"), "ratio", 2, 1, "1.53"), (Decimal("15943"), "shares", 0, 10**6, "15,943 million shares"),
    (Decimal("1.5"), "percentage points", 1, 1, "1.5 percentage points"), (Decimal("5"), "USD", 0, 1, "$5"),
    (394.3, "USD", 1, 1e9, "$394.3 billion"),
])
def test_format_figure(value, unit, decimals, scale, expected):
    """The calculator's results and table values share this one formatter."""
    assert format_figure(value, unit, decimals, scale) == expected


@pytest.mark.parametrize("value_text,unit,expected", [
    ("394,328", "USD millions", "$394,328 million"), ("(334)", "USD millions", "$(334) million"),
    ("$ 1,234", "USD thousands", "$ 1,234 thousand"), ("43.3%", "USD millions", "43.3%"), ("43.3", "percent", "43.3%"),
    ("15,943", "shares thousands", "15,943 thousand shares"), ("15,943", "shares", "15,943 shares"),
    ("$28.5 billion", None, "$28.5 billion"), ("1,234", "USD", "$1,234"), ("12", "USD Millions", "$12 million"),
    ("6.11", "USD per share", "$6.11 per share"),
])
def test_format_printed_figure(value_text, unit, expected):
    """The extractive answer's quote: the filing's characters, with format_figure's unit words."""
    assert format_printed_figure(value_text, unit) == expected


@pytest.mark.parametrize("cell,value", [
    ("(1,234)", -1234.0), ("$ 394,328", 394328.0), ("12.5 %", 12.5), ("(8)%", -8.0), ("$ (2,611)", -2611.0),
    ("0.48", 0.48), ("1,234.5", 1234.5), ("(0.5)", -0.5), ("\u2212 12", -12.0), ("-.5", -0.5),
    ("1,234)", -1234.0),                 # EDGAR splits "(" into the cell before: still negative
    ("\u2014", 0.0), ("-", 0.0), ("\u2014 \u2014", 0.0), ("(\u2013)", 0.0),   # nil dashes
    ("\u20ac 1,000", 1000.0), ("1\u00a0234", 1234.0),
    ("n/a", None), ("", None), ("12 months", None), ("1,234 million", None), ("Total 1,234", None),
    ("Note 5", None), ("1 234", 1234.0),   # a PDF layout may split digits with a space: joined
])
def test_parse_cell_is_one_number_and_nothing_else(cell, value):
    """ingest/tables.py's cells (parse_number delegates here): a dash is nil (0.0), words are no value."""
    from finrag_pipeline.core.ingest.tables import is_numeric_text, parse_number

    assert parse_cell(cell) == value
    assert parse_number(cell) == value and is_numeric_text(cell) == (value is not None)


def test_parse_cell_dash_value_and_exact_decimals():
    assert parse_cell("\u2014", dash_value=None) is None
    assert cell_decimal("(1,234.50)") == Decimal("-1234.50") and str(cell_decimal("0.10")) == "0.10"
    assert cell_decimal("\u2014") is None and cell_decimal("$4.2 billion") is None


@pytest.mark.parametrize("text,fmt,value", [
    ("394,328", "ixt:num-dot-decimal", 394328.0),
    ("1.234,5", "ixt:num-comma-decimal", 1234.5),
    ("\u2014", "ixt:fixed-zero", 0.0), ("-", None, 0.0), ("", "ixt-sec:numwordsen", 0.0),
    ("three", "ixt-sec:numwordsen", 3.0), ("No", "ixt-sec:numwordsen", 0.0), ("many", "ixt-sec:numwordsen", None),
    ("6.11", None, 6.11), ("$ 1,000", "ixt:numdotdecimal", 1000.0),
])
def test_parse_ixt(text, fmt, value):
    assert parse_ixt(text, fmt) == value


@pytest.mark.parametrize("text,scale,sign,value", [
    ("394,328", 6, None, 394328e6), ("(2,611)", 6, "-", -2611e6), ("6.11", 0, None, 6.11),
    ("25.3", -2, None, 0.253),          # a percent shown as 25.3 with scale -2 is the ratio 0.253
    ("three", 3, None, None),            # not a number in the dot-decimal format
])
def test_ix_value_applies_scale_and_sign(text, scale, sign, value):
    fmt = None if text != "three" else "ixt:num-dot-decimal"
    assert ix_value(text, fmt, scale, sign) == (pytest.approx(value) if value is not None else None)


def test_figure_keys_and_printed_figures():
    """The reranker's figure keys and the extractive answer's quotes come from here too."""
    from finrag_pipeline.core.numbers import figure_keys, printed_figures

    assert figure_keys("Did sales reach $394,328 million (up 7.8%) in 2022, per the 10-K?") == ["394328", "7.8", "10"]
    assert printed_figures("Revenue was $28.5 billion on December 31, 2021, up 12.5% on 1,234 units in 12 stores.") \
        == ["$28.5", "12.5%", "1,234"]
