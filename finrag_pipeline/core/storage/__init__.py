"""Storage for distributed mode: an S3-compatible object store and what finrag keeps on it.

Local mode (the default) uses none of this. The API other code calls:

* ``config.ObjectStoreConfig``: the pydantic model of ``deployment.yaml``'s ``object_store`` section.
* ``mode.object_store_config(config_dir=None) -> ObjectStoreConfig | None``: None in local mode.
* ``object_store.ObjectStore(cfg)``: ``check()``, ``ensure_bucket()``, ``put_bytes/put_file/get_bytes/
  get_file/fetch_cached/head/exists/list/delete/delete_many``, ``put_content_addressed``,
  ``read_pointer`` / ``publish_pointer`` (atomic, conditional on the ETag read).

The storage layout (keys, pointers, publishers) is documented in docs/DEPLOYMENT.md, "Storage layout".
"""

from finrag_pipeline.core.storage.config import ObjectStoreConfig, ObjectStoreCredentialsMissing
from finrag_pipeline.core.storage.mode import object_store_config
from finrag_pipeline.core.storage.object_store import (
    ObjectNotFound,
    ObjectStore,
    ObjectStoreAuthError,
    ObjectStoreError,
    ObjectStoreUnavailable,
    PointerConflict,
)

__all__ = [
    "ObjectNotFound", "ObjectStore", "ObjectStoreAuthError", "ObjectStoreConfig", "ObjectStoreCredentialsMissing",
    "ObjectStoreError", "ObjectStoreUnavailable", "PointerConflict", "object_store_config",
]
