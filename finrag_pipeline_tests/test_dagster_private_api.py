"""The three private Dagster symbols the product still uses, pinned (docs/BENCHMARKS.md "Private Dagster APIs").

Each test names the symbol and the signature the calling code relies on, so a Dagster or dagster-celery
upgrade that moves or changes one fails here, by name, before a wave or a distributed run breaks somewhere
less obvious. The last test keeps the list at three: a new ``dagster._`` import needs its reason written
down (and a test here).
"""

import inspect
import re
from pathlib import Path

import dagster as dg

from finrag_pipeline.core.paths import REPO_ROOT


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_the_warm_launcher_runs_a_forked_run_with_dagsters_own_run_body():
    from finrag_pipeline.defs.warm_launcher import run_body

    execute_run_body, capture_interrupts = run_body()
    # called as execute_run_body(run_id, instance, write_stream_fn, set_exit_code_on_failure=False) -> int
    assert _params(execute_run_body) == ["run_id", "instance", "write_stream_fn", "set_exit_code_on_failure"]
    assert inspect.signature(execute_run_body).return_annotation in (int, "int")
    # a context manager taking no argument (SIGINT becomes a cancelled run at the next step boundary)
    assert _params(capture_interrupts) == []
    with capture_interrupts():
        pass
    # the public pieces it is used with
    assert issubclass(__import__("finrag_pipeline.defs.warm_launcher", fromlist=["x"]).WarmRunLauncher,
                      dg.DefaultRunLauncher)
    assert callable(dg.DagsterInstance.from_ref)


def test_runs_executed_here_get_the_code_locations_remote_origin():
    from finrag_pipeline.defs.local_runs import REPOSITORY_NAME, code_location, remote_job_origin

    # create_run_for_job is where execute_in_process / execute_job create the run; the origin is handed to it
    assert "remote_job_origin" in _params(dg.DagsterInstance.create_run_for_job)
    origin = remote_job_origin("ingest_filing")
    assert origin.job_name == "ingest_filing"
    assert origin.repository_origin.repository_name == REPOSITORY_NAME
    assert origin.repository_origin.code_location_origin.location_name == code_location()[0]
    assert origin.repository_origin.get_label() == "__repository__@finrag_pipeline"
    # stored with every run: it must survive Dagster's own serialization
    assert dg.deserialize_value(dg.serialize_value(origin)) == origin


def test_the_celery_executor_wraps_dagster_celerys_step_submission():
    from dagster_celery.core_execution_loop import core_celery_execution_loop
    from dagster_celery.executor import CeleryExecutor, _submit_task

    # called as _submit_task(app, job_context, step, queue, priority, known_state) -> AsyncResult
    assert _params(_submit_task) == ["app", "plan_context", "step", "queue", "priority", "known_state"]
    assert "step_execution_fn" in _params(core_celery_execution_loop)
    assert {"retries", "broker", "backend", "include", "config_source"} <= set(_params(CeleryExecutor.__init__))


PRIVATE = re.compile(r"^\s*(from|import)\s+(dagster\._\S*|dagster_celery\.\S+ import .*\b_\w+)", re.M)


def test_at_most_three_private_imports_each_with_a_written_reason():
    found = []
    for path in sorted((REPO_ROOT / "finrag_pipeline").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in PRIVATE.finditer(text):
            before = text[:match.start()]
            # the reason sits in the comment or docstring just above the import
            window = before[-1500:]
            found.append((str(Path(path).relative_to(REPO_ROOT)), match.group(0).strip(),
                          "Kept private import" in window and "BENCHMARKS.md" in window))
    assert len(found) <= 3, found
    assert all(reason for *_, reason in found), [f for f in found if not f[2]]
    assert {f[0] for f in found} == {"finrag_pipeline/defs/warm_launcher.py", "finrag_pipeline/defs/local_runs.py",
                                     "finrag_pipeline/defs/executors.py"}
