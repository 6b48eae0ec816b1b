"""Generate the hostile inputs of finrag_pipeline_tests/hostile/ from real filings in this folder.

    python finrag_pipeline_tests/data/make_hostile_files.py OUT_DIR

Every file is derived from Apple's real filings (the FY2022 PDF excerpt and the FY2025 inline-XBRL 10-K),
so each one is a real filing with exactly one thing wrong. ``generate(out)`` returns
{file name: expected status}; sidecars (``<name>.yaml``) are written next to the files they belong to.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

DATA = Path(__file__).parent
PDF_EXCERPT = DATA / "apple_2022_excerpt.pdf"       # 4 real pages of Apple's FY2022 10-K
IXBRL_FULL = DATA / "aapl-10-k-2025-10-31.html"     # Apple's FY2025 10-K, inline XBRL
IXBRL_PAGES = 8                                     # pages kept in the iXBRL excerpt (cover + Item 1)


# ---------------------------------------------------------------------------------------------
# iXBRL


def ixbrl_excerpt(pages: int = IXBRL_PAGES) -> str:
    """The FY2025 iXBRL 10-K cut after ``pages`` page breaks; the ix:header (contexts, units, dei facts)
    sits at the top of the body, so it is kept whole. Still well-formed XML."""
    text = IXBRL_FULL.read_text(encoding="ascii")
    breaks = [m.start() for m in re.finditer(r"<hr style=\"page-break-after:always\"\s*/>", text)]
    if len(breaks) < pages:
        raise RuntimeError(f"{IXBRL_FULL.name}: only {len(breaks)} page breaks")
    cut = text.index(">", breaks[pages - 1]) + 1
    # close whatever is open at the cut: the body's top-level <div>s and the document
    head = text[:cut]
    opened = len(re.findall(r"<div\b", head)) - len(re.findall(r"</div>", head))
    return head + "</div>" * opened + "</body></html>\n"


def replace_once(text: str, old: str, new: str) -> str:
    if old not in text:
        raise RuntimeError(f"{old!r} not found in the excerpt")
    return text.replace(old, new, 1)


def trading_symbol(text: str, symbol: str) -> str:
    return re.sub(r'(name="dei:TradingSymbol"[^>]*>)AAPL(<)', rf"\g<1>{symbol}\g<2>", text, count=1)


def first_scale_to(text: str, value: str) -> str:
    return re.sub(r'(<ix:nonFraction\b[^>]*\bscale=")[^"]*(")', rf"\g<1>{value}\g<2>", text, count=1)


def period_end_to(text: str, iso_date: str) -> str:
    """The cover's "For the fiscal year ended September 27, 2025" (dei:DocumentPeriodEndDate) moved to
    ``iso_date`` of the same year: a copy that claims an earlier period end."""
    from datetime import date

    d = date.fromisoformat(iso_date)
    return replace_once(text, "September&#160;27</ix:nonNumeric>, 2025",
                        f"{d:%B}&#160;{d.day}</ix:nonNumeric>, {d.year}")


def zero_width_text(text: str) -> str:
    """Every letter and digit of the visible text (after the ix:header) followed by a zero-width space:
    renders the same, extracts as junk-laden text."""
    start = text.index("</ix:header>")
    def junk(m: re.Match) -> str:   # entity references stay whole
        return m.group(1) or m.group(2) + "&#8203;"

    body = re.sub(r">([^<]+)<", lambda m: ">" + re.sub(r"(&#?\w+;)|([A-Za-z0-9])", junk, m.group(1)) + "<",
                  text[start:])
    return text[:start] + body


def broken_xml(text: str) -> str:
    """An unclosed <span> inside the first table: lxml's XML parser stops, the HTML parser would not."""
    i = text.index("<table", text.index("</ix:header>"))
    return text[:i] + "<span>" + text[i:]


# ---------------------------------------------------------------------------------------------
# PDF


def scanned_pdf(out: Path, text_pages: int = 2, total_pages: int = 20) -> None:
    """``text_pages`` real text pages (the cover), then image-only pages: the excerpt's pages rendered to
    bitmaps and placed as images (what a scanner produces)."""
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(str(PDF_EXCERPT))
    pdf = pdfium.PdfDocument.new()
    pdf.import_pages(src, list(range(text_pages)))
    for i in range(total_pages - text_pages):
        page_src = src[i % len(src)]
        width, height = page_src.get_size()
        bitmap = page_src.render(scale=0.4, grayscale=True)
        page = pdf.new_page(width, height)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(bitmap)
        image.set_matrix(pdfium.PdfMatrix().scale(width, height))
        page.insert_obj(image)
        page.gen_content()
    pdf.save(str(out))
    pdf.close()
    src.close()


def excerpt_page_texts() -> list[str]:
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(str(PDF_EXCERPT))
    try:
        return [src[i].get_textpage().get_text_range() for i in range(len(src))]
    finally:
        src.close()


_PUA_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
1 beginbfrange
<20> <7E> <E020>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""


