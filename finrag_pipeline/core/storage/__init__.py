"""Where finrag keeps filings, indexes and result rows: local folders, or an S3-compatible object store.

Import the submodules directly (this package imports nothing, so importing ``storage.errors`` does not load
boto3):

* ``seam.storage_for(paths, config_dir=None) -> Storage``: THE choice between ``seam.LocalStorage`` (local
  folders, the default) and ``distributed.DistributedStorage`` (the object store), made once where resources
  are built; both have the same methods, so no caller branches on the mode.
* ``core/object_store_config.ObjectStoreConfig`` (outside this package, so that core/deployment.py can
  embed it without importing storage): the pydantic model of deployment.yaml's ``distributed.object_store``.
* ``mode.object_store_config(config_dir=None) -> ObjectStoreConfig | None``: None unless distributed
  mode has an object store.
* ``distributed.DistributedStorage``: the object-store side (filing bytes, LanceDB, embedding cache, BM25
  shards/publisher/snapshots, warehouse results/publisher).
* ``object_store.ObjectStore(cfg)``: ``check()``, ``ensure_bucket()``, ``put_bytes/put_file/get_bytes/
  get_file/fetch_cached/head/exists/list/delete/delete_many``, ``put_content_addressed``,
  ``read_pointer`` / ``publish_pointer`` (atomic, conditional on the ETag read).
* ``errors``: ObjectStoreError and its kinds (Unavailable, AuthError, NotFound, PointerConflict,
  FilingBytesMismatch).

The storage layout (keys, pointers, publishers) is documented in docs/DEPLOYMENT.md, "Storage layout".
"""
