"""Character counts behind the garbled_text / needs_ocr checks (core/ingest/text_quality.py), hand-counted."""

import pytest

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.text_quality import check_text_layer, junk_chars, visible_chars


@pytest.mark.parametrize(("text", "visible", "junk"), [
    ("", 0, 0),
    (" \n\t\u00a0\u3000\u2028\x1c", 0, 0),               # Unicode whitespace (NBSP, ideographic, line sep, FS)
    ("Net sales $394,328", 16, 0),
    ("Net\u200bsales", 8, 1),                             # zero-width space: format (Cf)
    ("\ue000\ue001ab", 2, 2),                             # private use (Co)
    ("a\ufffdb\x00", 2, 2),                               # replacement character; NUL control (Cc)
    ("\u0378x", 1, 1),                                    # unassigned (Cn)
    ("€ 1,2 ½", 5, 0),
])
def test_visible_and_junk_characters(text, visible, junk):
    assert (visible_chars(text), junk_chars(text)) == (visible, junk)


def test_mostly_private_use_text_is_garbled_and_empty_pages_need_ocr():
    with pytest.raises(IngestError) as garbled:
        check_text_layer(["\ue000" * 40 + "x" * 60])    # 40% junk > 30%
    assert garbled.value.status == "garbled_text"
    check_text_layer(["\ue000" * 20 + "x" * 80])       # 20%: readable
    with pytest.raises(IngestError) as scans:
        check_text_layer(["x" * 30, "", "x" * 10])      # 2 of 3 pages under 25 visible characters
    assert scans.value.status == "needs_ocr"
    check_text_layer(["x" * 30, "x" * 25, ""])
