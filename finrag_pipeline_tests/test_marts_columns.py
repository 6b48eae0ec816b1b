"""Column descriptions of the dbt models in the Dagster UI: from the yml where written, else from the
marts' naming rules; types from the warehouse catalog, in table order."""

import pytest

from finrag_pipeline.defs.marts.columns import column_schema, describe_column


@pytest.mark.parametrize(("name", "expected"), [
    ("ndcg_page_mean", "mean ndcg_page (nDCG@k over relevant pages) over questions (failed questions count 0"),
    ("hit_chunk_ci_low", "lower bound of the closed-form 95% interval of hit_chunk (1 if a relevant chunk is in"),
    ("recall_page_boot_ci_high", "upper bound of the seeded percentile bootstrap 95% interval of recall_page"),
    ("figure_match_coverage", "share of rows where figure_match (1 if the answer states the reference figure)"),
    ("latency_p95_ms", "95th percentile of latency (retrieval latency in milliseconds)"),
    ("scope", "filing = the filing alone; corpus = the whole corpus"),
])
def test_descriptions_follow_the_naming_rules(name, expected):
    assert describe_column(name).startswith(expected)


def test_unknown_columns_get_no_invented_description():
    assert describe_column("best_config_name") == ""
    assert describe_column("hit_mean") == ""   # not a metric of the marts


def test_schema_keeps_table_order_types_and_prefers_the_yml():
    schema = column_schema([("scope", "VARCHAR"), ("ndcg_page_mean", "DOUBLE"), ("odd", "INTEGER")],
                           {"scope": {"description": "from the yml"}})
    assert [(c.name, c.type, c.description) for c in schema.columns] == [
        ("scope", "VARCHAR", "from the yml"),
        ("ndcg_page_mean", "DOUBLE", describe_column("ndcg_page_mean")),
        ("odd", "INTEGER", None)]
