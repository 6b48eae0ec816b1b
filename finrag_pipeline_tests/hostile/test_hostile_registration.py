"""Registration (what the CLI and the inbox sensor both call) on hostile files: one status per file,
a reason and a remedy, nothing written outside FINRAG_HOME, and no endless retries."""

from __future__ import annotations

import shutil

import pytest
from _hostile import PDF_EXCERPT, copy_inputs, make_hostile_files

from finrag_pipeline.core import catalog
from finrag_pipeline.core.catalog import register_file
from finrag_pipeline.core.ingest.errors import STATUS_REMEDIES, InvalidFilingId
from finrag_pipeline.core.ingest.registry import make_filing_id, validate_filing_id
from finrag_pipeline.core.paths import FinragPaths, PathEscape, contained
from finrag_pipeline.core.warehouse import Warehouse


def _setup(sandbox):
    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    return paths, Warehouse(paths.warehouse)


def test_every_hostile_file_gets_its_own_status_and_nothing_escapes(sandbox, hostile_files):
    paths, wh = _setup(sandbox)
    names = copy_inputs(hostile_files, sandbox.src)
    sandbox.freeze()
    got = {name: register_file(sandbox.src / name, paths, wh) for name in names}
    expected = hostile_files[1]
    assert {n: r.status for n, r in got.items()} == expected
    # the reasons are specific to each file
    assert "../../outside/NAME" in got["escape.htm"].message
    assert "18 of 20 pages (90%)" in got["scanned.pdf"].message
    assert "private-use" in got["garbled.pdf"].message
    assert "scale='abc'" in got["bad_scale.htm"].message
    assert "not well-formed XML" in got["broken_xml.htm"].message
    assert got["ticker_dashes.htm"].filing_id == "APPLE-INC-2025-10K"   # the company name stands in
    # every file is in the log with its status; every rejection is remembered with a remedy
    log = wh.query_df("SELECT original_name, status FROM core.ingest_log WHERE stage = 'register'")
    assert dict(zip(log["original_name"], log["status"], strict=True)) == expected
    failures = wh.query_df("SELECT original_name, status, remedy FROM core.ingest_failures")
    assert set(failures["original_name"]) == {n for n, s in expected.items() if s != "registered"}
    assert all(r == STATUS_REMEDIES[s] and r for s, r in zip(failures["status"], failures["remedy"], strict=True))
    # only the filing that registered has bytes in the store, named by its valid id
    assert sorted(p.name.split("-2025")[0] for p in paths.filings_store.iterdir()) == ["APPLE-INC"]
    assert wh.query_df("SELECT filing_id FROM core.filings")["filing_id"].tolist() == ["APPLE-INC-2025-10K"]
    sandbox.assert_nothing_outside()


@pytest.mark.parametrize("value, ok", [
    ("AAPL-2022-10K", True), ("BRK.B-2023-10K", True), ("a_b-1", True), ("X" * 64, True),
    ("../../somewhere/NAME", False), ("..", False), (".hidden", False), ("a/b", False), ("a\\b", False),
    ("", False), ("X" * 65, False), ("AAPL 2022", False), ("AAPL\n", False), ("ÄPFEL-2022-10K", False),
    (None, False), (2022, False),
])
def test_filing_id_pattern(value, ok):
    if ok:
        assert validate_filing_id(value) == value
    else:
        with pytest.raises(InvalidFilingId):
            validate_filing_id(value)


def test_filing_id_from_a_ticker_without_letters_falls_back_or_fails_cleanly():
    assert make_filing_id("---", 2025, "10-K", "Apple Inc.") == "APPLE-INC-2025-10K"
    with pytest.raises(InvalidFilingId) as exc:   # still a ValueError for older callers
        make_filing_id("---", 2025, "10-K", "...")
    assert isinstance(exc.value, ValueError) and exc.value.status == "invalid_id"


def test_contained_refuses_paths_that_resolve_elsewhere(tmp_path):
    root = tmp_path / "home"
    (root / "filings").mkdir(parents=True)
    (root / "filings" / "link").symlink_to(tmp_path)
    assert contained(root / "filings" / "X-1.pdf", root) == (root / "filings" / "X-1.pdf").resolve()
    for bad in (root / "filings" / ".." / ".." / "x", root / "filings" / "link" / "x", "/etc/passwd"):
        with pytest.raises(PathEscape):
            contained(bad, root)


def test_an_unexpected_exception_is_a_status_and_the_next_file_still_registers(sandbox, monkeypatch):
    paths, wh = _setup(sandbox)
    bad, good = sandbox.src / "boom.pdf", sandbox.src / "apple.pdf"
    shutil.copy(PDF_EXCERPT, good)
    bad.write_bytes(PDF_EXCERPT.read_bytes() + b"\n% a different file\n")
    real = catalog.read_filing_meta

    def flaky(path, **kw):
        if path.name == "boom.pdf":
            raise KeyError("a parser bug")
        return real(path, **kw)

    monkeypatch.setattr(catalog, "read_filing_meta", flaky)
    first, second = register_file(bad, paths, wh), register_file(good, paths, wh)
    assert (first.status, first.message) == ("error", "KeyError: 'a parser bug'")
    assert (second.status, second.filing_id) == ("registered", "AAPL-2022-10K")


