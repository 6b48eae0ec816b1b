"""Chunking: sentence splitting, windows, table-row text, ids, offsets, parents, configs."""

from __future__ import annotations

import importlib.util
from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from finrag_pipeline.core.chunking import (
    ChunkingConfig,
    chunk_filing,
    chunking_variants,
    filing_text,
    load_chunking_config,
    sentences,
    table_row_text,
)
from finrag_pipeline.core.chunking.text import short_company, tidy_title
from finrag_pipeline.core.models import FilingMeta, Page, TableCell, TableRow

FID = "AAPL-2022-10K"
META = FilingMeta(filing_id=FID, content_sha256="0" * 64, source_path="x", original_name="x.html",
                  source_format="html", company="Apple Inc.", ticker="AAPL", cik="320193", form_type="10-K",
                  fiscal_year=2022, period_end_date=date(2022, 9, 24))
MDNA = "Management's Discussion and Analysis of Financial Condition and Results of Operations"


def _md_and_a(n: int, start: int = 0) -> str:
    return " ".join(f"In quarter {i} net sales in the U.S. rose to ${i}.{i} billion, driven by iPhone."
                    for i in range(start, start + n))


def make_pages() -> list[Page]:
    return [
        Page(FID, 1, "Apple Inc.\nFORM 10-K\nFor the fiscal year ended September 24, 2022", None, None),
        Page(FID, 2, "Item 1A. Risk Factors\n\nThe Company's business can be affected by Inc. and "
                     "No. 3 matters. Global markets are volatile.", "Item 1A", "Risk Factors"),
        Page(FID, 3, "Item 7. " + MDNA + "\n\n" + _md_and_a(20), "Item 7", MDNA),
        Page(FID, 4, _md_and_a(15, start=20) + "\n\nTotal net sales were $394.3 billion.", "Item 7", MDNA),
    ]


def make_rows() -> list[TableRow]:
    headers = ["", "2022", "2021", "2020"]

    def row(i: int, label: str, values: list[str]) -> TableRow:
        cells = [TableCell(h, f"FY{h}", v, float(v.replace(",", ""))) for h, v in zip(headers[1:], values, strict=True)]
        return TableRow(FID, f"{FID}:p4:t1", i, 4, "Item 7", "CONSOLIDATED STATEMENTS OF OPERATIONS",
                        "USD millions", "(In millions)", label, headers, cells)

    return [row(0, "Total net sales", ["394,328", "365,817", "274,515"]),
            row(1, "Total cost of sales", ["223,546", "212,981", "169,559"])]


def chunk(config: ChunkingConfig | None = None):
    return chunk_filing(META, make_pages(), make_rows(), config or ChunkingConfig(chunk_size=400, overlap=100))


# ---- sentence splitter -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Apple Inc. reported growth. Sales rose.", ["Apple Inc. reported growth.", "Sales rose."]),
    ("Sales in the U.S. rose 5%. Europe fell.", ["Sales in the U.S. rose 5%.", "Europe fell."]),
    ("Revenue was $4.2 billion. Costs were $3.1 billion.", ["Revenue was $4.2 billion.", "Costs were $3.1 billion."]),
    ("See Note No. 3 for details. Next.", ["See Note No. 3 for details.", "Next."]),
    ("Refer to Item 7. Management's discussion follows.", ["Refer to Item 7. Management's discussion follows."]),
    ("Margin was 43.3% in 2022. It was 41.8% in 2021.", ["Margin was 43.3% in 2022.", "It was 41.8% in 2021."]),
    ("Approx. 5% of sales vs. 4% before. Done.", ["Approx. 5% of sales vs. 4% before.", "Done."]),
    ("J. Smith is CEO. He joined in 2011.", ["J. Smith is CEO.", "He joined in 2011."]),
    ("Is it material? Yes! It is.", ["Is it material?", "Yes!", "It is."]),
    ("He said \"growth slowed.\" Then margins fell.", ["He said \"growth slowed.\"", "Then margins fell."]),
    ("First paragraph without period\n\nSecond one.", ["First paragraph without period", "Second one."]),
    ("A line that wraps\nmid sentence. Next one.", ["A line that wraps\nmid sentence.", "Next one."]),
    ("Acme Corp. and Beta Co. merged. Shares rose.", ["Acme Corp. and Beta Co. merged.", "Shares rose."]),
    ("", []),
])
def test_sentence_splitter(text, expected):
    assert sentences(text) == expected


