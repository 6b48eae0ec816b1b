"""Distributed mode against real services: PostgreSQL 15 (Dagster instance), Redis (Celery broker), an S3
server (moto) and two dagster-celery worker processes, all started here and stopped at the end.

Three small filings go through the inbox sensor, automation evaluates them and builds the marts, once in
local mode and once in distributed mode (both as subprocesses of the same driver, at the same time); the
warehouse rows, metric values per configuration, marts and index contents must be equal. Then one worker's
step process is killed in the middle of an ingest, Dagster re-executes the run from the failed step, and the
filing's rows and index entries must equal the undisturbed run's.

The filings' bytes, indexes and warehouse sit on the shared filesystem (FINRAG_HOME): the object-storage
layer (core/storage, another branch) replaces that; the test already checks the object store is reachable.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finrag_pipeline.core.deployment import load_deployment, require_services
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, REPO_ROOT, FinragPaths
from finrag_pipeline.core.scoring.metric_registry import ANSWER_METRIC_SPECS, RETRIEVAL_METRIC_SPECS
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = [pytest.mark.distributed, pytest.mark.slow, pytest.mark.integration]
psutil = pytest.importorskip("psutil")

DATA = Path(__file__).parent / "data"
FILINGS = [DATA / "apple_2022_excerpt.pdf", DATA / "pge_2020_excerpt.pdf", DATA / "walmart_2021_excerpt.pdf"]
FILING_IDS = ["AAPL-2022-10K", "PCG-2020-10K", "WMT-2021-10K"]
WORKERS = ("w1", "w2")
KILLED_FILING = "AAPL-2022-10K"
KILLED_STEP = "qa_set"  # the longest step of an ingest (question generation writes qa.items)
DRIVER_TIMEOUT = 1800  # one driver (ingest of three excerpts, or one re-ingest with its retry): 10-25 min at load average 20

# A smaller evaluation matrix than the default (both modes read it): what is compared is the same either way.
EVAL_MATRIX = """\
retrieval:
  retrievers: [bm25, dense, hybrid_rrf]
  top_k: [5]
  chunking: [null]
  scopes: [filing, corpus]
answers:
  models: [calculator, extractive]
  sanity_answerers: [sanity_echo, sanity_all_figures, sanity_first_figure, sanity_abstain]
  prompt_types: [standard]
  temperatures: [0.0]
  top_p: [1.0]
  retriever: bm25
  k: 5
  scope: filing
  judge_model: null
  max_questions: null
stats:
  n_boot: 200
  n_perm: 500
  confidence: 0.95
  seed: 0
agreement:
  metric: all_evidence_hit
  at_k: 5
"""

DEPLOYMENT = """\
mode: local
distributed:
  postgres_url_env: FINRAG_POSTGRES_URL
  broker_url_env: FINRAG_BROKER_URL
  run_retries: 2
  # a lost worker's step fails after 30 s (the executor pings it); Redis would redeliver it only after an hour
  celery: {{visibility_timeout_seconds: 3600, worker_lost_after_seconds: 30, ping_interval_seconds: 2}}
  object_store:
    endpoint_url: {endpoint}
    bucket: finrag
    prefix: test
    region: us-east-1
    access_key_env: FINRAG_S3_ACCESS_KEY_ID
    secret_key_env: FINRAG_S3_SECRET_ACCESS_KEY
    allow_http: true
run_concurrency:
  - {{key: finrag/trigger, value: inbox, limit: 2}}
