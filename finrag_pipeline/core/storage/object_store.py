"""An S3-compatible object store (boto3): put/get/list/delete and an atomic pointer publish.

Every key is relative to ``ObjectStoreConfig.prefix``. Guarantees the rest of finrag builds on:

* A PUT is atomic: a reader sees the whole old object or the whole new one, never a part. A large
  file goes up as a multipart upload, which is invisible until completed, so a worker killed mid-upload
  leaves nothing a ``list``/``get`` can see (S3 expires the dangling parts by lifecycle rule).
* :meth:`ObjectStore.put_content_addressed` writes under the sha256 of the bytes: a retried or duplicated
  step writes the same key with the same bytes (idempotent), and an object never changes once named.
* :meth:`ObjectStore.publish_pointer` replaces a small JSON pointer in one PUT, conditional on the ETag
  the publisher last read (``If-Match``) or on absence (``If-None-Match: *``): two publishers racing
  cannot silently overwrite each other; the loser gets :class:`PointerConflict`.

Errors say what is wrong: :class:`ObjectStoreUnavailable` (endpoint unreachable, bucket missing),
:class:`ObjectStoreAuthError` (credentials refused), :class:`ObjectNotFound` (a key that is not there),
:class:`~finrag_pipeline.core.object_store_config.ObjectStoreCredentialsMissing` (env var unset).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from finrag_pipeline.core.object_store_config import ObjectStoreConfig
from finrag_pipeline.core.storage.errors import (
    ObjectNotFound,
    ObjectStoreAuthError,
    ObjectStoreError,
    ObjectStoreUnavailable,
    PointerConflict,
)

_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken",
               "ExpiredToken", "403", "Forbidden", "InvalidClientTokenId"}
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
_ANY = object()  # publish_pointer: no precondition


@dataclass(frozen=True)
class ObjectInfo:
    key: str                 # relative to the configured prefix
    size: int
    etag: str
    last_modified: datetime


@dataclass(frozen=True)
class Pointer:
    payload: dict[str, Any]
    etag: str


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ObjectStore:
    """Handle on one bucket + prefix. Cheap to build; thread-safe (boto3 clients are)."""

    def __init__(self, config: ObjectStoreConfig, *, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                 max_attempts: int = 3):
        self.config = config
        access, secret = config.credentials()
        self._client = boto3.session.Session().client(
            "s3", endpoint_url=config.endpoint_url, region_name=config.region,
            aws_access_key_id=access, aws_secret_access_key=secret,
            config=BotoConfig(connect_timeout=connect_timeout, read_timeout=read_timeout,
                              retries={"max_attempts": max_attempts, "mode": "standard"},
                              s3={"addressing_style": "path"} if config.endpoint_url else {}))

    @property
    def bucket(self) -> str:
        return self.config.bucket

    def _key(self, key: str) -> str:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"invalid object key {key!r}")
        return self.config.full_key(key)

    def _relative(self, full_key: str) -> str:
        prefix = self.config.full_key("")
        return full_key[len(prefix):] if prefix and full_key.startswith(prefix) else full_key

    def _call(self, what: str, fn: Any, /, **kwargs: Any) -> Any:
        """``fn(**kwargs)`` with botocore's failures turned into finrag's errors (one clear line)."""
        where = f"{self.config.endpoint_url or 'AWS S3'} bucket {self.bucket}"
        try:
            return fn(**kwargs)
        except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError) as exc:
            raise ObjectStoreUnavailable(f"object store unreachable ({what}): {where}: {exc}") from exc
        except ClientError as exc:
            err = exc.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "NoSuchBucket":
                raise ObjectStoreUnavailable(f"object store: bucket {self.bucket} does not exist at {where}") from exc
            if code in _AUTH_CODES or status == 403:
                raise ObjectStoreAuthError(
                    f"object store refused the credentials from ${self.config.access_key_env}/"
                    f"${self.config.secret_key_env} ({what}, {where}): {code} {err.get('Message', '')}".rstrip()
                ) from exc
            if code in _MISSING_CODES or status == 404:
                raise ObjectNotFound(f"{what}: no such object in {where}") from exc
            if code in {"PreconditionFailed", "412", "ConditionalRequestConflict"} or status in (409, 412):
                raise PointerConflict(f"{what}: changed by another writer ({code})") from exc
            raise ObjectStoreError(f"object store error ({what}, {where}): {code} {err.get('Message', '')}") from exc
        except BotoCoreError as exc:
            raise ObjectStoreUnavailable(f"object store failure ({what}): {where}: {exc}") from exc

    # ---- bucket -----------------------------------------------------------------------------

    def check(self) -> None:
        """Raise a clear error unless the bucket is reachable with these credentials."""
        self._call("check bucket", self._client.head_bucket, Bucket=self.bucket)

    def ensure_bucket(self) -> None:
        """Create the bucket if it is missing (development servers; production buckets exist already)."""
        try:
            self.check()
        except ObjectStoreUnavailable as exc:
            if "does not exist" not in str(exc) and "no such object" not in str(exc):
                raise
            kwargs: dict[str, Any] = {"Bucket": self.bucket}
            if self.config.region != "us-east-1":
                kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.config.region}
            self._call("create bucket", self._client.create_bucket, **kwargs)
        except ObjectNotFound:  # head_bucket answers a bare 404 for a missing bucket
            kwargs = {"Bucket": self.bucket}
            if self.config.region != "us-east-1":
                kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.config.region}
            self._call("create bucket", self._client.create_bucket, **kwargs)

    # ---- objects ----------------------------------------------------------------------------

    def put_bytes(self, key: str, data: bytes, *, metadata: Mapping[str, str] | None = None) -> str:
        """Write ``data`` at ``key`` (replacing it) in one atomic PUT; returns the new ETag."""
        resp = self._call(f"put {key}", self._client.put_object, Bucket=self.bucket, Key=self._key(key),
                          Body=data, Metadata=dict(metadata or {}))
        return str(resp["ETag"])

    def put_file(self, key: str, path: str | os.PathLike) -> None:
        """Upload a local file to ``key`` (multipart when large: invisible until complete)."""
        self._call(f"upload {key}", self._client.upload_file, Filename=str(path), Bucket=self.bucket,
                   Key=self._key(key))

    def put_content_addressed(self, directory: str, data: bytes, *, suffix: str = "") -> str:
        """Write ``data`` at ``directory/<sha256><suffix>`` unless it is there already; returns the key."""
        key = f"{directory.strip('/')}/{sha256_bytes(data)}{suffix}"
        if not self.exists(key):
            self.put_bytes(key, data)
        return key

    def get_bytes(self, key: str) -> bytes:
        resp = self._call(f"get {key}", self._client.get_object, Bucket=self.bucket, Key=self._key(key))
        return resp["Body"].read()

    def get_file(self, key: str, dest: str | os.PathLike) -> Path:
        """Download ``key`` to ``dest`` atomically (temp file, then rename): ``dest`` is whole or absent."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
        try:
            self._call(f"download {key}", self._client.download_file, Bucket=self.bucket, Key=self._key(key),
                       Filename=str(tmp))
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return dest

    def fetch_cached(self, key: str, cache_dir: str | os.PathLike) -> Path:
        """Local copy of an immutable (content-addressed) ``key`` under ``cache_dir``, downloaded once."""
        dest = Path(cache_dir) / key
        if not dest.exists():
            self.get_file(key, dest)
        return dest

    def head(self, key: str) -> ObjectInfo | None:
        try:
            resp = self._call(f"head {key}", self._client.head_object, Bucket=self.bucket, Key=self._key(key))
        except ObjectNotFound:
            return None
        return ObjectInfo(key, int(resp["ContentLength"]), str(resp["ETag"]), resp["LastModified"])

    def exists(self, key: str) -> bool:
        return self.head(key) is not None

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        """Every complete object under ``prefix`` (relative keys, sorted)."""
        full = self.config.full_key(prefix) if prefix else self.config.full_key("")
        paginator = self._client.get_paginator("list_objects_v2")
        out: list[ObjectInfo] = []

        def walk() -> None:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
                for obj in page.get("Contents", []):
                    out.append(ObjectInfo(self._relative(obj["Key"]), int(obj["Size"]), str(obj["ETag"]),
                                          obj["LastModified"]))

        self._call(f"list {prefix or '/'}", walk)
        return sorted(out, key=lambda o: o.key)

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error when it is already gone)."""
        self._call(f"delete {key}", self._client.delete_object, Bucket=self.bucket, Key=self._key(key))

    def delete_many(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        for i in range(0, len(keys), 1000):  # S3's DeleteObjects limit
            batch = [{"Key": self._key(k)} for k in keys[i:i + 1000]]
            self._call("delete objects", self._client.delete_objects, Bucket=self.bucket,
                       Delete={"Objects": batch, "Quiet": True})
        return len(keys)

    # ---- pointers ---------------------------------------------------------------------------

    def read_pointer(self, key: str) -> Pointer | None:
        """The JSON payload at ``key`` and its ETag (for a conditional publish), or None when absent."""
        try:
            resp = self._call(f"read pointer {key}", self._client.get_object, Bucket=self.bucket,
                              Key=self._key(key))
        except ObjectNotFound:
            return None
        return Pointer(json.loads(resp["Body"].read()), str(resp["ETag"]))

    def publish_pointer(self, key: str, payload: Mapping[str, Any], *, expected_etag: Any = _ANY) -> str:
        """Replace the pointer at ``key`` by ``payload`` in one atomic PUT; returns its new ETag.

        ``expected_etag``: the ETag read before (the PUT succeeds only if nobody changed it since),
        ``None`` (succeeds only if no pointer exists yet), or omitted (unconditional). Raises
        :class:`PointerConflict` when the condition fails.
        """
        body = json.dumps(payload, sort_keys=True, indent=1).encode()
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key), "Body": body,
                                  "ContentType": "application/json"}
        if expected_etag is None:
            kwargs["IfNoneMatch"] = "*"
        elif expected_etag is not _ANY:
            kwargs["IfMatch"] = expected_etag
        resp = self._call(f"publish pointer {key}", self._client.put_object, **kwargs)
        return str(resp["ETag"])
