"""Throwaway services for distributed mode on one machine: PostgreSQL 15, Redis, an S3-compatible server
(moto) and dagster-celery workers, each on a free port in a temporary folder, all stopped by ``close()``.

What the distributed integration test and benchmarks/distributed.py start; also a way to try the mode
on a laptop (docs/DEPLOYMENT.md). Production runs the real services instead. PostgreSQL refuses to run as
root, so as root its server runs as the unprivileged user ``nobody`` (``runuser``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from finrag_pipeline.core.deployment import DeploymentConfig, celery_executor_config

PG_BIN = Path(os.environ.get("FINRAG_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "nobody"  # the unprivileged account postgres runs as when we are root
DATABASE = "dagster"


class ServiceStartError(RuntimeError):
    """A service did not start; the message says which and ends with its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen | None, what: str, log: Path | None,
                   timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    raise ServiceStartError(f"{what} did not listen on port {port} within {timeout:.0f} s. Log:\n{tail}")


def _as_postgres_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser") is None:
        raise ServiceStartError("PostgreSQL refuses to run as root and runuser is missing (util-linux)")
    return ["runuser", "-u", PG_USER, "--", *cmd]


@dataclass
class LocalServices:
    """Everything :func:`start_services` started; ``close()`` stops it all (idempotent)."""

    root: Path
    postgres_url: str = ""
    broker_url: str = ""
    s3_endpoint: str = ""
    env: dict[str, str] = field(default_factory=dict)     # what a worker or a run needs to reach them
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    _procs: list[subprocess.Popen] = field(default_factory=list)
    _pgdata: Path | None = None
    _log_offsets: dict[str, int] = field(default_factory=dict)
    _moto: object | None = None

    # -- Celery workers -------------------------------------------------------------------------
    def start_worker(self, name: str, cfg: DeploymentConfig, extra_env: Mapping[str, str] | None = None,
                     concurrency: int = 1) -> subprocess.Popen:
        """A dagster-celery worker (`celery -A dagster_celery.app worker`, what `dagster-celery worker
        start` runs) with the executor's settings as its config module; one step at a time by default."""
        conf_dir = self.root / f"celery-{name}"
        conf_dir.mkdir(parents=True, exist_ok=True)
        exec_cfg = celery_executor_config(cfg)
        lines = [f"broker_url = {cfg.broker_url!r}", f"result_backend = {cfg.result_backend_url!r}"]
        lines += [f"{k} = {v!r}" for k, v in exec_cfg["config_source"].items()]
        (conf_dir / "dagster_celery_config.py").write_text("\n".join(lines) + "\n")
        env = {**os.environ, **self.env, **(extra_env or {})}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(conf_dir), env.get("PYTHONPATH", "")) if p)
        log = self.root / f"worker-{name}.log"
        # a restarted worker appends to its log: readiness is read after this offset
        self._log_offsets[name] = log.stat().st_size if log.exists() else 0
        cmd = [sys.executable, "-m", "celery", "-A", "dagster_celery.app", "worker", "--loglevel=INFO",
               f"--concurrency={concurrency}", "--prefetch-multiplier=1", "-n", f"{name}@%h",
               "-I", ",".join(exec_cfg["include"]), "--without-gossip", "--without-mingle", "--without-heartbeat"]
        proc = subprocess.Popen(cmd, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                                start_new_session=True)
        self._procs.append(proc)
        self.workers[name] = proc
        return proc

    def wait_for_workers(self, timeout: float = 120.0) -> None:
        """Until every worker logged that it is ready (it imported the code location)."""
        deadline = time.monotonic() + timeout
        pending = dict(self.workers)
        while pending and time.monotonic() < deadline:
            for name, proc in list(pending.items()):
                with (self.root / f"worker-{name}.log").open("rb") as fh:
                    fh.seek(self._log_offsets.get(name, 0))
                    log = fh.read().decode(errors="replace")
                if proc.poll() is not None:
                    raise ServiceStartError(f"celery worker {name} exited ({proc.returncode}). Log:\n{log[-3000:]}")
                if " ready." in log:
                    del pending[name]
            time.sleep(0.3)
        if pending:
            raise ServiceStartError(f"celery workers {sorted(pending)} not ready after {timeout:.0f} s")

    def stop_worker(self, name: str, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        proc = self.workers.pop(name)
        _stop_group(proc, sig, timeout)

    # -- teardown -------------------------------------------------------------------------------
    def close(self) -> None:
        for proc in reversed(self._procs):
            _stop_group(proc, signal.SIGTERM, 15.0)
        self._procs.clear()
        self.workers.clear()
        if self._pgdata is not None:
            subprocess.run(_as_postgres_user([str(PG_BIN / "pg_ctl"), "-D", str(self._pgdata), "-m", "immediate",
                                              "-w", "stop"]), capture_output=True, check=False)
            shutil.rmtree(self._pgdata.parent, ignore_errors=True)
            self._pgdata = None
        if self._moto is not None:
            with contextlib.suppress(Exception):
                self._moto.stop()
            self._moto = None
        shutil.rmtree(self.root, ignore_errors=True)


def _stop_group(proc: subprocess.Popen, sig: int, timeout: float) -> None:
    """Signal the process and its children (each service has its own session), then make sure they went."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _start_postgres(svc: LocalServices) -> None:
    if not (PG_BIN / "initdb").exists():
        raise ServiceStartError(f"PostgreSQL binaries not found in {PG_BIN} (apt-get install postgresql, or set "
                                "FINRAG_PG_BIN)")
    pgdir = Path(tempfile.mkdtemp(prefix="finrag-pg-"))  # under /tmp: reachable by the postgres user
    if os.geteuid() == 0:
        shutil.chown(pgdir, user=PG_USER)
    data, log, port = pgdir / "data", pgdir / "postgres.log", free_port()
    init = subprocess.run(_as_postgres_user([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres",
                                             "--auth=trust", "--no-sync", "-E", "UTF8"]),
                          capture_output=True, text=True, check=False)
    if init.returncode:
        raise ServiceStartError(f"initdb failed: {init.stderr[-2000:]}")
    svc._pgdata = data
    opts = f"-p {port} -k {pgdir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = subprocess.run(_as_postgres_user([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts,
                                              "-w", "-t", "60", "start"]), capture_output=True, text=True, check=False)
    if start.returncode:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise ServiceStartError(f"pg_ctl start failed: {start.stderr.strip()}\n{tail}")
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {DATABASE}")
    conn.close()
    # the driver named: SQLAlchemy 2.1 (dagster-postgres) would otherwise pick psycopg 3
    svc.postgres_url = f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{DATABASE}"


def _start_redis(svc: LocalServices) -> None:
    exe = shutil.which("redis-server")
    if exe is None:
        raise ServiceStartError("redis-server not found (apt-get install redis-server)")
    port, log = free_port(), svc.root / "redis.log"
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(svc.root)], stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    svc._procs.append(proc)
    _wait_for_port(port, proc, "redis-server", log)
    svc.broker_url = f"redis://127.0.0.1:{port}/0"


def _start_moto(svc: LocalServices, bucket: str | None) -> None:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    svc._moto = server
    _wait_for_port(port, None, "moto server", None)
    svc.s3_endpoint = f"http://127.0.0.1:{port}"
    if bucket:
        import boto3

        boto3.client("s3", endpoint_url=svc.s3_endpoint, region_name="us-east-1", aws_access_key_id="test",
                     aws_secret_access_key="test").create_bucket(Bucket=bucket)


def start_services(*, postgres: bool = True, redis: bool = True, s3_bucket: str | None = "finrag",
                   s3: bool = True) -> LocalServices:
    """Start PostgreSQL, Redis and moto on free ports. On any failure, what started is stopped again."""
    svc = LocalServices(root=Path(tempfile.mkdtemp(prefix="finrag-services-")))
    try:
        if postgres:
            _start_postgres(svc)
            svc.env["FINRAG_POSTGRES_URL"] = svc.postgres_url
        if redis:
            _start_redis(svc)
            svc.env["FINRAG_BROKER_URL"] = svc.broker_url
        if s3:
            _start_moto(svc, s3_bucket)
            svc.env.update({"FINRAG_S3_ENDPOINT": svc.s3_endpoint, "FINRAG_S3_ACCESS_KEY_ID": "test",
                            "FINRAG_S3_SECRET_ACCESS_KEY": "test", "AWS_ACCESS_KEY_ID": "test",
                            "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"})
    except BaseException:
        svc.close()
        raise
    return svc


@contextlib.contextmanager
def running_services(**kwargs) -> Iterator[LocalServices]:
    svc = start_services(**kwargs)
    try:
        yield svc
    finally:
        svc.close()
