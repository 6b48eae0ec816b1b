"""A step whose Celery worker vanished fails within ``worker_lost_after_seconds`` (core/worker_watch.py):
first against a fake clock and fake results, then against a real Redis and a real Celery worker that is
killed (its whole process group, as when its machine is lost) in the middle of a task."""

import os
import signal
import subprocess
import sys
import time

import dagster as dg
import pytest
from pydantic import ValidationError

from finrag_pipeline.core.deployment import CelerySettings, celery_executor_config, load_deployment
from finrag_pipeline.core.worker_watch import CeleryWorkerLost, WatchedResult, WorkerWatch, celery_ping


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Pinger:
    """Records every broadcast; ``alive`` is who answers."""

    def __init__(self, alive: set[str]):
        self.alive = alive
        self.calls: list[list[str]] = []

    def __call__(self, hostnames: list[str]) -> set[str]:
        self.calls.append(hostnames)
        return self.alive & set(hostnames)


class FakeResult:
    def __init__(self, state: str, hostname: str | None = None, value=None):
        self.id, self.state, self.value, self.revoked = "task-1", state, value, 0
        self.info = {"hostname": hostname, "pid": 42} if hostname else None

    def ready(self) -> bool:
        return self.state in ("SUCCESS", "FAILURE")

    def get(self):
        return self.value

    def revoke(self, **kwargs):
        self.revoked += 1


def test_a_silent_worker_is_lost_only_after_the_window_and_an_answering_one_never():
    clock, pinger = Clock(), Pinger(alive={"w2@vm"})
    watch = WorkerWatch(pinger, lost_after_seconds=30, ping_interval_seconds=5, clock=clock)
    timeline = []
    for t in range(0, 41, 5):
        clock.now = t
        timeline.append((t, watch.is_lost("w1@vm"), watch.is_lost("w2@vm")))
    # w1 never answers: silent 30 s is not yet lost, 35 s is; w2 answers every ping
    assert [t for t, w1_lost, _ in timeline if w1_lost] == [35, 40]
    assert not any(w2_lost for *_, w2_lost in timeline)
    # one broadcast per interval for every watched worker (not one per question)
    assert len(pinger.calls) == 9 and pinger.calls[-1] == ["w1@vm", "w2@vm"]


def test_a_worker_that_answers_again_is_no_longer_counted_silent():
    clock, pinger = Clock(), Pinger(alive=set())
    watch = WorkerWatch(pinger, lost_after_seconds=20, ping_interval_seconds=5, clock=clock)
    for t in (0, 5, 10, 15):
        clock.now = t
        assert not watch.is_lost("w1@vm")
    pinger.alive.add("w1@vm")  # a busy broker delayed the replies: it answers now
    clock.now = 20
    assert watch.silent_for("w1@vm") == 0 and not watch.is_lost("w1@vm")
    pinger.alive.clear()
    clock.now = 40
    assert watch.silent_for("w1@vm") == 20 and not watch.is_lost("w1@vm")
    clock.now = 45
    assert watch.is_lost("w1@vm")


@pytest.mark.parametrize("lost_after, interval", [(5, 5), (10, 0)])
def test_a_window_without_several_pings_is_rejected(lost_after, interval):
    with pytest.raises(ValueError, match="must exceed ping_interval_seconds"):
        WorkerWatch(Pinger(set()), lost_after_seconds=lost_after, ping_interval_seconds=interval)


def test_watched_result_fails_the_step_of_a_lost_worker_and_revokes_its_task():
    clock, pinger = Clock(), Pinger(alive=set())
    watch = WorkerWatch(pinger, lost_after_seconds=10, ping_interval_seconds=2, clock=clock)
    queued, started = FakeResult("PENDING"), FakeResult("STARTED", hostname="w1@vm")
    watched_queued, watched = WatchedResult(queued, watch, "vector_index"), WatchedResult(started, watch, "qa_set")
    for t in range(0, 11, 2):
        clock.now = t
        assert not watched.ready() and not watched_queued.ready()
    assert pinger.calls and all(call == ["w1@vm"] for call in pinger.calls)  # a queued step has no worker to ping
    clock.now = 12
    assert watched.ready() and watched.lost_worker == "w1@vm" and started.revoked == 1
    with pytest.raises(CeleryWorkerLost, match=r"step 'qa_set': Celery worker w1@vm answered no ping for 10 s"):
        watched.get()
    assert not watched_queued.ready() and queued.revoked == 0  # the queued step waits for a live worker


