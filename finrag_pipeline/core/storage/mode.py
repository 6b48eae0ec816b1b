"""Which object store the deployment gives the pipeline: the one place storage code asks for it.

The deployment (mode, object store) is read by ``core.deployment.load_deployment`` alone (env
``FINRAG_DEPLOYMENT`` over deployment.yaml's ``mode``). Distributed mode without an object store (``null``)
keeps data on a shared filesystem: :func:`object_store_config` then returns None and storage stays local-style.
"""

from __future__ import annotations

import os

from finrag_pipeline.core.object_store_config import ObjectStoreConfig


class DeploymentConfigError(RuntimeError):
    """The deployment mode or the object store configuration is invalid."""


def object_store_config(config_dir: str | os.PathLike | None = None) -> ObjectStoreConfig | None:
    """The object store of distributed mode; None in local mode (the default)."""
    from finrag_pipeline.core.deployment import load_deployment

    try:
        cfg = load_deployment(config_dir)
    except Exception as exc:  # one type for callers: a configuration problem, never a file's fault
        raise DeploymentConfigError(f"deployment configuration: {exc}") from exc
    if cfg.mode != "distributed" or cfg.object_store is None:
        return None
    return ObjectStoreConfig.model_validate(cfg.object_store.model_dump())