# ---- table rows ------------------------------------------------------------------------------

def test_table_row_text_exact():
    assert table_row_text(META, make_rows()[0]) == (
        "Apple 10-K FY2022 | Consolidated Statements of Operations | Total net sales | "
        "2022: 394,328 | 2021: 365,817 | 2020: 274,515 | USD millions")


def test_table_row_text_falls_back_to_period_and_unit_text():
    row = make_rows()[0]
    row.cells = [TableCell("", "FY2022", "394,328", 394328.0), TableCell("2021", None, "", None)]
    row.unit = None
    assert table_row_text(META, row).endswith("Total net sales | FY2022: 394,328 | (In millions)")


@pytest.mark.parametrize(("name", "short"), [("Apple Inc.", "Apple"), ("Microsoft Corporation", "Microsoft"),
                                             ("3M Company", "3M Company"), ("Acme Holdings, Inc.", "Acme Holdings")])
def test_short_company(name, short):
    assert short_company(name) == short


def test_tidy_title():
    assert tidy_title("CONSOLIDATED  STATEMENTS OF\nCASH FLOWS") == "Consolidated Statements of Cash Flows"
    assert tidy_title("Segment Information") == "Segment Information"
    assert tidy_title("  ") is None


# ---- chunk_filing --------------------------------------------------------------------------------

def test_ids_stable_across_runs():
    first, second = chunk(), chunk()
    assert [(c.chunk_id, c.text, c.position) for c in first] == [(c.chunk_id, c.text, c.position) for c in second]
    assert len({c.chunk_id for c in first}) == len(first)


def test_table_row_ids_shared_across_variants():
    small = {c.chunk_id for c in chunk(load_chunking_config("small")) if c.chunk_type == "table_row"}
    large = {c.chunk_id for c in chunk(load_chunking_config("large")) if c.chunk_type == "table_row"}
    assert small == large and len(small) == 2


def test_prose_offsets_slice_filing_text():
    text = filing_text(make_pages())
    prose = [c for c in chunk() if c.chunk_type == "prose"]
    assert len(prose) > 3
    for c in prose:
        assert c.text[c.metadata["header_chars"]:] == text[c.char_start:c.char_end]
        assert c.page_start <= c.page_end


def _page_of(offset: int, pages: list[Page]) -> int:
    """Independent page lookup: walk the pages joined by a blank line."""
    start = 0
    for page in pages:
        if offset < start + len(page.text) + 2:
            return page.page_number
        start += len(page.text) + 2
    raise AssertionError(offset)


def test_prose_pages_follow_offsets():
    pages = make_pages()
    prose = [c for c in chunk() if c.chunk_type == "prose"]
    assert any(c.page_start == 3 and c.page_end == 4 for c in prose)  # one window spans the page break
    for c in prose:
        assert (c.page_start, c.page_end) == (_page_of(c.char_start, pages), _page_of(c.char_end - 1, pages))


def test_context_header():
    prose = next(c for c in chunk() if c.chunk_type == "prose" and c.section == "Item 7")
    assert prose.text.startswith(f"Apple Inc. (AAPL) 10-K FY2022 | Item 7 {MDNA} | ")


def test_windows_respect_size_and_overlap():
    config = ChunkingConfig(chunk_size=400, overlap=100, min_chunk_chars=0)
    text = filing_text(make_pages())
    prose = [c for c in chunk(config) if c.chunk_type == "prose" and c.section == "Item 7"]
    for prev, nxt in zip(prose, prose[1:], strict=False):
        assert 0 < prev.char_end - nxt.char_start <= config.overlap  # short sentences: some overlap
        assert nxt.char_start > prev.char_start
    assert all(c.char_end - c.char_start <= config.chunk_size for c in prose)
    # Every sentence of the section lies wholly inside some window.
    covered = [(c.char_start, c.char_end) for c in prose]
    for sentence in sentences(text[text.index("Item 7."):]):
        at = text.index(sentence)
        assert any(a <= at and at + len(sentence) <= b for a, b in covered), sentence


def test_no_overlap_variant():
    prose = [c for c in chunk(ChunkingConfig(chunk_size=400, overlap=0)) if c.chunk_type == "prose"]
    for prev, nxt in zip(prose, prose[1:], strict=False):
        assert nxt.char_start >= prev.char_end