"""


def _base_env(home: Path, config_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FINRAG_DEPLOYMENT", "DAGSTER_HOME")}
    env.update(FINRAG_HOME=str(home), FINRAG_CONFIG_DIR=str(config_dir), PYTHONPATH=str(REPO_ROOT),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True",
               TOKENIZERS_PARALLELISM="false")
    return env


def _driver(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "finrag_pipeline_tests._inbox_driver", *args], env=env,
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=log.open("ab"), text=True)


def _summary(proc: subprocess.Popen, log: Path) -> dict:
    out, _ = proc.communicate(timeout=DRIVER_TIMEOUT)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"driver failed ({proc.returncode}): {log.read_text()[-4000:]}"
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    from finrag_pipeline.core.services import start_services

    tmp = tmp_path_factory.mktemp("distributed")
    config_dir = tmp / "config"  # the repo's configuration with a smaller evaluation matrix
    shutil.copytree(ASSETS_CONFIG_DIR, config_dir)
    (config_dir / "eval_matrix.yaml").write_text(EVAL_MATRIX)
    local_home, dist_home = tmp / "local", tmp / "distributed"
    local_log, dist_log = tmp / "local.log", tmp / "distributed.log"
    # Load the code location once first: in a fresh clone that parses the dbt project into its manifest,
    # which every process importing the definitions would otherwise race for (dbt's file lock)
    subprocess.run([sys.executable, "-c", "import finrag_pipeline.definitions"], cwd=REPO_ROOT, check=True,
                   env={**_base_env(local_home, config_dir), "FINRAG_DEPLOYMENT": "local"}, timeout=600)
    # the local-mode reference run starts first and runs beside the distributed one
    local = _driver(["ingest", *map(str, FILINGS)], {**_base_env(local_home, config_dir), "FINRAG_DEPLOYMENT": "local"},
                    local_log)
    drivers = [local]
    svc = start_services()
    try:
        (config_dir / "deployment.yaml").write_text(DEPLOYMENT.format(endpoint=svc.s3_endpoint))
        dist_env = {**_base_env(dist_home, config_dir), **svc.env, "FINRAG_DEPLOYMENT": "distributed"}
        cfg = load_deployment(config_dir, env=dist_env)
        require_services(cfg, env=dist_env)  # Postgres, Redis and the bucket answer
        for name in WORKERS:
            svc.start_worker(name, cfg, extra_env=dist_env)
        svc.wait_for_workers()
        dist_driver = _driver(["ingest", *map(str, FILINGS)], dist_env, dist_log)
        drivers.append(dist_driver)
        dist = _summary(dist_driver, dist_log)
        yield {"local": _summary(local, local_log), "dist": dist, "svc": svc, "env": dist_env, "tmp": tmp,
               "drivers": drivers, "cfg": cfg, "local_paths": FinragPaths.from_env(local_home),
               "dist_paths": FinragPaths.from_env(dist_home)}
    finally:
        for proc in drivers:  # a driver still running (a failure or an interrupt): stop it too
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        svc.close()


def _rows(wh: Warehouse, sql: str) -> list[tuple]:
    return sorted(map(tuple, wh.query_df(sql).astype(str).values.tolist()))


def _ingest_snapshot(paths: FinragPaths, filing_ids: list[str], env: dict[str, str] | None = None) -> dict:
    """What ingest left for these filings: row ids per table, and index entries per filing (read in the
    deployment mode of ``env``: distributed mode's indexes live on the object store)."""
    from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

    wh = Warehouse(paths.warehouse, retry_seconds=60)
    ids = "', '".join(filing_ids)
    snap = {
        "filings": _rows(wh, f"SELECT filing_id, content_sha256, n_pages FROM core.filings WHERE filing_id IN ('{ids}')"),
        "pages": _rows(wh, f"SELECT filing_id, count(*), sum(char_count) FROM core.pages "
                           f"WHERE filing_id IN ('{ids}') GROUP BY 1"),
        "table_rows": _rows(wh, f"SELECT filing_id, table_id, row_index, cells FROM core.table_rows "
                                f"WHERE filing_id IN ('{ids}')"),
        "xbrl_facts": _rows(wh, f"SELECT filing_id, count(*) FROM core.xbrl_facts WHERE filing_id IN ('{ids}') GROUP BY 1"),
        "chunks": _rows(wh, f"SELECT chunk_id, filing_id, is_leaf FROM core.chunks WHERE filing_id IN ('{ids}')"),
        "qa": _rows(wh, f"SELECT qa_id, question_type FROM qa.items WHERE filing_id IN ('{ids}')"),
    }
    env_before = dict(os.environ)
    os.environ.update({k: v for k, v in (env or {}).items() if k.startswith(("FINRAG_", "AWS_"))})
    os.environ.setdefault("FINRAG_DEPLOYMENT", "local")
    os.environ["FINRAG_HOME"] = str(paths.home)  # the resources read FINRAG_HOME
    try:
        finrag, embedder = FinragResource(), EmbedderResource()
        snap["bm25"] = {fid: finrag.tantivy().count(fid) for fid in filing_ids}
        snap["lance"] = {fid: finrag.lance(embedder.get()).count(fid) for fid in filing_ids}
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    return snap


def _metric_means(wh: Warehouse, table: str, keys: str, specs) -> list[tuple]:
    means = ", ".join(f"round(avg({s.name}), 9), count({s.name})" for s in specs)
    return _rows(wh, f"SELECT {keys}, count(*), {means} FROM {table} GROUP BY {keys}")


def test_distributed_run_equals_local_run(deployed):
    local, dist = deployed["local"], deployed["dist"]
    assert local["mode"] == "local" and dist["mode"] == "distributed"
    assert sorted(dist["partitions"]) == sorted(local["partitions"]) == FILING_IDS
    assert dist["ingest_failed"] == [] and local["ingest_failed"] == []
    # automation re-evaluated every filing and rebuilt the marts in both modes
    for summary in (local, dist):
        requested = {tuple(r) for r in summary["automation_requested"]}
        assert {("retrieval_eval", fid) for fid in FILING_IDS} <= requested
        assert ("marts/mart_retriever_leaderboard", None) in requested

    lp, dp = deployed["local_paths"], deployed["dist_paths"]
    local_snap, dist_snap = _ingest_snapshot(lp, FILING_IDS), _ingest_snapshot(dp, FILING_IDS, deployed["env"])
    assert len(local_snap["chunks"]) > 60 and len(local_snap["qa"]) > 20  # a real corpus, not an empty one
    assert dist_snap == local_snap
    for fid in FILING_IDS:  # every leaf chunk is in both indexes, nothing else is
        leaves = sum(1 for _cid, f, leaf in dist_snap["chunks"] if f == fid and leaf == "True")
        assert leaves > 0 and dist_snap["bm25"][fid] == dist_snap["lance"][fid] == leaves

    lw, dw = Warehouse(lp.warehouse), Warehouse(dp.warehouse)
    retrieval_keys = "filing_id, scope, config_name, retriever, k, status"
    answer_keys = "filing_id, config_name, model, response_state"
    local_ret = _metric_means(lw, "eval.retrieval_results", retrieval_keys, RETRIEVAL_METRIC_SPECS)
    assert len(local_ret) >= 3 * 2 * 3
    assert _metric_means(dw, "eval.retrieval_results", retrieval_keys, RETRIEVAL_METRIC_SPECS) == local_ret
    local_ans = _metric_means(lw, "eval.answer_results", answer_keys, ANSWER_METRIC_SPECS)
    assert local_ans and _metric_means(dw, "eval.answer_results", answer_keys, ANSWER_METRIC_SPECS) == local_ans
    # every mart: same rows (timestamps aside)
    marts = lw.query_df("SELECT table_name FROM information_schema.tables WHERE table_schema = 'marts'")["table_name"]
    assert len(marts) >= 5
    for mart in sorted(marts):
        cols = lw.query_df(f"SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'marts' "
                           f"AND table_name = '{mart}' AND data_type NOT LIKE 'TIMESTAMP%' "
                           f"AND column_name NOT IN ('run_id', 'corpus_state', 'dagster_run_id') "
                           f"AND column_name NOT LIKE '%latency%' AND column_name NOT LIKE '%seconds%'")
        # DuckDB's parallel aggregation may sum in another order: equal to 9 decimals, not to the last bit
        select = ", ".join(f'round("{c}", 9)' if t == "DOUBLE" else f'"{c}"' for c, t in cols.values.tolist())
        assert _rows(dw, f"SELECT {select} FROM marts.{mart}") == _rows(lw, f"SELECT {select} FROM marts.{mart}"), mart
    assert dp.warehouse_snapshot.exists() and (dp.reports_dir / "finrag_report.html").exists()


def _celery_steps(instance) -> dict[str, set[str]]:
    """Celery worker -> step keys it executed, from the runs' engine events in the Postgres instance."""
    from dagster import DagsterEventType

    by_worker: dict[str, set[str]] = {}
    for run in instance.get_runs():
        for event in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
            md = event.dagster_event.engine_event_data.metadata if event.dagster_event.engine_event_data else {}
            if "Celery worker" in md:
                by_worker.setdefault(md["Celery worker"].value.split("@")[0], set()).add(event.step_key)
    return by_worker


@pytest.fixture(scope="module")
def instance(deployed):
    import dagster as dg

    env_before = dict(os.environ)
    os.environ["FINRAG_POSTGRES_URL"] = deployed["env"]["FINRAG_POSTGRES_URL"]
    inst = dg.DagsterInstance.from_config(str(deployed["dist_paths"].dagster_home))
    yield inst
    inst.dispose()
    os.environ.clear()
    os.environ.update(env_before)


def test_steps_ran_on_both_celery_workers_and_runs_live_in_postgres(deployed, instance):
    from dagster_postgres import PostgresRunStorage

    assert isinstance(instance.run_storage, PostgresRunStorage)
    runs = instance.get_runs()
    assert {r.tags.get("dagster/partition") for r in runs if r.job_name == "ingest_filing"} == set(FILING_IDS)
    assert all(r.is_success for r in runs)
    by_worker = _celery_steps(instance)
    assert set(by_worker) == set(WORKERS)  # both workers executed steps
    assert {"parsed_filing", "chunks", "vector_index", "qa_set"} <= set().union(*by_worker.values())


def _event_texts(instance, run_id: str) -> list[str]:
    """Every message and error text of a run's events."""
    texts = []
    for event in instance.all_logs(run_id):
        texts.append(event.message or "")
        data = event.dagster_event.event_specific_data if event.dagster_event else None
        if getattr(data, "error", None) is not None:
            texts.append(data.error.to_string())
    return texts


def _kill_during_step(instance, svc, run_started_after: float, whole_worker: bool, timeout: float = 300.0) -> str:
    """Wait until a worker is inside KILLED_STEP of a new ingest run, then SIGKILL either that worker's whole
    process group (main and pool process: its machine is lost) or only its pool process (the step's process,
    as an OOM kill does; the worker stays up). Returns the worker's name."""
    from dagster import DagsterEventType, RunsFilter

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [r for r in instance.get_runs(filters=RunsFilter(tags={"finrag/filing": KILLED_FILING}))
                if r.job_name == "ingest_filing" and instance.get_run_record_by_id(r.run_id).create_timestamp.timestamp()
                > run_started_after]
        for run in runs:
            started = {e.step_key for e in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START)}
            if KILLED_STEP not in started:
                continue
            worker = next(iter(_celery_workers(instance, run.run_id, KILLED_STEP)))
            # killed at once: a re-ingest's qa_set can end within a second on an idle machine (a 1 s wait once
            # killed the worker in a later check instead), and bm25_index and vector_index, run beside it,
            # then end after the failure: the case where dagster-celery's loop spun for ever (docs/DEPLOYMENT.md)
            proc = svc.workers[worker]
            pool = psutil.Process(proc.pid).children(recursive=True)
            assert pool, f"worker {worker} has no pool process"
            if whole_worker:
                os.killpg(proc.pid, signal.SIGKILL)  # each worker is its own session (core/services.py)
                proc.wait(10)
            else:
                for child in pool:
                    child.send_signal(signal.SIGKILL)
            return worker
        time.sleep(0.2)
    raise AssertionError(f"no ingest run of {KILLED_FILING} reached {KILLED_STEP} within {timeout:.0f} s")


