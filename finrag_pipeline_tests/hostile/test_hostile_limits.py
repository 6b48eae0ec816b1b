"""Limits from assets_config/ingest.yaml (limits:): too_large before any table is read, and a table over
max_rows_per_table cut with a note that the ingest is partial."""

from __future__ import annotations

import shutil

import pytest
import yaml
from _hostile import PDF_EXCERPT, make_hostile_files

from finrag_pipeline.core.catalog import register_file
from finrag_pipeline.core.ingest.limits import IngestLimits, load_ingest_limits
from finrag_pipeline.core.ingest.parse import parse_filing
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, FinragPaths
from finrag_pipeline.core.warehouse import Warehouse


@pytest.fixture
def limits(tmp_path, monkeypatch):
    """Set limits in a copy of assets_config (FINRAG_CONFIG_DIR)."""
    def apply(**values):
        folder = tmp_path / f"config-{len(list(tmp_path.glob('config-*')))}"
        shutil.copytree(ASSETS_CONFIG_DIR, folder)
        data = yaml.safe_load((folder / "ingest.yaml").read_text())
        data["limits"] = {**data["limits"], **values}
        (folder / "ingest.yaml").write_text(yaml.safe_dump(data))
        monkeypatch.setenv("FINRAG_CONFIG_DIR", str(folder))
        return load_ingest_limits()
    return apply


def test_limits_are_validated():
    assert load_ingest_limits() == IngestLimits.model_validate(
        yaml.safe_load((ASSETS_CONFIG_DIR / "ingest.yaml").read_text())["limits"])
    with pytest.raises(ValueError):
        IngestLimits(max_pages=0)
    with pytest.raises(ValueError):
        IngestLimits(max_pagez=3)


@pytest.mark.parametrize("setting, value, reason", [
    ("max_pages", 3, "4 pages, over limits.max_pages 3"),
    ("max_bytes", 10_000, "75,357 bytes, over limits.max_bytes 10,000"),
])
def test_too_large_is_a_status_with_the_limit_that_was_hit(tmp_path, limits, setting, value, reason):
    limits(**{setting: value})
    paths = FinragPaths.from_env(str(tmp_path / "home")).ensure()
    wh = Warehouse(paths.warehouse)
    shutil.copy(PDF_EXCERPT, tmp_path / "apple.pdf")
    reg = register_file(tmp_path / "apple.pdf", paths, wh)
    assert reg.status == "too_large" and reason in reg.message
    assert not any(paths.filings_store.iterdir())


def test_a_huge_table_is_cut_and_the_ingest_says_it_is_partial(tmp_path, limits):
    limits(max_rows_per_table=500)
    path = tmp_path / "big.htm"
    path.write_text(make_hostile_files.big_table_html(rows=3_000), encoding="ascii")
    parsed = parse_filing(path)
    big = [r for r in parsed.table_rows if (r.table_title or "").startswith("Supplemental schedule")]
    assert len(big) == 500
    assert [r.row_label for r in big[:2]] == ["Line item 0", "Line item 1"]
    notes = [n for n in parsed.notes if n.startswith("partial:")]
    assert len(notes) == 1 and "3,000 rows; kept the first 500" in notes[0]
    # the filing's own tables are untouched by the cap
    plain = tmp_path / "plain.htm"
    plain.write_text(make_hostile_files.ixbrl_excerpt(), encoding="ascii")
    assert len(parsed.table_rows) - len(big) == len(parse_filing(plain).table_rows)


def test_a_mostly_text_pdf_with_a_scanned_page_is_parsed_with_a_partial_note(tmp_path):
    path = tmp_path / "one_scan.pdf"
    make_hostile_files.scanned_pdf(path, text_pages=4, total_pages=5)
    parsed = parse_filing(path)
    assert parsed.meta.n_pages == 5 and parsed.pages[4].char_count < 25
    assert [n for n in parsed.notes if n.startswith("partial:")] == [
        "partial: 1 of 5 pages have no text layer (pages 5); they are not searchable until the PDF is OCRed"]
    assert not [n for n in parse_filing(PDF_EXCERPT).notes if n.startswith("partial:")]