def text_pdf(out: Path, pages: list[str], *, to_unicode: bytes | None = None, info: dict[str, str] | None = None,
             note: str = "") -> None:
    """A plain PDF of ``pages`` (Helvetica, one text line per line), written by hand so that its font's
    ToUnicode map and its document info (ModDate, ...) can be chosen. ``note`` ends the last page."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def stream(data: bytes) -> bytes:
        return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"

    catalog = add(b"")  # filled in below
    pages_obj = add(b"")
    cmap = b" /ToUnicode %d 0 R" % add(stream(to_unicode)) if to_unicode else b""
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding" + cmap + b" >>")
    kids = []
    for n, text in enumerate(pages, 1):
        lines = [ln.encode("cp1252", "replace")[:110] for ln in text.splitlines() if ln.strip()][:60]  # WinAnsi
        if n == len(pages) and note:
            lines.append(note.encode("ascii"))
        ops = [b"BT /F1 9 Tf 40 760 Td 11 TL"]
        for ln in lines:
            ln = ln.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            ops.append(b"(" + ln + b") Tj T*")
        ops.append(b"ET")
        content = add(stream(b"\n".join(ops)))
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R"
                        b" >> >> /Contents %d 0 R >>" % (pages_obj, font, content)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                              + b"] /Count %d >>" % len(kids))
    info_ref = b""
    if info:
        entries = b" ".join(b"/%s (%s)" % (k.encode(), v.encode()) for k, v in info.items())
        info_ref = b" /Info %d 0 R" % add(b"<< " + entries + b" >>")
    data = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    data += (b"trailer\n<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog) + info_ref
             + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    out.write_bytes(bytes(data))


def garbled_pdf(out: Path) -> None:
    """The excerpt's real text, drawn with a font whose ToUnicode map sends every character to the
    private-use area: it renders fine and extracts as junk (a common broken-producer PDF)."""
    text_pdf(out, excerpt_page_texts(), to_unicode=_PUA_CMAP)


def dated_pdf(out: Path, mod_date: str, note: str) -> None:
    """The excerpt's real text re-set as a plain PDF whose own ModDate is ``mod_date`` (YYYYMMDD); ``note``
    makes two versions differ in bytes."""
    text_pdf(out, excerpt_page_texts(), info={"ModDate": f"D:{mod_date}120000Z", "Title": "Apple 10-K"},
             note=note)


def big_table_html(rows: int = 50_000) -> str:
    """The iXBRL excerpt with one more page holding a ``rows``-row numeric table (a data dump that slipped
    into a 10-K): the limits benchmark and the partial-ingest test."""
    body = "".join(f"<tr><td>Line item {i}</td><td>{i * 7 % 100_000:,}</td><td>{i * 3 % 100_000:,}</td></tr>"
                   for i in range(rows))
    table = ('<hr style="page-break-after:always"/><div><p style="font-weight:700">Supplemental schedule of '
             'balances</p><p>(In millions)</p><table><tr><td></td><td>2025</td><td>2024</td></tr>'
             + body + "</table></div>")
    excerpt = ixbrl_excerpt()
    i = excerpt.rindex("</body>")
    return excerpt[:i] + table + excerpt[i:]


# ---------------------------------------------------------------------------------------------


def generate(out: str | Path) -> dict[str, str]:
    """Write every hostile file into ``out``; returns {file name: expected status}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    expected: dict[str, str] = {}
    excerpt = ixbrl_excerpt()

    # path escape through a sidecar filing_id
    (out / "escape.htm").write_text(excerpt, encoding="ascii")
    (out / "escape.htm.yaml").write_text('filing_id: "../../outside/NAME"\n')
    expected["escape.htm"] = "invalid_id"
    # poison pills: a ticker that normalises to nothing (falls back to the company name), and no name at all
    (out / "ticker_dashes.htm").write_text(trading_symbol(excerpt, "---"), encoding="ascii")
    expected["ticker_dashes.htm"] = "registered"
    no_name = trading_symbol(excerpt, "---")
    no_name = re.sub(r'(name="dei:EntityRegistrantName"[^>]*>)[^<]*(<)', r"\g<1>...\g<2>", no_name, count=1)
    (out / "no_name.htm").write_text(no_name, encoding="ascii")
    expected["no_name.htm"] = "invalid_id"
    # a sidecar that is not what it should be
    shutil.copy(PDF_EXCERPT, out / "bad_sidecar.pdf")
    (out / "bad_sidecar.pdf.yaml").write_text("company: Apple Inc.\nfiscal_year: 2022\nrm_rf: true\n")
    expected["bad_sidecar.pdf"] = "bad_sidecar"
    # broken inline XBRL
    (out / "broken_xml.htm").write_text(broken_xml(excerpt), encoding="ascii")
    expected["broken_xml.htm"] = "ixbrl_error"
    (out / "bad_scale.htm").write_text(first_scale_to(excerpt, "abc"), encoding="ascii")
    expected["bad_scale.htm"] = "ixbrl_error"
    # text layers
    scanned_pdf(out / "scanned.pdf")
    expected["scanned.pdf"] = "needs_ocr"
    garbled_pdf(out / "garbled.pdf")
    expected["garbled.pdf"] = "garbled_text"
    (out / "zero_width.htm").write_text(zero_width_text(excerpt), encoding="ascii")
    expected["zero_width.htm"] = "garbled_text"
    # the classics
    (out / "empty.pdf").write_bytes(b"")
    expected["empty.pdf"] = "empty"
    (out / "truncated.pdf").write_bytes(PDF_EXCERPT.read_bytes()[:2000])
    expected["truncated.pdf"] = "corrupt"
    return expected


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile_files")
    for name, status in generate(target).items():
        print(f"{status:14} {target / name}")
