"""Overrides from the CLI / launchpad, and the catalog's round trip through the warehouse."""

from datetime import date

import pytest

from finrag_pipeline.core.catalog import load_filing, write_filing
from finrag_pipeline.core.config import parse_overrides
from finrag_pipeline.core.models import FilingMeta
from finrag_pipeline.core.warehouse import Warehouse


@pytest.mark.parametrize(("texts", "expected"), [
    ([], {}),
    (["hybrid_rrf.rrf_k=30"], {"hybrid_rrf": {"rrf_k": 30}}),
    (["a.b=1", "a.c=[1, 2]", "a.b=2"], {"a": {"b": 2, "c": [1, 2]}}),   # later wins, siblings merge
    (["bm25.filters.fiscal_years=[2022]", "*.k=20"], {"bm25": {"filters": {"fiscal_years": [2022]}}, "*": {"k": 20}}),
])
def test_parse_overrides(texts, expected):
    assert parse_overrides(texts) == expected


def test_parse_overrides_rejects_text_without_equals():
    with pytest.raises(ValueError, match="dotted.key=value"):
        parse_overrides(["hybrid_rrf.rrf_k"])


def test_filing_round_trips_through_the_warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    meta = FilingMeta(filing_id="MSFT-2022-10K", content_sha256="ab" * 32, source_path="/x.pdf",
                      original_name="x.pdf", source_format="pdf", company="MICROSOFT CORPORATION", ticker="MSFT",
                      cik=None, form_type="10-K", fiscal_year=2022, period_end_date=date(2022, 6, 30),
                      fiscal_year_end="--06-30", n_pages=116, metadata_source="pdf-cover")
    write_filing(wh, meta)
    write_filing(wh, meta)  # idempotent: one row
    assert load_filing(wh, "MSFT-2022-10K") == meta
    assert int(wh.query_df("SELECT count(*) FROM core.filings").iloc[0, 0]) == 1
    with pytest.raises(KeyError, match="not registered"):
        load_filing(wh, "NOPE-2022-10K")


def test_an_explicit_config_dir_wins_over_the_env_dir_for_the_files_it_has(tmp_path, monkeypatch):
    from finrag_pipeline.core.config import ConfigError, config_dir, config_path, using_config_dir
    from finrag_pipeline.core.evaluation.runner import EvalMatrix
    from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR

    env_dir, explicit = tmp_path / "env", tmp_path / "explicit"
    env_dir.mkdir()
    explicit.mkdir()
    matrix = (ASSETS_CONFIG_DIR / "eval_matrix.yaml").read_text()
    (env_dir / "eval_matrix.yaml").write_text(matrix.replace("top_k: [3, 5, 10]", "top_k: [7]"))
    (env_dir / "qa.yaml").write_text((ASSETS_CONFIG_DIR / "qa.yaml").read_text())
    (explicit / "eval_matrix.yaml").write_text(matrix.replace("top_k: [3, 5, 10]", "top_k: [4]"))
    monkeypatch.setenv("FINRAG_CONFIG_DIR", str(env_dir))
    monkeypatch.delenv("FINRAG_EVAL_MATRIX_YAML", raising=False)
    assert EvalMatrix.load().retrieval.top_k == [7]
    with using_config_dir(explicit):
        assert config_dir() == explicit
        assert EvalMatrix.load().retrieval.top_k == [4]
        assert config_path("qa.yaml") == env_dir / "qa.yaml"                        # not in explicit: env dir
        assert config_path("retrievers.yaml") == ASSETS_CONFIG_DIR / "retrievers.yaml"  # in neither: repo
        with using_config_dir(None):                                                 # None changes nothing
            assert EvalMatrix.load().retrieval.top_k == [4]
    assert EvalMatrix.load().retrieval.top_k == [7]                                  # restored on exit
    with pytest.raises(ConfigError, match="does not exist"), using_config_dir(tmp_path / "missing"):
        pass
