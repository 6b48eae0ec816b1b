"""Where the object store is and how to reach it: :class:`ObjectStoreConfig` (pydantic, from YAML).

Secrets never live in the YAML: ``access_key_env`` / ``secret_key_env`` name the environment
variables that hold them. ``core/deployment.py`` (dist-orch) embeds this model as
``DeploymentConfig.object_store``; anything here that is not deployment-specific (how to build a
boto3 client, LanceDB ``storage_options``, an ``s3://`` URI) is derived from this one model.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ObjectStoreCredentialsMissing(RuntimeError):
    """An environment variable the object store configuration names is unset or empty."""


class ObjectStoreConfig(BaseModel):
    """An S3-compatible bucket (AWS S3, MinIO, moto): every key finrag writes lies under ``prefix``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint_url: str | None = Field(None, description="e.g. http://127.0.0.1:9000; None: AWS S3 itself")
    bucket: str = Field(..., min_length=3, max_length=63)
    prefix: str = Field("finrag", description="key prefix inside the bucket (no leading or trailing '/')")
    region: str = "us-east-1"
    access_key_env: str = "AWS_ACCESS_KEY_ID"
    secret_key_env: str = "AWS_SECRET_ACCESS_KEY"
    allow_http: bool = Field(False, description="allow a plain-http endpoint (a local MinIO or moto server)")

    @field_validator("prefix")
    @classmethod
    def _strip_prefix(cls, value: str) -> str:
        value = value.strip("/")
        if ".." in value.split("/"):
            raise ValueError(f"object store prefix {value!r} must not contain '..'")
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"endpoint_url {value!r} must start with http:// or https://")
        return value.rstrip("/") if value else value

    def model_post_init(self, __context: object) -> None:
        if self.endpoint_url and self.endpoint_url.startswith("http://") and not self.allow_http:
            raise ValueError(f"endpoint_url {self.endpoint_url} is plain http: set allow_http: true to allow it")

    def credentials(self) -> tuple[str, str]:
        """(access key, secret key) from the environment variables this configuration names."""
        values = []
        for name in (self.access_key_env, self.secret_key_env):
            value = os.environ.get(name)
            if not value:
                raise ObjectStoreCredentialsMissing(
                    f"object store credentials: environment variable {name} is not set "
                    f"(named by access_key_env/secret_key_env for bucket {self.bucket})")
            values.append(value)
        return values[0], values[1]

    def full_key(self, key: str) -> str:
        """``key`` under this configuration's prefix."""
        key = key.lstrip("/")
        return f"{self.prefix}/{key}" if self.prefix else key

    def uri(self, key: str = "") -> str:
        """``s3://bucket/prefix/key`` (what LanceDB and pyarrow open)."""
        return f"s3://{self.bucket}/{self.full_key(key)}".rstrip("/")

    def lance_storage_options(self) -> dict[str, str]:
        """``storage_options`` for ``lancedb.connect(self.uri('lancedb'), storage_options=...)``."""
        access, secret = self.credentials()
        options = {"aws_access_key_id": access, "aws_secret_access_key": secret, "aws_region": self.region}
        if self.endpoint_url:
            options["aws_endpoint"] = self.endpoint_url
        if self.allow_http:
            options["allow_http"] = "true"
        return options
