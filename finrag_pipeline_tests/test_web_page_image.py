"""Page images and highlight boxes on a real PDF page (Apple FY2022 excerpt, checked by hand:
page 4 is the consolidated statements of operations, Total net sales 394,328 / 365,817 / 274,515;
page 2 holds the risk factor on global and regional economic conditions)."""

import io
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from finrag_pipeline.web.page_image import (
    Box,
    PageText,
    Segment,
    line_span,
    render_page_png,
    span_boxes,
    table_row_boxes,
    text_segments,
)

PDF = Path(__file__).parent / "data" / "apple_2022_excerpt.pdf"


def _text_in(pdf_path: Path, page_number: int, box: Box) -> str:
    """The page's text inside a box (converted back to PDF points): what a reader sees highlighted."""
    pdf = pdfium.PdfDocument(str(pdf_path))
    page = pdf[page_number - 1]
    w, h = page.get_size()
    text = page.get_textpage().get_text_bounded(left=box.x * w, bottom=h - (box.y + box.h) * h,
                                                right=(box.x + box.w) * w, top=h - box.y * h)
    pdf.close()
    return " ".join(text.split())


@pytest.fixture(scope="module")
def income_page():
    page = PageText(PDF, 4)
    yield page
    page.close()


def test_table_row_box_covers_the_row_label_and_its_values(income_page):
    boxes = table_row_boxes(income_page, "Total net sales", ["394,328", "365,817", "274,515"])
    assert len(boxes) == 1
    inside = _text_in(PDF, 4, boxes[0])
    assert "Total net sales" in inside
    for value in ("394,328", "365,817", "274,515"):
        assert value in inside
    # one row, not the table: the row below (cost of sales) and net income stay outside
    assert "Net income" not in inside and "Total cost of sales" not in inside
    assert 0 < boxes[0].h < 0.03 and boxes[0].w > 0.5   # a single line across the columns


def test_table_row_picks_the_occurrence_with_the_values(income_page):
    # "Products" labels a row under Net sales and another under Cost of sales: the values decide
    boxes = table_row_boxes(income_page, "Products", ["201,471", "192,266", "151,286"])
    assert len(boxes) == 1
    inside = _text_in(PDF, 4, boxes[0])
    assert "Products" in inside and "201,471" in inside and "151,286" in inside
    assert "316,199" not in inside
    sales = table_row_boxes(income_page, "Products", ["316,199", "297,392", "220,747"])
    assert sales[0].y < boxes[0].y          # the net-sales row is printed above the cost-of-sales row


def test_prose_span_boxes_cover_the_span_across_lines():
    page = PageText(PDF, 2)
    try:
        start = page.squashed.find("regionaleconomicconditions")
        assert start > 0
        # a span in the ingest's page text: whitespace differs from pdfium's, the match ignores it
        pdf = pdfium.PdfDocument(str(PDF))
        raw = pdf[1].get_textpage().get_text_range()
        pdf.close()
        at = raw.find("global and regional economic conditions")
        span = " ".join(raw[at: at + 400].split())
        boxes = span_boxes(page, span)
        assert len(boxes) >= 3                       # 400 characters wrap over several lines
        joined = " ".join(_text_in(PDF, 2, b) for b in boxes)
        assert "global and regional economic conditions" in joined
        assert all(0 <= b.x < 1 and 0 <= b.y < 1 and b.w > 0 and b.h > 0 for b in boxes)
    finally:
        page.close()


def test_text_not_on_the_page_gives_no_box(income_page):
    assert span_boxes(income_page, "This sentence is not printed anywhere in the filing at all.") == []
    assert table_row_boxes(income_page, "Revenue from the Mars segment", ["1"]) == []


def test_render_page_png_at_scale():
    from PIL import Image

    png = render_page_png(PDF, 4, scale=1.0)
    image = Image.open(io.BytesIO(png))
    pdf = pdfium.PdfDocument(str(PDF))
    w, h = pdf[3].get_size()
    pdf.close()
    assert image.format == "PNG"
    assert abs(image.width - w) <= 1 and abs(image.height - h) <= 1
    assert render_page_png(PDF, 4, scale=1.0) is png   # cached: the question view and the image share it


def test_page_out_of_range_is_a_clear_error():
    with pytest.raises(ValueError, match="has 4 pages, no page 9"):
        PageText(PDF, 9)
    with pytest.raises(ValueError, match="no page 0"):
        render_page_png(PDF, 0)


@pytest.mark.parametrize("spans, expected", [
    ([], [Segment("abcdefghij")]),
    ([(2, 5, "evidence")], [Segment("ab"), Segment("cde", ("evidence",)), Segment("fghij")]),
    ([(2, 6, "evidence"), (4, 8, "cited")],
     [Segment("ab"), Segment("cd", ("evidence",)), Segment("ef", ("cited", "evidence")), Segment("gh", ("cited",)),
      Segment("ij")]),
    ([(-3, 2, "hit"), (8, 99, "hit")], [Segment("ab", ("hit",)), Segment("cdefgh"), Segment("ij", ("hit",))]),
    ([(5, 5, "hit")], [Segment("abcdefghij")]),
])
def test_text_segments(spans, expected):
    segments = text_segments("abcdefghij", spans)
    assert segments == expected
    assert "".join(s.text for s in segments) == "abcdefghij"


def test_line_span_finds_the_row_line_whitespace_insensitively():
    text = "Products\nTotal  net sales   394,328 365,817\nNet income 99,803"
    s, e = line_span(text, "Total net sales")
    assert text[s:e] == "Total  net sales   394,328 365,817"
    assert line_span(text, "Gross margin") is None


def test_box_css_is_percentages():
    assert Box(0.1, 0.25, 0.5, 0.02).css() == "left:10.000%;top:25.000%;width:50.000%;height:2.000%"