def test_watched_result_passes_a_finished_step_through():
    watch = WorkerWatch(Pinger(set()), lost_after_seconds=10, ping_interval_seconds=2, clock=Clock())
    done = FakeResult("SUCCESS", value=["event"])
    watched = WatchedResult(done, watch, "chunks")
    assert watched.ready() and watched.get() == ["event"] and done.revoked == 0
    watched.revoke()
    assert done.revoked == 1


def test_settings_need_several_pings_per_window_and_reach_the_celery_config():
    with pytest.raises(ValidationError, match="at least twice ping_interval_seconds"):
        CelerySettings(worker_lost_after_seconds=8, ping_interval_seconds=5)
    env = {"FINRAG_DEPLOYMENT": "distributed", "FINRAG_POSTGRES_URL": "postgresql://u@h/db",
           "FINRAG_BROKER_URL": "redis://127.0.0.1:1/0"}
    source = celery_executor_config(load_deployment(env=env))["config_source"]
    assert source["task_track_started"] is True and source["task_acks_late"] is True
    assert source["broker_transport_options"] == {"visibility_timeout": 3600, "unacked_restore_interval": 10,
                                                  "unacked_restore_throttle": 1}


# ---------------------------------------------------------------------------------------------
# dagster-celery's execution loop with our executor, Celery in eager mode (steps run in this process,
# no broker): one step's task fails as when its pool process is SIGKILLed under a live worker

POOL_KILLED_STEP = "questions"


@dg.op
def parse() -> int:
    return 1


@dg.op
def questions(parsed: int) -> int:  # its task fails with WorkerLostError before the op reports anything
    return parsed


@dg.op
def index(parsed: int) -> int:
    return parsed + 1


@dg.op
def after_index(indexed: int) -> int:  # ready only once its sibling's task has already failed
    return indexed + 1


@dg.op
def after_questions(asked: int) -> int:
    return asked


@dg.executor(name="finrag_celery_eager", requirements=dg.multiple_process_executor_requirements())
def eager_watched_celery(_init_context):
    from dagster._core.execution.retries import RetryMode

    from finrag_pipeline.defs.executors import _watched_celery_executor_class

    return _watched_celery_executor_class()(
        lost_after_seconds=30, ping_interval_seconds=2, broker="memory://", backend="cache+memory://",
        config_source={"task_always_eager": True}, include=[], retries=RetryMode.ENABLED)


@dg.job(executor_def=eager_watched_celery)
def pool_killed_job():
    parsed = parse()
    after_questions(questions(parsed))
    after_index(index(parsed))


RUN_BOUND_SECONDS = 300


def _stack_of(thread) -> str:
    import traceback

    frame = sys._current_frames().get(thread.ident)  # documented in the sys module for debugging, as here
    return "".join(traceback.format_stack(frame)) if frame is not None else "(thread has ended)"


class WorkerLostResult:
    """What Celery's AsyncResult is after the pool process running the task was SIGKILLed."""

    id, state = "task-killed", "FAILURE"

    def ready(self) -> bool:
        return True

    def get(self):
        from billiard.exceptions import WorkerLostError

        raise WorkerLostError("Worker exited prematurely: signal 9 (SIGKILL) Job: 7.")

    def revoke(self, **kwargs):
        pass


