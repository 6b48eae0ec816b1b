"""Which storage the pipeline uses: local folders (default) or the object store of distributed mode.

:func:`object_store_config` is the ONE place storage code asks for it. It calls dist-orch's
``core.deployment.load_deployment`` when that module exists; until then it reads the same sources
(env ``FINRAG_DEPLOYMENT`` overriding ``mode`` in ``assets_config/deployment.yaml``, and that file's
``distributed.object_store`` mapping) so both agree. Distributed mode without an object store (``null``)
keeps data on a shared filesystem: this function then returns None too and storage stays local-style.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from finrag_pipeline.core.config import config_path
from finrag_pipeline.core.storage.config import ObjectStoreConfig

MODES = ("local", "distributed")


class DeploymentConfigError(RuntimeError):
    """The deployment mode or the object store configuration is invalid."""


def object_store_config(config_dir: str | os.PathLike | None = None) -> ObjectStoreConfig | None:
    """The object store of distributed mode; None in local mode (the default)."""
    try:
        from finrag_pipeline.core.deployment import load_deployment  # type: ignore[import-not-found]
    except ImportError:
        load_deployment = None
    if load_deployment is not None:
        try:
            cfg = load_deployment(config_dir)
        except Exception as exc:  # one type for callers: a configuration problem, never a file's fault
            raise DeploymentConfigError(f"deployment configuration: {exc}") from exc
        if cfg.mode != "distributed" or cfg.object_store is None:
            return None
        return ObjectStoreConfig.model_validate(cfg.object_store.model_dump())
    return _object_store_from_yaml(Path(config_dir) / "deployment.yaml" if config_dir else config_path("deployment.yaml"))


def _object_store_from_yaml(path: Path) -> ObjectStoreConfig | None:
    raw = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    mode = os.environ.get("FINRAG_DEPLOYMENT") or raw.get("mode") or "local"
    if mode not in MODES:
        raise DeploymentConfigError(f"deployment mode {mode!r} is not one of {MODES} (FINRAG_DEPLOYMENT or {path})")
    section = (raw.get("distributed") or {}).get("object_store")
    if mode == "local" or not section:
        return None
    try:
        return ObjectStoreConfig.model_validate(section)
    except ValueError as exc:
        raise DeploymentConfigError(f"{path}: object_store: {exc}") from exc
