"""Fast checks of the explorer's pieces without indexes: the snapshot reader (read-only, reopened on
publish), an HTML filing's page with marked spans, and a PDF page's enclosed prose box."""

from datetime import date
from pathlib import Path

import pytest

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.models import FilingMeta, Page, TableCell, TableRow
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse, publish_snapshot, rows_of
from finrag_pipeline.web import queries as q
from finrag_pipeline.web.explorer import Explorer

PDF = Path(__file__).parent / "data" / "apple_2022_excerpt.pdf"
PROSE = ("Revenue grew because of strong demand for the new widgets. " * 3).strip()
HOSTILE = "Risk <script>alert(1)</script> & more text about suppliers and currency exposure in the year."


def _html_home(tmp_path: Path) -> tuple[FinragPaths, list]:
    paths = FinragPaths.from_env(tmp_path).ensure()
    wh = Warehouse(paths.warehouse)
    meta = FilingMeta("ACME-2024-10K", "f" * 64, str(tmp_path / "acme.html"), "acme.html", "html", "Acme Corp",
                      "ACME", None, "10-K", 2024, date(2024, 12, 31), n_pages=2)
    pages = [Page(meta.filing_id, 1, "Item 7. Management's Discussion\n" + PROSE, "Item 7", "MD&A"),
             Page(meta.filing_id, 2, "Item 8. Financial Statements\nTotal revenue 1,234 1,100\n" + HOSTILE,
                  "Item 8", "Financial Statements", has_tables=True)]
    row = TableRow(meta.filing_id, f"{meta.filing_id}:p2:t1", 0, 2, "Item 8", "Statements of Operations",
                   "USD millions", None, "Total revenue", ["", "2024", "2023"],
                   [TableCell("2024", "FY2024", "1,234", 1234.0), TableCell("2023", "FY2023", "1,100", 1100.0)])
    chunks = chunk_filing(meta, pages, [row])
    wh.replace_rows("core.filings", [meta.to_row()], where={"filing_id": meta.filing_id})
    wh.replace_rows("core.pages", rows_of(pages), where={"filing_id": meta.filing_id})
    wh.replace_rows("core.table_rows", rows_of([row]), where={"filing_id": meta.filing_id})
    wh.replace_rows("core.chunks", rows_of(chunks), where={"filing_id": meta.filing_id})
    publish_snapshot(wh, paths.warehouse_snapshot)
    return paths, chunks


def test_html_page_marks_the_prose_window_and_the_table_row_line(tmp_path):
    paths, chunks = _html_home(tmp_path)
    prose = next(c for c in chunks if c.chunk_type == "prose" and c.page_start == 1)
    row = next(c for c in chunks if c.chunk_type == "table_row")
    explorer = Explorer(paths)
    p1 = explorer.page_view("ACME-2024-10K", 1, [("evidence", prose.chunk_id, "evidence")])
    assert p1.source_format == "html" and p1.image_url is None
    marked = "".join(s.text for s in p1.segments if "evidence" in s.marks)
    page1 = "Item 7. Management's Discussion\n" + PROSE
    assert marked == page1[prose.char_start:prose.char_end]   # exactly the window's span (page 1 starts at 0)
    assert PROSE in marked
    p2 = explorer.page_view("ACME-2024-10K", 2, [("cited", row.chunk_id, "cited"), ("hit", None, "page only")])
    cited = [s.text for s in p2.segments if s.marks == ("cited",)]
    assert cited == ["Total revenue 1,234 1,100"]
    assert any("page-level" in n for n in p2.notes)
    assert "".join(s.text for s in p2.segments).endswith(HOSTILE)   # raw text: the template escapes it


def test_snapshot_is_read_only_and_follows_a_new_publish(tmp_path):
    paths, _ = _html_home(tmp_path)
    snap = q.Snapshot(paths.warehouse_snapshot)
    assert snap.refresh() is True and snap.refresh() is False
    with pytest.raises(Exception, match="read-only"):
        snap.df("CREATE TABLE core.x (a INT)")
    # the live warehouse stays writable while the app holds the snapshot open
    wh = Warehouse(paths.warehouse, retry_seconds=2)
    wh.replace_rows("core.corpus_versions", [{"corpus_state": "s2", "filing_ids": "[]", "n_filings": 1}],
                    where={"corpus_state": "s2"})
    assert q.corpus_state(snap).corpus_state == "empty"
    publish_snapshot(wh, paths.warehouse_snapshot)
    assert snap.refresh() is True
    assert q.corpus_state(snap).corpus_state == "s2"


def test_missing_snapshot_is_a_clear_error(tmp_path):
    snap = q.Snapshot(tmp_path / "warehouse_read.duckdb")
    with pytest.raises(q.SnapshotMissing, match="no analysts' snapshot"):
        snap.df("SELECT 1")


def test_pdf_prose_window_is_one_enclosing_box():
    import pypdfium2 as pdfium

    from finrag_pipeline.web.page_image import chunk_boxes

    pdf = pdfium.PdfDocument(str(PDF))
    raw = pdf[1].get_textpage().get_text_range()
    pdf.close()
    at = raw.find("global and regional economic conditions")
    boxes = chunk_boxes(PDF, 2, None, raw[at: at + 400])
    assert len(boxes) == 1 and boxes[0].h > 0.03          # several lines in one outline


def test_cli_serve_starts_uvicorn_on_the_given_port(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from finrag_pipeline import cli
    from finrag_pipeline.web import app

    calls = []
    monkeypatch.setattr(app, "serve", lambda home, host, port: calls.append((home, host, port)))
    result = CliRunner().invoke(cli.main, ["--home", str(tmp_path), "serve", "--port", "9123"])
    assert result.exit_code == 0, result.output
    assert calls == [(str(tmp_path.resolve()), "127.0.0.1", 9123)]
    assert "http://127.0.0.1:9123" in result.output
    default = CliRunner().invoke(cli.main, ["serve", "--help"])
    assert "8765" in default.output


def test_filing_page_route_marks_the_requested_chunk_and_escapes_the_text(tmp_path):
    from starlette.testclient import TestClient

    from finrag_pipeline.web.app import create_app

    paths, chunks = _html_home(tmp_path)
    row = next(c for c in chunks if c.chunk_type == "table_row")
    with TestClient(create_app(str(paths.home))) as client:
        r = client.get(f"/filing/ACME-2024-10K/2?cited={row.chunk_id}")
        assert r.status_code == 200
        assert '<mark class="m-cited ">Total revenue 1,234 1,100</mark>' in r.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text and "<script>alert(1)" not in r.text
        assert 'id="prev-page"' in r.text and 'id="next-page"' not in r.text    # page 2 of 2
        assert "has no page 7" in client.get("/filing/ACME-2024-10K/7").text


def test_pages_over_results_without_marts_say_the_marts_must_be_built(tmp_path):
    """The explorer shows the marts' means and intervals only: a snapshot with evaluation rows but no
    marts is a 503 naming the remedy on every page that summarises, never numbers of its own."""
    from _synthetic_warehouse import build_synthetic_warehouse
    from starlette.testclient import TestClient

    from finrag_pipeline.web.app import create_app

    paths = FinragPaths.from_env(tmp_path).ensure()
    publish_snapshot(build_synthetic_warehouse(paths.warehouse), paths.warehouse_snapshot)
    with TestClient(create_app(str(paths.home))) as client:
        for url in ("/leaderboard", "/leaderboard?question_type=factual", "/failures"):
            r = client.get(url)
            assert r.status_code == 503, url
            assert "marts" in r.text and "finrag report" in r.text, url
