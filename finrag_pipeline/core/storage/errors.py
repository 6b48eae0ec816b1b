"""Object-store failures (no boto3 import here: the catalog lists them as environment errors cheaply)."""

from __future__ import annotations


class ObjectStoreError(RuntimeError):
    """Base of every object-store failure finrag reports."""


class ObjectStoreUnavailable(ObjectStoreError):
    """The endpoint cannot be reached, or the bucket does not exist."""


class ObjectStoreAuthError(ObjectStoreError):
    """The store refused the credentials (wrong key, wrong secret, no permission)."""


class ObjectNotFound(ObjectStoreError, KeyError):
    """The key does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class PointerConflict(ObjectStoreError):
    """Another publisher changed the pointer since it was read (the conditional PUT failed)."""


class FilingBytesMismatch(ObjectStoreError):
    """The bytes fetched for a filing do not hash to its registered sha256 (a damaged or foreign object)."""
