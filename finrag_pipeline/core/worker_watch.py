"""Bounding the wait for a step whose Celery worker vanished (machine lost, ``kill -9`` of the whole worker).

dagster-celery's execution loop polls each step's Celery result until it is ready and, once one step failed,
still waits for every outstanding one. A step held by a worker that died never gets a result: the run would
wait until the broker's visibility timeout hands the message to another worker (an hour by default, and it
must exceed the longest step, or healthy slow steps run twice).

``WatchedResult`` wraps the step's ``AsyncResult``: while the task is STARTED (``task_track_started``
records the worker's hostname), the worker that holds it is pinged through Celery's remote control. A worker
silent for ``lost_after_seconds`` is taken as lost: the task is revoked (live workers then drop a later
redelivery of it) and the step fails with :class:`CeleryWorkerLost`; the run fails and the run retry
re-executes it from that step. Celery only, no Dagster: the executor in defs/executors.py plugs it in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable


class CeleryWorkerLost(RuntimeError):
    """The worker running a step stopped answering: the step is failed so the run retry can re-execute it."""


class WorkerWatch:
    """Which Celery workers still answer. ``ping(hostnames)`` returns the hostnames that replied; it is called
    at most every ``ping_interval_seconds`` for every worker asked about so far (one broadcast for all)."""

    def __init__(self, ping: Callable[[list[str]], Iterable[str]], lost_after_seconds: float,
                 ping_interval_seconds: float, clock: Callable[[], float] = time.monotonic):
        if ping_interval_seconds <= 0 or lost_after_seconds <= ping_interval_seconds:
            raise ValueError(f"lost_after_seconds ({lost_after_seconds}) must exceed ping_interval_seconds "
                             f"({ping_interval_seconds}) > 0: a worker needs several chances to answer")
        self._ping = ping
        self._lost_after = lost_after_seconds
        self._interval = ping_interval_seconds
        self._clock = clock
        self._last_seen: dict[str, float] = {}
        self._last_ping = -math.inf

    def silent_for(self, hostname: str) -> float:
        """Seconds since ``hostname`` last answered (counted from the first time it was asked about)."""
        now = self._clock()
        self._last_seen.setdefault(hostname, now)
        if now - self._last_ping >= self._interval:
            self._last_ping = now
            for answered in self._ping(sorted(self._last_seen)):
                if answered in self._last_seen:
                    self._last_seen[answered] = now
        return now - self._last_seen[hostname]

    def is_lost(self, hostname: str) -> bool:
        return self.silent_for(hostname) > self._lost_after

    @property
    def lost_after_seconds(self) -> float:
        return self._lost_after


class WatchedResult:
    """An ``AsyncResult`` stand-in for dagster-celery's loop (it calls ``ready``, ``get`` and ``revoke``)."""

    def __init__(self, result, watch: WorkerWatch, step_key: str):
        self._result = result
        self._watch = watch
        self.step_key = step_key
        self.lost_worker: str | None = None

    @property
    def id(self) -> str:
        return self._result.id

    def ready(self) -> bool:
        if self.lost_worker is not None or self._result.ready():
            return True
        if self._result.state != "STARTED":  # still queued (or prefetched): no worker to watch yet
            return False
        info = self._result.info
        hostname = info.get("hostname") if isinstance(info, dict) else None
        if hostname and self._watch.is_lost(hostname):
            self.lost_worker = hostname
            self._result.revoke()  # live workers drop the broker's later redelivery of this message
            return True
        return False

    def get(self):
        if self.lost_worker is not None:
            raise CeleryWorkerLost(
                f"step {self.step_key!r}: Celery worker {self.lost_worker} answered no ping for "
                f"{self._watch.lost_after_seconds:.0f} s while running it (worker or machine lost); task {self.id} "
                "revoked, the run retry re-executes the step")
        return self._result.get()

    def revoke(self, **kwargs) -> None:
        self._result.revoke(**kwargs)


def celery_ping(app, timeout: float) -> Callable[[list[str]], set[str]]:
    """``ping`` for :class:`WorkerWatch` through the app's remote control (returns early once all replied)."""

    def ping(hostnames: list[str]) -> set[str]:
        try:
            replies = app.control.ping(destination=hostnames, timeout=timeout, limit=len(hostnames))
        except Exception:  # noqa: BLE001 - a broker hiccup is not an answer; the next ping retries
            return set()
        return {host for reply in replies or [] for host in reply}

    return ping
