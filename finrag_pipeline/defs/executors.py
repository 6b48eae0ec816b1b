"""The executor of every job, chosen by the deployment configuration alone (core/deployment.py):
local mode keeps Dagster's default executor; distributed mode sends each step to dagster-celery workers
through the broker named in deployment.yaml."""

import dagster as dg

from finrag_pipeline.core.deployment import DeploymentConfig, celery_executor_config, load_deployment

CELERY_EXECUTOR_NAME = "finrag_celery"


def is_distributed_executor(executor: dg.ExecutorDefinition | None) -> bool:
    """Steps run outside the run's process (on Celery workers): the run must execute out of process."""
    return executor is not None and executor.name == CELERY_EXECUTOR_NAME


def deployment_executor(cfg: DeploymentConfig | None = None) -> dg.ExecutorDefinition | None:
    """None (the Definitions' default executor) in local mode; the configured Celery executor otherwise."""
    cfg = cfg or load_deployment()
    if not cfg.distributed:
        return None
    from dagster_celery import celery_executor

    return celery_executor.configured(celery_executor_config(cfg), name=CELERY_EXECUTOR_NAME)