def _celery_workers(instance, run_id: str, step_key: str | None = None) -> set[str]:
    """The Celery workers that ran a run's steps (or one step), from its engine events."""
    from dagster import DagsterEventType

    found = set()
    for event in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        data = event.dagster_event.engine_event_data
        if data and "Celery worker" in data.metadata and (step_key is None or event.step_key == step_key):
            found.add(data.metadata["Celery worker"].value.split("@")[0])
    return found


def _reingest_with_a_kill(deployed, instance, whole_worker: bool) -> tuple[dict, str, float, dict]:
    """Re-ingest KILLED_FILING, kill during KILLED_STEP, let the retry run; checks what every kill must leave:
    the first run failed without finishing the step, the retry re-ran it and not what had succeeded, and the
    rows and index entries equal the undisturbed run's. Returns the driver's summary, the killed worker, the
    kill's time and the first run's event texts."""
    from dagster import DagsterEventType

    paths, svc = deployed["dist_paths"], deployed["svc"]
    before = _ingest_snapshot(paths, FILING_IDS, deployed["env"])
    log = deployed["tmp"] / f"reingest-{'worker' if whole_worker else 'pool'}.log"
    t0 = time.time()
    proc = _driver(["reingest", KILLED_FILING], deployed["env"], log)
    deployed["drivers"].append(proc)
    killed_worker = _kill_during_step(instance, svc, t0, whole_worker)
    killed_at = time.time()
    summary = _summary(proc, log)

    (first_run, first_ok), *retries = summary["runs"]
    assert not first_ok, "the killed run must fail"
    assert retries and summary["success"], summary
    first_done = {e.step_key for e in instance.all_logs(first_run, of_type=DagsterEventType.STEP_SUCCESS)}
    assert KILLED_STEP not in first_done
    retry_run = retries[-1][0]
    retried = {e.step_key for e in instance.all_logs(retry_run, of_type=DagsterEventType.STEP_SUCCESS)}
    assert KILLED_STEP in retried and "parsed_filing" not in retried
    retry = instance.get_run_by_id(retry_run)
    assert retry.parent_run_id in {r for r, _ok in summary["runs"]} and retry.root_run_id == first_run
    # the same rows and index entries as before: nothing duplicated, nothing orphaned
    assert _ingest_snapshot(paths, FILING_IDS, deployed["env"]) == before
    step_failures = [e.dagster_event.step_failure_data.error
                     for e in instance.all_logs(first_run, of_type=DagsterEventType.STEP_FAILURE)
                     if e.step_key == KILLED_STEP]
    first_end, retry_end = (instance.get_run_record_by_id(r).end_time for r in (first_run, retry_run))
    print(f"kill of {'the worker' if whole_worker else 'the pool process'} in {KILLED_STEP}: run failed "
          f"{first_end - killed_at:.1f} s later, retry succeeded {retry_end - killed_at:.1f} s later")
    return summary, killed_worker, killed_at, {"texts": " ".join(_event_texts(instance, first_run)),
                                               "end": first_end, "step_failures": step_failures, "done": first_done,
                                               "retry_workers": _celery_workers(instance, retry_run)}


