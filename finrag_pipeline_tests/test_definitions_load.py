"""The code location loads: what `dagster dev -w workspace.yaml` does first, in a fast test."""

import dagster as dg

from finrag_pipeline.definitions import defs

EXPECTED_JOBS = {"ingest_filing", "evaluate_filing", "refresh_corpus_state", "build_marts"}
EXPECTED_SENSORS = {"inbox_sensor", "finrag_automation", "finrag_evaluation_automation", "finrag_marts_automation",
                    "edgar_poller"}


def test_definitions_validate_and_resolve():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    for asset in ("filings", "pages", "table_rows", "chunks", "bm25_index", "vector_index", "corpus_state",
                  "qa_set", "retrieval_eval", "answer_eval", "eval_statistics", "analyst_snapshot", "eval_report"):
        assert asset in keys, asset


def test_jobs_sensors_and_schedules_are_registered():
    assert {job.name for job in defs.resolve_all_job_defs()} >= EXPECTED_JOBS
    assert {s.name for s in defs.sensors} >= EXPECTED_SENSORS
    assert {s.name for s in defs.schedules} == {"nightly_reevaluation"}


def test_every_materializable_asset_has_a_group_and_description():
    graph = defs.resolve_asset_graph()
    missing = [k.to_user_string() for k in graph.materializable_asset_keys
               if not graph.get(k).description or not graph.get(k).group_name]
    assert not missing, missing