def test_a_rejected_file_is_retried_only_when_bytes_sidecar_or_parser_change(sandbox, hostile_files, monkeypatch):
    paths, wh = _setup(sandbox)
    copy_inputs(hostile_files, sandbox.src, ["scanned.pdf"])
    calls = []
    real = catalog.read_filing_meta
    monkeypatch.setattr(catalog, "read_filing_meta", lambda p, **kw: calls.append(p.name) or real(p, **kw))
    path = sandbox.src / "scanned.pdf"

    first = register_file(path, paths, wh)
    again = register_file(path, paths, wh)
    assert (first.status, again.status, again.retried, len(calls)) == ("needs_ocr", "needs_ocr", False, 1)
    assert "not retried" in again.message and "18 of 20 pages" in again.message
    (sandbox.src / "scanned.pdf.yaml").write_text("company: Apple Inc.\n")       # a new sidecar: retried
    assert register_file(path, paths, wh).retried and len(calls) == 2
    assert not register_file(path, paths, wh).retried and len(calls) == 2
    monkeypatch.setattr(catalog, "parser_version", lambda: "a-newer-parser")  # a new parser: retried
    assert register_file(path, paths, wh).status == "needs_ocr" and len(calls) == 3
    # one failure row per retry key, never one per attempt
    assert len(wh.query_df("SELECT * FROM core.ingest_failures")) == 3


def _amended(text: str) -> str:
    """The same 10-K re-filed with one corrected figure (a new version of the same filing id)."""
    return make_hostile_files.first_scale_to(text, "3")


def test_stale_bytes_never_roll_back_a_newer_version(sandbox):
    paths, wh = _setup(sandbox)
    original = make_hostile_files.ixbrl_excerpt()
    (sandbox.src / "v1.htm").write_text(original, encoding="ascii")
    (sandbox.src / "v2.htm").write_text(_amended(original), encoding="ascii")
    statuses = [register_file(sandbox.src / n, paths, wh).status for n in ("v1.htm", "v2.htm", "v1.htm")]
    assert statuses == ["registered", "updated", "stale"]
    active = wh.query_df("SELECT content_sha256 FROM core.filings WHERE filing_id = 'AAPL-2025-10K'")
    log = wh.query_df("SELECT file_sha256, status FROM core.ingest_log WHERE original_name = 'v2.htm'")
    assert active["content_sha256"].tolist() == log["file_sha256"].tolist()       # v2 is still the one
    stale = wh.query_df("SELECT message FROM core.ingest_log WHERE status = 'stale'")["message"].iloc[0]
    assert "replaced" in stale and "active version is kept" in stale


def test_a_version_whose_period_ends_earlier_is_stale(sandbox):
    paths, wh = _setup(sandbox)
    original = make_hostile_files.ixbrl_excerpt()
    (sandbox.src / "current.htm").write_text(original, encoding="ascii")
    (sandbox.src / "older.pdf.htm").write_text(
        make_hostile_files.period_end_to(original, "2025-06-28"), encoding="ascii")
    assert register_file(sandbox.src / "current.htm", paths, wh).status == "registered"
    older = register_file(sandbox.src / "older.pdf.htm", paths, wh)
    assert older.status == "stale" and "2025-06-28" in older.message


def test_the_readme_bad_input_table_lists_every_status():
    from finrag_pipeline.core.catalog import OK_STATUSES
    from finrag_pipeline.core.ingest.errors import INGEST_STATUSES
    from finrag_pipeline.core.paths import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    table = readme[readme.index("## Bad input"):readme.index("## Layout")]
    listed = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert listed == set(INGEST_STATUSES) | set(OK_STATUSES) | {"parsed", "partial", "review"}


def test_a_pdf_dated_before_the_active_version_is_stale(sandbox):
    paths, wh = _setup(sandbox)
    make_hostile_files.dated_pdf(sandbox.src / "amended.pdf", "20221215", "Amended copy.")
    make_hostile_files.dated_pdf(sandbox.src / "original.pdf", "20221028", "Original copy.")
    assert register_file(sandbox.src / "amended.pdf", paths, wh).status == "registered"
    older = register_file(sandbox.src / "original.pdf", paths, wh)
    assert older.status == "stale" and "dated 2022-10-28, before the active version" in older.message
    assert "2022-12-15" in older.message and older.filing_id == "AAPL-2022-10K"


def test_edgar_download_names_cannot_leave_the_inbox(tmp_path):
    from finrag_pipeline.core.edgar import EdgarFiling, inbox_file_name

    hostile = EdgarFiling("AAPL", "0000320193", "Apple Inc.", "../../../tmp/x", "10-K", "2025-10-31",
                          "2025-09-27", "..\\..\\evil/../../.bashrc")
    name = inbox_file_name(hostile)
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert contained(tmp_path / name, tmp_path).parent == tmp_path.resolve()


def test_a_new_version_that_fails_to_parse_puts_the_previous_one_back(sandbox):
    from finrag_pipeline.core.catalog import active_filings, load_filing, reject_filing

    paths, wh = _setup(sandbox)
    original = make_hostile_files.ixbrl_excerpt()
    (sandbox.src / "v1.htm").write_text(original, encoding="ascii")
    (sandbox.src / "v2.htm").write_text(_amended(original), encoding="ascii")
    v1 = register_file(sandbox.src / "v1.htm", paths, wh)
    v2 = register_file(sandbox.src / "v2.htm", paths, wh)
    assert (v1.status, v2.status) == ("registered", "updated")
    # the parse stage of v2 dies (a parser bug): v1 is the active version again, nothing is lost
    rejected = reject_filing(wh, paths, load_filing(wh, "AAPL-2025-10K"), "error", "KeyError: 'x'", stage="parse")
    assert "previous version" in rejected.message and v1.sha256[:16] in rejected.message
    assert active_filings(wh) == ["AAPL-2025-10K"]
    assert load_filing(wh, "AAPL-2025-10K").content_sha256 == v1.sha256
    assert "stays active" in (paths.quarantine / "AAPL-2025-10K.reason.txt").read_text()
    # the broken version is not retried; the original is a duplicate
    assert not register_file(sandbox.src / "v2.htm", paths, wh).retried
    assert register_file(sandbox.src / "v1.htm", paths, wh).status == "duplicate"