def test_killed_worker_mid_ingest_then_retry_leaves_the_same_rows(deployed, instance):
    """A worker machine lost in the middle of qa_set: its step fails after worker_lost_after_seconds (30 s
    here), not after the visibility timeout (an hour); the retry runs on the surviving worker."""
    svc = deployed["svc"]
    _, killed, killed_at, first = _reingest_with_a_kill(deployed, instance, whole_worker=True)
    assert killed in WORKERS and svc.workers[killed].poll() is not None  # the worker is gone
    assert f"Celery worker {killed}@" in first["texts"] and "answered no ping for 30 s" in first["texts"]
    assert [e.cls_name for e in first["step_failures"]] == ["CeleryWorkerLost"]  # the step failed, by name
    # bounded: the 30 s window, polling and the other in-flight steps' end
    assert first["end"] - killed_at < 30 + 150
    assert first["retry_workers"] == {w for w in WORKERS if w != killed}


def test_killed_step_process_then_retry_leaves_the_same_rows(deployed, instance):
    """The step's process killed under a live worker (an OOM kill): Celery reports WorkerLostError at once,
    the worker stays up, the retry runs the step again."""
    svc = deployed["svc"]
    for name in WORKERS:  # the previous test lost a worker: a replacement machine joins
        if svc.workers[name].poll() is not None:
            svc.start_worker(name, deployed["cfg"], extra_env=deployed["env"])
    svc.wait_for_workers()
    _, killed, killed_at, first = _reingest_with_a_kill(deployed, instance, whole_worker=False)
    assert svc.workers[killed].poll() is None  # the worker survived
    assert "WorkerLostError" in first["texts"] and "answered no ping" not in first["texts"]
    # the step failed with Celery's error (not a run that ended with the step in an unknown state)
    assert len(first["step_failures"]) == 1, f"{KILLED_STEP} has no step failure event: {first['texts'][-2000:]}"
    failure = first["step_failures"][0]
    assert failure.cls_name == "WorkerLostError" and "signal 9 (SIGKILL)" in failure.message
    # the steps beside it still ran to their end in the failed run, the index checks included
    assert {"bm25_index", "vector_index", "bm25_index_bm25_index_rows_equal_leaf_chunks",
            "vector_index_vector_index_rows_equal_leaf_chunks"} <= first["done"]
    assert first["end"] - killed_at < 150