def test_a_step_whose_pool_process_was_killed_fails_the_run_and_its_sibling_branch_still_runs(monkeypatch):
    """The defect this reproduces: dagster-celery's loop took the raised WorkerLostError as a worker error,
    stopped submitting steps without abandoning them and skipped its sleep, so ``after_index`` (ready after
    the failure) was never run and the run process spun at full CPU for ever."""
    import threading

    from dagster_celery import executor as celery_executor

    real_submit = celery_executor._submit_task

    def submit(app, plan_context, step, queue, priority, known_state):
        if step.key == POOL_KILLED_STEP:
            return WorkerLostResult()
        return real_submit(app, plan_context, step, queue, priority, known_state)

    monkeypatch.setattr(celery_executor, "_submit_task", submit)
    outcome = {}
    with dg.instance_for_test() as instance:
        def run():
            outcome["result"] = dg.execute_job(dg.reconstructable(pool_killed_job), instance, raise_on_error=False)

        runner = threading.Thread(target=run, daemon=True)  # daemon: a spinning loop must not hold pytest
        runner.start()
        # The defect is a loop that never ends, so the bound is generous: five steps take ~6-9 s alone, but a
        # full-suite process on a loaded 2-core machine ran them for over 60 s. A run still going at the bound
        # reports where it is, so a slow run and a spinning one can be told apart.
        runner.join(RUN_BOUND_SECONDS)
        assert not runner.is_alive(), (f"the run never ended within {RUN_BOUND_SECONDS} s (the execution loop "
                                       f"spins?); it is at:\n{_stack_of(runner)}")
        result = outcome["result"]
        assert not result.success
        failures = [e for e in result.all_events if e.is_step_failure]
        assert [e.step_key for e in failures] == [POOL_KILLED_STEP]
        error = failures[0].step_failure_data.error
        assert error.cls_name == "WorkerLostError" and "signal 9 (SIGKILL)" in error.message
        succeeded = {e.step_key for e in result.all_events if e.is_step_success}
        assert succeeded == {"parse", "index", "after_index"}  # the sibling branch ran to its end
        assert "after_questions" not in {e.step_key for e in result.all_events if e.is_step_start}
        run_failure = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert len(run_failure) == 1 and "unknown state" not in run_failure[0].message


# ---------------------------------------------------------------------------------------------
# Real Redis, real Celery worker

APP = """\
import time
from celery import Celery

app = Celery("watch", broker="{url}", backend="{url}")
app.conf.update(task_acks_late=True, task_track_started=True, worker_prefetch_multiplier=1,
                broker_transport_options={{"visibility_timeout": 3600}})


@app.task(name="nap")
def nap(seconds):
    time.sleep(seconds)
    return seconds
"""


@pytest.fixture
def redis_and_app(tmp_path):
    import shutil

    from finrag_pipeline.core.services import start_services

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it)")
    svc = start_services(postgres=False, s3=False)
    (tmp_path / "watchapp.py").write_text(APP.format(url=svc.broker_url))
    sys.path.insert(0, str(tmp_path))
    import watchapp

    try:
        yield svc, watchapp, tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("watchapp", None)
        svc.close()


def _start_worker(tmp_path, name: str) -> subprocess.Popen:
    log = (tmp_path / f"{name}.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "watchapp", "worker", "--concurrency=1", "-n",
                             f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout:.0f} s")


@pytest.mark.distributed
def test_a_killed_worker_fails_its_step_in_bounded_time_and_a_busy_one_does_not(redis_and_app):
    _svc, app_module, tmp_path = redis_and_app
    app = app_module.app
    worker = _start_worker(tmp_path, "doomed")
    try:
        _wait(lambda: app.control.ping(timeout=0.5), 60, "the worker answers pings")
        watch = WorkerWatch(celery_ping(app, timeout=1.0), lost_after_seconds=6, ping_interval_seconds=1)
        # a healthy task running longer than the window: its worker answers, so it is never taken as lost
        busy = WatchedResult(app_module.nap.delay(9), watch, "busy_step")
        _wait(lambda: busy._result.state == "STARTED", 30, "the task starts")
        _wait(busy.ready, 30, "the healthy task finishes")
        assert busy.lost_worker is None and busy.get() == 9

        doomed = WatchedResult(app_module.nap.delay(600), watch, "qa_set")
        _wait(lambda: doomed._result.state == "STARTED", 30, "the task starts")
        os.killpg(worker.pid, signal.SIGKILL)  # the whole worker, as when its machine is lost
        worker.wait(10)
        killed_at = time.monotonic()
        _wait(doomed.ready, 30, "the step of the lost worker is given up")
        waited = time.monotonic() - killed_at
        assert 5 <= waited <= 15, waited
        assert doomed.lost_worker.startswith("doomed@")
        with pytest.raises(CeleryWorkerLost, match="doomed@.* answered no ping"):
            doomed.get()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