def test_long_sentence_is_cut_at_whitespace():
    pages = [Page(FID, 1, "word " * 300 + "end.", "Item 7", MDNA)]
    prose = [c for c in chunk_filing(META, pages, [], ChunkingConfig(chunk_size=200, overlap=20))
             if c.chunk_type == "prose"]
    assert len(prose) >= 7
    assert all(c.char_end - c.char_start <= 200 for c in prose[:-1])


def test_token_unit():
    config = ChunkingConfig(chunk_size=60, overlap=10, unit="tokens")
    prose = [c for c in chunk(config) if c.chunk_type == "prose" and c.section == "Item 7"]
    assert len(prose) > 5
    assert all(len(c.text[c.metadata["header_chars"]:].split()) <= 60 for c in prose)


def test_parents_and_leaves():
    chunks = chunk()
    by_id = {c.chunk_id: c for c in chunks}
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.is_leaf == (c.chunk_type in ("prose", "table_row"))
        if c.chunk_type == "prose":
            assert by_id[c.parent_id].chunk_type == "section"
            assert by_id[c.parent_id].section == c.section
        if c.chunk_type == "table_row":
            assert by_id[c.parent_id].chunk_type == "table"
    table = next(c for c in chunks if c.chunk_type == "table")
    assert "Total net sales | 394,328 | 365,817 | 274,515" in table.text
    assert "| 2022 | 2021 | 2020" in table.text
    assert by_id[table.parent_id].section == "Item 7"
    sections = [c for c in chunks if c.chunk_type == "section"]
    assert [s.section for s in sections] == [None, "Item 1A", "Item 7"]
    assert sections[2].page_start == 3 and sections[2].page_end == 4


def test_reading_order():
    kinds = [(c.page_start, c.chunk_type) for c in chunk()]
    assert kinds.index((4, "table")) > max(i for i, k in enumerate(kinds) if k[1] == "prose" and k[0] <= 4)


def test_switches():
    no_rows = chunk(ChunkingConfig(chunk_size=400, overlap=100, include_table_rows=False))
    assert not {c.chunk_type for c in no_rows} & {"table", "table_row"}
    no_parents = chunk(ChunkingConfig(chunk_size=400, overlap=100, include_parents=False))
    assert all(c.is_leaf and c.parent_id is None for c in no_parents)
    bare = chunk(ChunkingConfig(chunk_size=400, overlap=100, context_header=False))
    prose = next(c for c in bare if c.chunk_type == "prose")
    assert prose.text == filing_text(make_pages())[prose.char_start:prose.char_end]


def test_empty_filing():
    assert chunk_filing(META, [], [], ChunkingConfig()) == []


# ---- configuration ---------------------------------------------------------------------------

def test_yaml_variants():
    variants = chunking_variants()
    assert {"default", "small", "large"} <= set(variants)
    assert variants["small"].chunk_size == 500 and variants["large"].chunk_size == 2000
    assert variants["small"].name == "small"
    assert load_chunking_config().name == "default"
    assert load_chunking_config("small", overlap=10).overlap == 10
    assert variants["small"].fingerprint() != variants["large"].fingerprint()


def test_config_validation(tmp_path: Path):
    with pytest.raises(ValidationError):
        ChunkingConfig(chunk_size=100, overlap=100)
    with pytest.raises(ValidationError):
        load_chunking_config("small", overlap=600)
    with pytest.raises(KeyError):
        load_chunking_config("nope")
    custom = tmp_path / "ingest.yaml"
    custom.write_text("chunking:\n  base: {chunk_size: 300}\n  variants:\n    tiny: {overlap: 30}\n")
    assert load_chunking_config("tiny", path=custom).chunk_size == 300


# ---- one real filing (when the ingest stage is available) --------------------------------------

REAL_FILING = Path(__file__).parent / "data" / "aapl-10-k-2025-10-31.html"


@pytest.mark.skipif(importlib.util.find_spec("finrag_pipeline.core.ingest.parse") is None,
                    reason="ingest parse_filing not available yet")
def test_real_filing():
    from finrag_pipeline.core.ingest.parse import parse_filing

    parsed = parse_filing(REAL_FILING)
    chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
    text = filing_text(parsed.pages)
    assert len(chunks) > 50
    assert [c.chunk_id for c in chunks] == [c.chunk_id for c in
                                            chunk_filing(parsed.meta, parsed.pages, parsed.table_rows)]
    for c in chunks:
        if c.chunk_type == "prose":
            assert c.text[c.metadata["header_chars"]:] == text[c.char_start:c.char_end]
