"""Ingest as a pipeline (core/ingest_pipeline.py) and the embedding inputs (core/chunking/embedding_inputs.py):
the pipelined path writes what the sequential one writes, re-ingest is idempotent and served by the embedding
cache, one cache serves every chunking variant, boilerplate is found by repetition on a real filing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.chunking.config import load_chunking_config
from finrag_pipeline.core.chunking.embedding_inputs import (
    EmbeddingInputConfig,
    boilerplate_lines,
    embedding_inputs,
    line_key,
    short_row_text,
    strip_lines,
)
from finrag_pipeline.core.indexing.embedder import token_length_batches
from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
from finrag_pipeline.core.ingest.parse import parse_filing
from finrag_pipeline.core.ingest_pipeline import (
    ParseAhead,
    PipelineConfig,
    WorkAhead,
    ingest_files,
    parse_filing_ahead,
    use_worker,
)
from finrag_pipeline.core.models import Chunk, Page, TableCell, TableRow
from finrag_pipeline.core.warehouse import rows_of

DATA = Path(__file__).parent / "data"
APPLE = DATA / "apple_2022_excerpt.pdf"     # 4 pages of Apple's FY2022 10-K: the cover and 3 body pages
WALMART = DATA / "walmart_2021_excerpt.pdf"


# ---- boilerplate: repetition across pages -----------------------------------------------------------------

def _page(n: int, text: str) -> Page:
    return Page(filing_id="X-2022-10K", page_number=n, text=text, section=None, section_title=None)


def test_boilerplate_is_what_repeats_at_page_edges_digits_masked():
    # footer on 5 of 6 pages (page numbers differ), a header on 2 of 6, a body line repeated on all 6 but
    # in the middle of each page (never an edge line)
    words = ["revenue", "margins", "leases", "taxes", "debt", "cash"]
    pages = [_page(n, "\n".join([
        "Acme Corp. Annual Report" if n in (1, 2) else f"Section on {words[n - 1]}",
        f"Body sentence one about {words[n - 1]}.",
        "The same middle sentence.",
        f"Body sentence two about {words[n - 1]}.",
        f"Last body line {n}.",
        f"Acme Corp. | 2022 Form 10-K | {n + 20}" if n != 6 else "no footer here"])) for n in range(1, 7)]
    keys = boilerplate_lines(pages, min_share=0.5, min_pages=4, edge_lines=2)
    # "Last body line N." is an edge line on every page too: repetition (digits masked) is the only test
    assert keys == {"acme corp. | # form #-k | #", "last body line #."}
    assert line_key("Acme  Corp. | 2022 Form 10-K | 7 ") == "acme corp. | # form #-k | #"
    assert boilerplate_lines(pages[:3], min_pages=4) == frozenset()  # on fewer than min_pages pages


def test_strip_lines_keeps_every_other_line_in_order():
    text = "Header | Item 7 | first line\nAcme Corp. | 2022 Form 10-K | 23\nsecond line\n\nthird"
    assert strip_lines(text, frozenset({"acme corp. | # form #-k | #"})) == \
        "Header | Item 7 | first line\nsecond line\n\nthird"
    assert strip_lines(text, frozenset()) == text


@pytest.fixture(scope="module")
def apple():
    return parse_filing(APPLE)


def test_boilerplate_of_a_real_filing_is_its_page_footer(apple):
    # The excerpt: the cover, then three body pages that end with the footer "Apple Inc. | 2022 Form 10-K |
    # <printed page>" (checked in the PDF: printed pages 5, 28 and 29); nothing else repeats at the page edges.
    footers = [[ln for ln in p.text.splitlines() if ln.strip()][-1].strip() for p in apple.pages]
    assert footers[1:] == [f"Apple Inc. | 2022 Form 10-K | {n}" for n in (5, 28, 29)]
    assert not footers[0].startswith("Apple Inc. |")
    keys = boilerplate_lines(apple.pages)
    assert keys == {"apple inc. | # form #-k | #"}
    chunks = chunk_filing(apple.meta, apple.pages, apple.table_rows, load_chunking_config())
    leaves = [c for c in chunks if c.is_leaf]
    inputs = embedding_inputs(leaves, apple.pages, apple.table_rows, EmbeddingInputConfig(boilerplate=True))
    prose = [(c, t) for c, t in zip(leaves, inputs, strict=True) if c.chunk_type == "prose"]
    # the footer as a line of its own inside a window is left out; the window's first line (context header +
    # the window's first words) is kept whole, also when those words are the footer
    inside = [(c, t) for c, t in prose if "\nApple Inc. | 2022 Form 10-K |" in c.text]
    assert len(inside) >= 2, "the excerpt's prose windows carry the footer"
    for chunk, text in inside:
        assert "\nApple Inc. | 2022 Form 10-K |" not in text
        header = chunk.text[:chunk.metadata["header_chars"]]
        assert header.startswith("Apple Inc. (AAPL) 10-K FY2022 | ") and text.startswith(header)  # header kept
        assert text.replace("\n", "") in chunk.text.replace("\n", "") and len(text) < len(chunk.text)
    glued = [(c, t) for c, t in prose if line_key(c.text[c.metadata["header_chars"]:]) == next(iter(keys))]
    assert len(glued) == 1 and glued[0][1] == glued[0][0].text  # "... | Apple Inc. | 2022 Form 10-K | 28"
    assert all(t == c.text for c, t in prose if "\nApple Inc. | 2022 Form 10-K |" not in c.text)
    # table rows and the stored text are untouched
    assert all(t == c.text for c, t in zip(leaves, inputs, strict=True) if c.chunk_type == "table_row")


# ---- table rows: shorter input --------------------------------------------------------------------------

def _row(cells: list[TableCell]) -> TableRow:
    return TableRow(filing_id="AAPL-2022-10K", table_id="AAPL-2022-10K:p33:t0", row_index=2, page_number=33,
                    section="Item 8", table_title="CONSOLIDATED STATEMENTS OF OPERATIONS", unit="USD millions",
                    unit_text="(In millions)", row_label="Total net sales", cells=cells,
                    row_path=["Net sales", "Total net sales"])


def _row_chunk(text: str = "full") -> Chunk:
    return Chunk(chunk_id="c1", filing_id="AAPL-2022-10K", ticker="AAPL", company="Apple Inc.", fiscal_year=2022,
                 form_type="10-K", section="Item 8", page_start=33, page_end=33, chunk_type="table_row", text=text,
                 table_id="AAPL-2022-10K:p33:t0", metadata={"row_index": 2})


def test_short_row_text_uses_the_shorter_of_period_and_header():
    row = _row([TableCell("September 24, 2022", "FY2022", "394,328", 394328.0),
                TableCell("2021", "FY2021", "365,817", 365817.0),
                TableCell("", None, "", None)])
    assert short_row_text(_row_chunk(), row) == (
        "Apple 10-K FY2022 | Consolidated Statements of Operations | Net sales > Total net sales | "
        "FY2022: 394,328 | 2021: 365,817")
    [text] = embedding_inputs([_row_chunk()], [], [row], EmbeddingInputConfig(table_rows="short"))
    assert text == short_row_text(_row_chunk(), row)
    # a row the table rows do not cover keeps its text; the default changes nothing
    assert embedding_inputs([_row_chunk()], [], [], EmbeddingInputConfig(table_rows="short")) == ["full"]
    assert embedding_inputs([_row_chunk()], [], [row], EmbeddingInputConfig()) == ["full"]


def test_token_length_batches_group_by_word_pieces():
    batches = token_length_batches([50, 3, 200, 4, 49, 5], 2)
    assert [list(b) for b in batches] == [[1, 3], [5, 4], [0, 2]]
    assert token_length_batches([], 32) == []


# ---- the pipeline's worker ------------------------------------------------------------------------------

def _square(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x * x


def test_work_ahead_returns_in_order_and_recomputes_a_failure_in_process():
    with WorkAhead(_square, worker=True, lookahead=2) as ahead:
        assert [r for _, r in ahead.in_order([1, 2, 3, 4])] == [1, 4, 9, 16]
        assert ahead.ahead_hits == 3  # items 2..4 came from the worker
        ahead.submit(-1, -1)
        with pytest.raises(ValueError, match="negative: -1"):  # the real error, raised in this process
            ahead.result(-1, -1)
        assert ahead.take("never submitted") is None
    with WorkAhead(_square, worker=False) as inline:
        assert [r for _, r in inline.in_order([5, 6])] == [25, 36] and inline.ahead_hits == 0


def test_use_worker_needs_two_items_and_follows_the_setting(monkeypatch):
    assert not use_worker(PipelineConfig(parse_ahead="on"), 1)
    assert use_worker(PipelineConfig(parse_ahead="on"), 2)
    assert not use_worker(PipelineConfig(parse_ahead="off"), 5)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert use_worker(PipelineConfig(), 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 1.0, 1.0))  # no idle core
    assert not use_worker(PipelineConfig(), 2)


def test_parse_ahead_hands_the_asset_the_same_records(apple):
    with ParseAhead([APPLE], worker=True) as ahead:
        ahead.before(-1)  # as run_pipeline does before the filing ahead of it
        taken = parse_filing_ahead(APPLE)
        assert ahead.work.ahead_hits == 1
    assert taken.filing_id == apple.filing_id
    for name in ("pages", "table_rows", "facts"):
        assert rows_of(getattr(taken, name)) == rows_of(getattr(apple, name))
    assert parse_filing_ahead(APPLE).filing_id == apple.filing_id  # nothing ahead: parsed here


# ---- the whole path: pipelined = sequential; re-ingest idempotent and cached -----------------------------

def _indexes(folder: Path, embedder):
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    return (TantivyIndex(folder / "tantivy"),
            LanceIndex(folder / "lancedb", embedder, cache=EmbeddingCache(folder / "cache.sqlite")))


def _lance_rows(lance) -> dict[str, tuple[str, np.ndarray]]:
    table = lance.table.search().select(["chunk_id", "filing_id", "vector"]).limit(None).to_arrow()
    return {cid: (fid, np.asarray(v, dtype=np.float32)) for cid, fid, v in
            zip(table["chunk_id"].to_pylist(), table["filing_id"].to_pylist(),
                table["vector"].to_numpy(zero_copy_only=False), strict=True)}


@pytest.fixture(scope="module")
def embedder():
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    return load_embedder_config().build()


def test_pipelined_ingest_writes_what_the_sequential_path_writes(tmp_path, embedder):
    files = [APPLE, WALMART]
    # pipelined: a worker prepares filing 2 while filing 1 embeds; fresh cache, so every vector is computed
    tantivy_a, lance_a = _indexes(tmp_path / "pipelined", embedder)
    done = list(ingest_files(files, tantivy_a, lance_a, worker=True))
    assert [d.prepared_ahead for d in done] == [False, True]
    assert all(d.encoded > 0 for d in done)
    # sequential, the asset's way: parse, chunk, LanceIndex.upsert_filing(embed_inputs=...) in this process
    tantivy_b, lance_b = _indexes(tmp_path / "sequential", embedder)
    for path in files:
        parsed = parse_filing(path)
        leaves = [c for c in chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
                  if c.is_leaf]
        inputs = dict(zip((c.chunk_id for c in leaves), embedding_inputs(leaves, parsed.pages, parsed.table_rows),
                          strict=True))
        tantivy_b.upsert_filing(parsed.filing_id, leaves)
        lance_b.upsert_filing(parsed.filing_id, leaves, embed_inputs=inputs)
    a, b = _lance_rows(lance_a), _lance_rows(lance_b)
    assert sorted(a) == sorted(b) and len(a) == sum(d.leaves for d in done)
    for cid, (fid, vector) in a.items():
        assert fid == b[cid][0]
        np.testing.assert_allclose(vector, b[cid][1], atol=1e-5)
    for d in done:
        assert tantivy_a.count(d.filing_id) == tantivy_b.count(d.filing_id) == d.leaves

    # re-ingest: same rows, no duplicates, every vector from the cache, same vectors
    again = list(ingest_files(files, tantivy_a, lance_a, worker=False))
    assert [d.encoded for d in again] == [0, 0]
    a2 = _lance_rows(lance_a)
    assert sorted(a2) == sorted(a) and lance_a.count() == len(a)
    for cid, (_, vector) in a2.items():
        np.testing.assert_array_equal(vector, a[cid][1])
    for d in again:
        assert tantivy_a.count(d.filing_id) == d.leaves


class _FailingEmbedder:
    """Same name and width as the real one (same table), but encoding fails: a run dying mid-embedding."""

    def __init__(self, real):
        self.name, self.dim = real.name, real.dim

    def encode(self, texts, batch_size=None, show_progress=False):
        raise RuntimeError("killed while embedding")


def test_a_reingest_that_dies_while_embedding_leaves_the_old_rows(tmp_path, embedder, apple):
    from finrag_pipeline.core.indexing.lance_index import LanceIndex

    leaves = [c for c in chunk_filing(apple.meta, apple.pages, apple.table_rows, load_chunking_config())
              if c.is_leaf][:6]
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    index = LanceIndex(tmp_path / "lancedb", embedder, cache=cache)
    assert index.upsert_filing(apple.filing_id, leaves) == 6
    before = _lance_rows(index)
    dying = LanceIndex(tmp_path / "lancedb", _FailingEmbedder(embedder), cache=cache)
    changed = {c.chunk_id: c.text + " (re-ingested with new text)" for c in leaves[:3]}
    with pytest.raises(RuntimeError, match="killed while embedding"):
        dying.upsert_filing(apple.filing_id, leaves, embed_inputs=changed)
    index.table.checkout_latest()
    after = _lance_rows(index)
    assert sorted(after) == sorted(before)
    for cid, (_, vector) in after.items():
        np.testing.assert_array_equal(vector, before[cid][1])


# ---- one embedding cache for the default index and every chunking variant --------------------------------

def test_chunking_variants_share_the_default_index_embedding_cache(tmp_path, embedder, monkeypatch):
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.variants import open_lance

    monkeypatch.delenv("FINRAG_EMBEDDING_CACHE", raising=False)  # the home's own cache, as in production
    paths = FinragPaths.from_env(tmp_path / "home")
    default = LanceIndex(paths.lancedb_dir, embedder)
    small = open_lance(paths, "small", embedder)
    assert small.cache.path == default.cache.path == paths.lancedb_dir / "embedding_cache.sqlite"

    def leaf(cid: str, text: str) -> Chunk:
        return Chunk(chunk_id=cid, filing_id="ACME-2022-10K", ticker=None, company="Acme", fiscal_year=2022,
                     form_type="10-K", section=None, page_start=1, page_end=1, chunk_type="table_row", text=text)

    rows = [leaf(f"d{i}", f"Acme 10-K FY2022 | Segment results | Region {i} > Net sales | FY2022: {i},000")
            for i in range(3)]
    default.upsert_filing("ACME-2022-10K", rows)
    assert default.last_encoded == 3
    # the variant: the same three row texts under its own chunk ids, and one new text
    variant_rows = [leaf(f"v{i}", r.text) for i, r in enumerate(rows)] + [leaf("v9", "Acme 10-K FY2022 | new")]
    small.upsert_filing("ACME-2022-10K", variant_rows)
    assert small.last_encoded == 1
    assert small.count("ACME-2022-10K") == 4


# ---- the product path: finrag ingest parses the next filing in the worker ----------------------------------

@pytest.mark.integration
def test_finrag_ingest_takes_the_next_filing_from_the_worker(tmp_path, monkeypatch):
    import shutil

    import yaml

    from finrag_pipeline.core import ingest_pipeline
    from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, FinragPaths
    from finrag_pipeline.core.records import load_chunks, load_pages, load_table_rows
    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import get_instance, run_pipeline

    config = yaml.safe_load((ASSETS_CONFIG_DIR / "ingest.yaml").read_text())
    config["pipeline"] = {"parse_ahead": "on", "lookahead": 1}
    (tmp_path / "ingest.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("FINRAG_INGEST_YAML", str(tmp_path / "ingest.yaml"))
    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for path in (APPLE, WALMART):
        shutil.copy(path, corpus)
    taken: list[str] = []
    real_take = ingest_pipeline.WorkAhead.take

    def recording_take(self, key):
        result = real_take(self, key)
        if result is not None:
            taken.append(result.filing_id)
        return result

    monkeypatch.setattr(ingest_pipeline.WorkAhead, "take", recording_take)
    paths = FinragPaths.from_env(str(tmp_path / "home")).ensure()
    report = run_pipeline([corpus], paths, get_instance(paths), defs, evaluate=False, build_marts=False,
                          progress=lambda _m: None)
    assert not report.failed, report.failed
    wh = Warehouse(paths.warehouse)
    ids = sorted(r.filing_id for r in report.registrations if r.ok)
    assert len(ids) == 2 and len(taken) == 1 and taken[0] in ids  # the second filing came from the worker
    for path in (APPLE, WALMART):
        parsed = parse_filing(path)
        assert rows_of(load_pages(wh, parsed.filing_id)) == rows_of(parsed.pages)
        assert rows_of(load_table_rows(wh, parsed.filing_id)) == rows_of(parsed.table_rows)
        assert len([c for c in load_chunks(wh, parsed.filing_id) if c.is_leaf]) > 0
