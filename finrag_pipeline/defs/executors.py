"""The executor of every job, chosen by the deployment configuration alone (core/deployment.py):
local mode keeps Dagster's default executor; distributed mode sends each step to dagster-celery workers
through the broker named in deployment.yaml, and fails a step whose worker vanished after
``celery.worker_lost_after_seconds`` instead of waiting for the broker's visibility timeout
(core/worker_watch.py; docs/DEPLOYMENT.md, Failure modes). A step whose Celery task failed outside the step
(its pool process killed: WorkerLostError; its worker lost) fails as a Dagster step, so the run ends."""

import traceback

import dagster as dg

from finrag_pipeline.core.deployment import DeploymentConfig, celery_executor_config, load_deployment

CELERY_EXECUTOR_NAME = "finrag_celery"


def is_distributed_executor(executor: dg.ExecutorDefinition | None) -> bool:
    """Steps run outside the run's process (on Celery workers): the run must execute out of process."""
    return executor is not None and executor.name == CELERY_EXECUTOR_NAME


class StepFailingResult:
    """A step's Celery result for dagster-celery's loop (it calls ``ready``, ``get`` and ``revoke``) whose
    task failure is returned as the step's failure event instead of raised.

    The loop (dagster-celery 0.29 ``core_celery_execution_loop``) records an exception from ``get()`` as a
    "worker error": from then on it submits no step but still waits for the plan to complete, and it skips
    its sleep. A step that becomes ready after that (a sibling of the failed step finishing later) is never
    submitted nor abandoned, so the run process spins at full CPU for ever and no run retry starts. A step
    failure event is what the loop handles like any failed step: downstream steps are abandoned, the others
    run, the run fails naming the error. ``log_failure_or_retry_event_after_error`` is how Dagster reports a
    step that died outside its own code (it honours an op's retry policy)."""

    def __init__(self, result, executor, step_context, known_state):
        self._result = result
        self._executor = executor
        self._step_context = step_context
        self._known_state = known_state

    @property
    def id(self) -> str:
        return self._result.id

    def ready(self) -> bool:
        return self._result.ready()

    def get(self) -> list[str]:
        from celery.exceptions import TaskRevokedError
        from dagster_shared.error import SerializableErrorInfo

        try:
            return self._result.get()
        except TaskRevokedError:  # the run was terminated: the loop's own revoked-task path applies
            raise
        except Exception as exc:  # noqa: BLE001 - WorkerLostError, CeleryWorkerLost, a task that could not run
            error = SerializableErrorInfo.from_traceback(traceback.TracebackException.from_exception(exc))
            event = self._executor.log_failure_or_retry_event_after_error(self._step_context, error,
                                                                           self._known_state)
            return [dg.serialize_value(event)]

    def revoke(self, **kwargs) -> None:
        self._result.revoke(**kwargs)


def _watched_celery_executor_class():
    from dagster_celery.executor import CeleryExecutor

    class WatchedCeleryExecutor(CeleryExecutor):
        """dagster-celery's executor whose step results watch the worker that runs them."""

        def __init__(self, *, lost_after_seconds: float, ping_interval_seconds: float, **kwargs):
            super().__init__(**kwargs)
            self.lost_after_seconds = lost_after_seconds
            self.ping_interval_seconds = ping_interval_seconds

        def execute(self, plan_context, execution_plan):
            # Kept private import (3 of 3, docs/BENCHMARKS.md "Private Dagster APIs"): dagster-celery's one
            # step-submission function, wrapped (never copied: it packs Dagster's internal ExecuteStepArgs) so a
            # step whose worker died fails within worker_lost_after_seconds instead of the broker's visibility
            # timeout (an hour), and a task error outside the step ends the run instead of spinning the loop
            # (upstream: dagster-io/dagster#2084, errors outside the step are not handled; source
            # python_modules/libraries/dagster-celery/dagster_celery/executor.py). Measured in
            # docs/DEPLOYMENT.md "Failure modes"; test_dagster_private_api.py pins its signature.
            from dagster_celery.core_execution_loop import core_celery_execution_loop
            from dagster_celery.executor import _submit_task

            from finrag_pipeline.core.worker_watch import WatchedResult, WorkerWatch, celery_ping

            watches = {}  # one per Celery app (the loop makes one app per run)

            def submit(app, job_context, step, queue, priority, known_state):
                result = _submit_task(app, job_context, step, queue, priority, known_state)
                watch = watches.get(id(app))
                if watch is None:
                    ping = celery_ping(app, timeout=min(3.0, self.ping_interval_seconds))
                    watch = watches[id(app)] = WorkerWatch(ping, self.lost_after_seconds, self.ping_interval_seconds)
                return StepFailingResult(WatchedResult(result, watch, step.key), self, job_context.for_step(step),
                                         known_state)

            return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=submit)

    return WatchedCeleryExecutor


def deployment_executor(cfg: DeploymentConfig | None = None) -> dg.ExecutorDefinition | None:
    """None (the Definitions' default executor) in local mode; the configured Celery executor otherwise."""
    cfg = cfg or load_deployment()
    if not cfg.distributed:
        return None
    from dagster_celery import celery_executor

    celery = cfg.settings.celery

    @dg.executor(name=CELERY_EXECUTOR_NAME, config_schema=celery_executor.config_schema,
                 requirements=dg.multiple_process_executor_requirements())
    def finrag_celery(init_context):
        conf = init_context.executor_config
        # dagster-celery's public executor reads the config (retries included); ours watches its workers
        plain = celery_executor.executor_creation_fn(init_context)
        return _watched_celery_executor_class()(
            lost_after_seconds=celery.worker_lost_after_seconds, ping_interval_seconds=celery.ping_interval_seconds,
            broker=conf.get("broker"), backend=conf.get("backend"), config_source=conf.get("config_source"),
            include=conf.get("include"), retries=plain.retries)

    return finrag_celery.configured(celery_executor_config(cfg), name=CELERY_EXECUTOR_NAME)
