"""Deployment configuration: mode by configuration alone, secrets from the environment, the Dagster instance
for each mode, the executor the code location picks, and clear errors for unreachable services."""

import socket

import pytest
import yaml

from finrag_pipeline.core.deployment import (
    DeploymentError,
    ObjectStoreConfig,
    check_object_store,
    check_postgres,
    check_redis,
    check_services,
    dagster_instance_yaml,
    load_deployment,
    require_services,
    write_instance_yaml,
)
from finrag_pipeline.core.paths import DAGSTER_INSTANCE_YAML, FinragPaths

DIST_ENV = {"FINRAG_DEPLOYMENT": "distributed", "FINRAG_POSTGRES_URL": "postgresql://u:pw@127.0.0.1:1/db",
            "FINRAG_BROKER_URL": "redis://127.0.0.1:1/0"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket goes: nothing listens there


def test_local_is_the_default_and_keeps_todays_instance(monkeypatch, tmp_path):
    monkeypatch.delenv("FINRAG_DEPLOYMENT", raising=False)
    cfg = load_deployment()
    assert cfg.mode == "local" and not cfg.distributed and cfg.postgres_url is None
    local_yaml = dagster_instance_yaml(cfg)
    # today's SQLite instance, plus the run queue's limits of deployment.yaml
    assert DAGSTER_INSTANCE_YAML in local_yaml and "postgres" not in local_yaml
    assert "tag_concurrency_limits" in local_yaml
    from finrag_pipeline.defs.local_runs import get_instance

    paths = FinragPaths.from_env(tmp_path).ensure()
    get_instance(paths).dispose()
    assert (paths.dagster_home / "dagster.yaml").read_text() == local_yaml
    assert check_services(cfg) == []


def test_env_switches_mode_and_urls_come_from_named_variables():
    cfg = load_deployment(env=DIST_ENV)
    assert cfg.distributed
    assert cfg.postgres_url == DIST_ENV["FINRAG_POSTGRES_URL"] and cfg.broker_url == DIST_ENV["FINRAG_BROKER_URL"]
    assert cfg.result_backend_url == cfg.broker_url
    limits = {(t.key, t.value): t.limit for t in cfg.run_concurrency}
    assert limits[("finrag/pool", "evaluation")] == 2
    # the env var wins over the YAML in both directions
    assert load_deployment(env={**DIST_ENV, "FINRAG_DEPLOYMENT": "local"}).mode == "local"


@pytest.mark.parametrize("missing", ["FINRAG_POSTGRES_URL", "FINRAG_BROKER_URL"])
def test_distributed_without_a_url_names_the_variable(missing):
    env = {k: v for k, v in DIST_ENV.items() if k != missing}
    with pytest.raises(DeploymentError, match=missing):
        load_deployment(env=env)


def test_unknown_mode_and_bad_yaml_are_rejected(tmp_path):
    with pytest.raises(DeploymentError, match="expected one of local, distributed"):
        load_deployment(env={"FINRAG_DEPLOYMENT": "cluster"})
    (tmp_path / "deployment.yaml").write_text(
        "mode: local\nrun_concurrency:\n  - {key: a, value: b, limit: 1}\n  - {key: a, value: b, limit: 2}\n")
    with pytest.raises(ValueError, match="same tag more than once: a=b"):
        load_deployment(tmp_path, env={})
    (tmp_path / "deployment.yaml").write_text("mode: local\nqueue: 3\n")
    with pytest.raises(ValueError, match="queue"):
        load_deployment(tmp_path, env={})


def test_distributed_instance_is_postgres_with_queue_limits_and_no_secret(monkeypatch):
    text = dagster_instance_yaml(load_deployment(env=DIST_ENV))
    assert "pw" not in text  # the URL stays in the environment
    inst = yaml.safe_load(text)
    assert inst["storage"] == {"postgres": {"postgres_url": {"env": "FINRAG_POSTGRES_URL"}}}
    assert "run_coordinator" not in inst and "dagster._" not in text  # Dagster's default (queued) coordinator
    runs = inst["concurrency"]["runs"]
    assert runs["max_concurrent_runs"] == 8
    assert {"key": "finrag/pool", "value": "evaluation", "limit": 2} in runs["tag_concurrency_limits"]
    assert inst["run_queue"] == {"dequeue_interval_seconds": 1}
    assert inst["run_retries"]["enabled"] is True and inst["run_retries"]["max_retries"] == 2
    # Dagster accepts it as an instance config (it reads the URL from the environment)
    monkeypatch.setenv("FINRAG_POSTGRES_URL", DIST_ENV["FINRAG_POSTGRES_URL"])
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config_schema

    assert process_config(dagster_instance_config_schema(), inst).success


def test_instance_file_follows_the_mode_but_a_hand_written_one_is_kept(tmp_path):
    local, dist = load_deployment(env={}), load_deployment(env=DIST_ENV)
    path = write_instance_yaml(tmp_path, local)
    assert path.read_text() == dagster_instance_yaml(local) and "postgres" not in path.read_text()
    write_instance_yaml(tmp_path, dist)
    assert "postgres" in path.read_text()
    write_instance_yaml(tmp_path, local)
    assert path.read_text() == dagster_instance_yaml(local)
    path.write_text("telemetry:\n  enabled: true\n")  # an operator's own file
    write_instance_yaml(tmp_path, dist)
    assert path.read_text() == "telemetry:\n  enabled: true\n"


def test_unreachable_services_are_named_with_a_fix():
    port = _closed_port()
    pg = check_postgres(f"postgresql://u:secretpw@127.0.0.1:{port}/db", timeout=1)
    assert not pg.ok and pg.service == "postgres" and "secretpw" not in pg.detail and "Start PostgreSQL" in pg.detail
    rd = check_redis(f"redis://127.0.0.1:{port}/0", timeout=1)
    assert not rd.ok and "redis-server" in rd.detail
    store = ObjectStoreConfig(endpoint_url=f"http://127.0.0.1:{port}", bucket="finrag", allow_http=True,
                              access_key_env="K", secret_key_env="S")
    assert "set the environment variables K, S" in check_object_store(store, env={}).detail
    s3 = check_object_store(store, env={"K": "a", "S": "b"}, timeout=1)
    assert not s3.ok and "bucket 'finrag'" in s3.detail
    env = {**DIST_ENV, "FINRAG_POSTGRES_URL": f"postgresql://u@127.0.0.1:{port}/db",
           "FINRAG_BROKER_URL": f"redis://127.0.0.1:{port}/0"}
    with pytest.raises(DeploymentError, match=r"postgres: .*; redis: "):
        require_services(load_deployment(env=env))


def test_executor_follows_the_mode(monkeypatch):
    from finrag_pipeline.defs.executors import deployment_executor

    assert deployment_executor(load_deployment(env={})) is None
    executor = deployment_executor(load_deployment(env=DIST_ENV))
    assert executor.name == "finrag_celery"
    assert executor.config_schema is not None


@pytest.mark.distributed
def test_services_start_answer_and_stop_without_leftovers():
    import shutil as sh

    from finrag_pipeline.core.services import PG_BIN, start_services

    if not (PG_BIN / "initdb").exists() or sh.which("redis-server") is None:
        pytest.skip("PostgreSQL 15 / redis-server not installed (make test installs them)")
    svc = start_services()
    try:
        env = {**svc.env, "FINRAG_DEPLOYMENT": "distributed"}
        statuses = check_services(load_deployment(env=env), env=env)
        assert [(s.service, s.ok) for s in statuses] == [("postgres", True), ("redis", True)]
        store = ObjectStoreConfig(endpoint_url=svc.s3_endpoint, bucket="finrag", access_key_env="FINRAG_S3_ACCESS_KEY_ID",
                                  secret_key_env="FINRAG_S3_SECRET_ACCESS_KEY", allow_http=True)
        assert check_object_store(store, env=env).ok
        pg_data, root = svc._pgdata, svc.root
    finally:
        svc.close()
    # everything it started is gone: the ports refuse, the folders are removed
    assert not check_postgres(statuses[0].detail.split()[-1], timeout=1).ok
    assert not check_redis(env["FINRAG_BROKER_URL"], timeout=1).ok
    assert not pg_data.exists() and not root.exists()
