"""Run concurrency: the limits of assets_config/deployment.yaml reach the Dagster instance's run queue, and
every run the code location starts carries a pool that has a limit."""

import dagster as dg
import pytest
from pydantic import ValidationError

from finrag_pipeline.core.deployment import dagster_instance_yaml as _instance_yaml_for
from finrag_pipeline.core.deployment import load_deployment, run_concurrency_limits
from finrag_pipeline.core.paths import DAGSTER_INSTANCE_YAML, FinragPaths
from finrag_pipeline.defs.automation.jobs import POOL_TAG, POOLS


def load_run_concurrency(config_dir=None) -> list[dict]:
    return run_concurrency_limits(config_dir)


def dagster_instance_yaml(config_dir=None) -> str:
    """The local instance file for the deployment.yaml of ``config_dir``."""
    return _instance_yaml_for(load_deployment(config_dir, env={}))


def _write(tmp_path, text: str):
    (tmp_path / "deployment.yaml").write_text(text)
    return tmp_path


def test_the_repository_limits_cover_every_pool_once():
    limits = load_run_concurrency()
    assert sorted(lim["value"] for lim in limits if lim["key"] == POOL_TAG) == sorted(POOLS)
    assert all(lim["limit"] >= 1 for lim in limits)


@pytest.mark.parametrize("text, error", [
    ("run_concurrency:\n  - {key: finrag/pool, value: evaluation, limit: 0}\n", ValidationError),
    ("run_concurrency:\n  - {key: finrag/pool, value: evaluation}\n", ValidationError),  # no limit
    ("run_concurrency:\n  - {key: finrag/pool, value: evaluation, limit: 2, per_value: true}\n", ValidationError),
    ("run_concurrency:\n  - {key: finrag/pool, value: evaluation, limit: 2}\n"
     "  - {key: finrag/pool, value: evaluation, limit: 1}\n", ValidationError),
])
def test_bad_limits_are_refused_with_the_file_named(tmp_path, text, error):
    with pytest.raises(error):
        load_run_concurrency(_write(tmp_path, text))


def test_the_instance_queue_gets_the_limits(tmp_path):
    config = _write(tmp_path, "run_concurrency:\n  - {key: finrag/pool, value: evaluation, limit: 3}\n")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(dagster_instance_yaml(config))
    instance = dg.DagsterInstance.from_config(str(home))
    # what the daemon's run queue reads: the instance's `concurrency: runs:` settings over the coordinator's
    queue = instance.get_concurrency_config().run_queue_config
    assert queue.tag_concurrency_limits == [{"key": "finrag/pool", "value": "evaluation", "limit": 3}]
    assert type(instance.run_coordinator) is dg.QueuedRunCoordinator  # Dagster's default: no module path written
    # queued runs start within a second (Dagster's default pass is every 5 s; a wave queues ~8 runs in a chain)
    assert instance.run_coordinator.dequeue_interval_seconds == 1
    assert instance.run_monitoring_enabled  # the rest of the instance config is kept
    # no limits configured: no concurrency section (Dagster's default queue, unlimited); never a module path
    unlimited = dagster_instance_yaml(_write(tmp_path, "run_concurrency: []\n"))
    assert "concurrency" not in unlimited and "run_coordinator" not in unlimited and "dagster._" not in unlimited


def test_prepared_home_is_brought_up_to_date_but_a_hand_written_config_is_kept(tmp_path):
    from finrag_pipeline.core.deployment import prepare_instance

    paths = FinragPaths(tmp_path / "home")
    instance_yaml = paths.dagster_home / "dagster.yaml"
    paths.dagster_home.mkdir(parents=True)
    instance_yaml.write_text(DAGSTER_INSTANCE_YAML)  # what earlier versions wrote
    paths.ensure()
    prepare_instance(paths.dagster_home)  # what get_instance and `make ui` run
    assert instance_yaml.read_text() == dagster_instance_yaml()
    assert "tag_concurrency_limits" in instance_yaml.read_text()
    instance_yaml.write_text("telemetry:\n  enabled: false\n")  # written by hand
    paths.ensure()
    prepare_instance(paths.dagster_home)
    assert instance_yaml.read_text() == "telemetry:\n  enabled: false\n"


def test_every_job_and_automation_sensor_tags_its_runs_with_a_limited_pool():
    from finrag_pipeline.definitions import defs

    limited = {lim["value"] for lim in load_run_concurrency() if lim["key"] == POOL_TAG}
    pools = {}
    for name in ("ingest_filing", "evaluate_filing", "refresh_corpus_state", "build_marts"):
        pools[name] = defs.resolve_job_def(name).run_tags[POOL_TAG]
    for sensor in defs.sensors:
        if isinstance(sensor, dg.AutomationConditionSensorDefinition):
            pools[sensor.name] = sensor.run_tags[POOL_TAG]
            assert sensor.run_tags["finrag/trigger"] == "automation"
    assert pools == {"ingest_filing": "ingest", "evaluate_filing": "evaluation", "refresh_corpus_state": "ingest",
                     "build_marts": "warehouse", "finrag_automation": "ingest",
                     "finrag_evaluation_automation": "evaluation", "finrag_marts_automation": "warehouse"}
    assert set(pools.values()) <= limited
    # every asset with an automation condition is evaluated by exactly one automation sensor
    graph = defs.resolve_asset_graph()
    automated = {k for k in graph.get_all_asset_keys() if graph.get(k).automation_condition is not None}
    sensors = [s for s in defs.sensors if isinstance(s, dg.AutomationConditionSensorDefinition)]
    for key in automated:
        assert sum(key in s.asset_selection.resolve(graph) for s in sensors) == 1, key
