"""Column descriptions of the dbt models in the Dagster UI: from the yml where written, else from the
marts' naming rules; types from the warehouse catalog, in table order."""

import pytest

from finrag_pipeline.defs.marts.columns import column_schema, describe_column


@pytest.mark.parametrize(("name", "expected"), [
    ("ndcg_page_mean", "mean ndcg_page (nDCG at k with binary gains (page level)) over questions (failed questions "
                       "count 0"),
    ("hit_chunk_ci_low", "lower bound of the closed-form 95% interval of hit_chunk (1 if any relevant item is in "),
    ("recall_page_boot_ci_high", "upper bound of the seeded percentile bootstrap 95% interval of recall_page"),
    ("grounded_coverage", "share of rows where grounded (every figure of the answer is in the cited evidence)"),
    ("all_evidence_hit_cost", "corpus minus filing mean of all_evidence_hit (1 if every required evidence group"),
    ("hit_ranked_page", "hit_ranked_page (1 if an evidence page is among the top k pages of the page ranking), "
                        "per question"),
    ("latency_p95_ms", "95th percentile latency in milliseconds"),
    ("scope", "filing = the filing alone; corpus = the whole corpus"),
    ("is_error", "the answer failed (backend_error, connection_error, empty_answer, http_error, invalid_output"),
])
def test_descriptions_follow_the_naming_rules(name, expected):
    assert describe_column(name).startswith(expected)


def test_metric_phrases_come_from_the_metric_registry():
    from finrag_pipeline.core.scoring.metric_registry import ANSWER_METRIC_SPECS

    faithfulness = next(s for s in ANSWER_METRIC_SPECS if s.name == "faithfulness")
    assert describe_column("faithfulness_mean").startswith(f"mean faithfulness ({faithfulness.description})")


def test_unknown_columns_get_no_invented_description():
    assert describe_column("odd_column") == ""
    assert describe_column("hit_mean") == ""   # not a metric of the marts
    assert describe_column("figure_match_coverage") == ""   # no longer a metric


def test_schema_keeps_table_order_types_and_prefers_the_yml():
    schema = column_schema([("scope", "VARCHAR"), ("ndcg_page_mean", "DOUBLE"), ("odd", "INTEGER")],
                           {"scope": {"description": "from the yml"}})
    assert [(c.name, c.type, c.description) for c in schema.columns] == [
        ("scope", "VARCHAR", "from the yml"),
        ("ndcg_page_mean", "DOUBLE", describe_column("ndcg_page_mean")),
        ("odd", "INTEGER", None)]


def test_each_model_output_gets_its_own_row_count_and_schema(tmp_path):
    import dagster as dg

    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.defs.marts.assets import with_schemas_and_row_counts

    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.connect() as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS marts")
        con.execute("CREATE SCHEMA IF NOT EXISTS staging")
        con.execute("CREATE TABLE marts.board AS SELECT range AS k, 'bm25' AS config_name FROM range(3)")
        con.execute("CREATE TABLE marts.empty_mart (scope VARCHAR)")
        con.execute("CREATE VIEW staging.stg AS SELECT range AS k FROM range(7)")
    manifest = {"nodes": {
        "model.p.board": {"schema": "marts", "name": "board", "columns": {"k": {"description": "the k"}}},
        "model.p.empty": {"schema": "marts", "name": "x", "alias": "empty_mart", "columns": {}},
        "model.p.stg": {"schema": "staging", "name": "stg", "columns": {}},
        "model.p.gone": {"schema": "marts", "name": "not_built", "columns": {}},
    }}
    events = [dg.Output(None, output_name=n, metadata={"unique_id": f"model.p.{n}"})
              for n in ("board", "empty", "stg", "gone")]
    events.append(dg.AssetObservation(asset_key="board", metadata={"unique_id": "test.p.t"}))
    out = list(with_schemas_and_row_counts(events, manifest, wh))

    assert len(out) == len(events)
    counts = {e.output_name: e.metadata["dagster/row_count"].value for e in out[:3]}
    assert counts == {"board": 3, "empty": 0, "stg": 7}
    board_schema = out[0].metadata["dagster/column_schema"].schema
    assert [(c.name, c.type, c.description) for c in board_schema.columns][0] == ("k", "BIGINT", "the k")
    # a model whose relation is not in the warehouse, and non-model events, pass through unchanged
    assert "dagster/row_count" not in out[3].metadata and out[4] is events[4]
