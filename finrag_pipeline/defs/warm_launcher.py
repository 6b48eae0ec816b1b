"""The daemon's run launcher: every run forked from one process that imported the code location once.

Dagster's DefaultRunLauncher asks the code server to start each run in a new Python process, which imports
the code location before its first step: 2.3 s on an idle 2-core VM, 17-24 s on a busier one, 90-120 s at
load 25 (docs/BENCHMARKS.md, "One wave per arrival"). A wave starts 12 runs, 8 of them one after another.
WarmRunLauncher keeps one process that has imported the code location (the fork server,
``python -m finrag_pipeline.defs.warm_launcher MODULE``) and forks it for each run: the run's process starts
with dagster, dagster-dbt and every asset module already imported, then executes the run exactly as
``dagster api execute_run`` does (``_execute_run_command_body``: the same events, status and exit code).

- Only runs of the module it preloads (``finrag_pipeline.definitions``) are forked; anything else, or a fork
  server that cannot start, goes to Dagster's DefaultRunLauncher (an engine event says why).
- The code is fresh: the server is restarted when a source file of the package or a YAML under
  assets_config changed since it imported them (checked at each launch: a directory walk, milliseconds).
- Each run process is tagged with its process token (``finrag/process``, defs/run_health.py): the inbox
  sensor's tick (run_health.fail_dead_runs) fails a run whose process died; termination sends SIGINT to that
  process, which Dagster turns into a cancelled run, as the default launcher's gRPC cancel does (an
  interrupt Python swallowed in a finalizer is sent again: ``redeliver_swallowed_interrupts``).
- The fork server refuses to serve when importing the code location started a Python thread (a fork keeps
  only the forking thread, and a lock another thread held would stay held in the run); it holds no open
  database (test_warm_launcher.py). Each run opens its own instance from the instance ref.

Configured in dagster.yaml by core/deployment.py (``run_launcher: warm`` in assets_config/deployment.yaml,
``default`` for Dagster's own launcher).

Dagster APIs: the launcher is Dagster's public DefaultRunLauncher with ``launch_run`` and ``terminate``
overridden (its own behaviour is the fallback). One private import remains, in the run process: see
``run_body``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg

DEFAULT_MODULE = "finrag_pipeline.definitions"
READY = "ready"
# On every run this launcher forked (not on runs it handed to the default launcher): terminate() signals
# their process itself.
FORKED_TAG = "finrag/forked_by"


class ForkServerError(RuntimeError):
    """The fork server could not start or did not answer."""


def source_fingerprint(module: str) -> str:
    """Newest mtime and file count of the package that holds ``module`` and of the YAML configuration beside
    it (and FINRAG_CONFIG_DIR): what, once changed, makes the preloaded definitions stale."""
    import importlib.util

    spec = importlib.util.find_spec(module.split(".")[0])
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    if roots:
        roots.append(roots[0].parent / "assets_config")
    elif spec and spec.origin:  # a single-file module
        roots.append(Path(spec.origin))
    if os.environ.get("FINRAG_CONFIG_DIR"):
        roots.append(Path(os.environ["FINRAG_CONFIG_DIR"]))
    newest, count = 0, 0
    for root in roots:
        if root.is_file():
            newest, count = max(newest, root.stat().st_mtime_ns), count + 1
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith((".py", ".yaml", ".yml")):
                    try:
                        newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
                    except OSError:
                        continue
                    count += 1
    return f"{newest}:{count}"


class ForkServer:
    """One fork-server process: preloads ``module``, then forks a run process per request."""

    def __init__(self, module: str, cwd: str | None = None, start_timeout: float = 600.0):
        self.module = module
        self.fingerprint = source_fingerprint(module)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "finrag_pipeline.defs.warm_launcher", module],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd)
        self._ready = threading.Event()
        self._io = threading.Lock()  # one request and its reply at a time (the run queue may launch from threads)
        self._error: str | None = None
        self._start_timeout = start_timeout
        threading.Thread(target=self._await_ready, daemon=True, name="finrag-fork-server-ready").start()

    def _await_ready(self) -> None:
        line = self._proc.stdout.readline().strip()
        if line != READY:
            self._error = line.removeprefix("refused: ") if line.startswith("refused: ") else (
                f"the fork server exited while importing {self.module} (exit code {self._proc.wait()})")
        self._ready.set()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def failed_to_start(self) -> bool:
        return self._ready.is_set() and self._error is not None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def wait_ready(self, timeout: float) -> str | None:
        """None once the server has imported the module; else why it cannot fork."""
        if not self._ready.wait(timeout):
            return f"the fork server did not import {self.module} within {timeout:.0f} s"
        if self._error or not self.alive():
            return self._error or f"the fork server exited (code {self._proc.returncode})"
        return None

    def fork(self, run_id: str, instance_ref: str) -> int:
        """The pid of a new process that executes ``run_id``."""
        error = self.wait_ready(self._start_timeout)
        if error:
            raise ForkServerError(error)
        try:
            with self._io:
                self._proc.stdin.write(json.dumps({"run_id": run_id, "instance_ref": instance_ref}) + "\n")
                self._proc.stdin.flush()
                reply = json.loads(self._proc.stdout.readline() or "{}")
        except (OSError, ValueError) as exc:
            raise ForkServerError(f"the fork server did not answer: {exc}") from exc
        if "pid" not in reply:
            raise ForkServerError(f"the fork server refused the run: {reply.get('error', 'no reply')}")
        return int(reply["pid"])

    def stop(self) -> None:
        """End the server (runs it forked go on: they are its children only until they exit)."""
        if self.alive():
            try:
                self._proc.stdin.close()  # the server's loop ends at end of input
                self._proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()


# One fork server per process and module, whichever launcher object (one per instance) asks for it.
_SERVERS: dict[str, ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def current_server(module: str) -> ForkServer:
    """The live, fresh fork server for ``module``: started, or restarted when it died or its sources changed."""
    with _SERVERS_LOCK:
        server = _SERVERS.get(module)
        fingerprint = source_fingerprint(module)
        if server is not None and server.failed_to_start() and server.fingerprint == fingerprint:
            return server  # same code, same failure: its runs go to the fallback without a new import each time
        if server is None or not server.alive() or server.fingerprint != fingerprint:
            if server is not None:
                server.stop()
            _SERVERS[module] = server = ForkServer(module)
        return server


def stop_servers() -> None:
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


class WarmRunLauncher(dg.DefaultRunLauncher):
    """Forks runs of ``module`` from its fork server; everything else goes to Dagster's DefaultRunLauncher
    (this class's parent)."""

    def __init__(self, module: str = DEFAULT_MODULE, inst_data=None):
        self.module = module
        super().__init__(inst_data=inst_data)

    # --- configuration (dagster.yaml: run_launcher: {module: ..., class: WarmRunLauncher, config: {module: ...}})
    @classmethod
    def config_type(cls):
        return {"module": str}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(module=config_value.get("module", DEFAULT_MODULE), inst_data=inst_data)

    # --- launching
    def _is_ours(self, run) -> bool:
        origin = run.job_code_origin
        pointer = getattr(origin.repository_origin, "code_pointer", None) if origin else None
        return (getattr(pointer, "module", None) == self.module
                and os.path.realpath(origin.executable_path) == os.path.realpath(sys.executable))

    def launch_run(self, context) -> None:
        from finrag_pipeline.defs.run_health import PID_TAG, process_token

        run = context.dagster_run
        if not self._is_ours(run):
            return super().launch_run(context)
        try:
            server = current_server(self.module)
            pid = server.fork(run.run_id, dg.serialize_value(self._instance.get_ref()))
        except ForkServerError as exc:
            self._instance.report_engine_event(
                f"Warm run launcher: {exc}; starting the run with Dagster's default launcher instead.", run,
                cls=self.__class__)
            return super().launch_run(context)
        self._instance.add_run_tags(run.run_id, {PID_TAG: process_token(pid), FORKED_TAG: "warm_launcher"})
        self._instance.report_engine_event(
            f"Run forked from the warm process that imported {self.module} (pid {pid}; fork server pid "
            f"{server.pid}).", run, cls=self.__class__)

    # --- termination, by the run's process token (a dead run process is failed by run_health.fail_dead_runs)
    def terminate(self, run_id: str) -> bool:
        from finrag_pipeline.defs.run_health import PID_TAG, process_alive

        run = self._instance.get_run_by_id(run_id)
        if not run or run.is_finished:
            return False
        token = run.tags.get(PID_TAG)
        if not token or FORKED_TAG not in run.tags:  # started by the default launcher: cancelled its own way
            return super().terminate(run_id)
        self._instance.report_run_canceling(run)
        if not process_alive(token):
            return False
        os.kill(int(token.split(":")[1]), signal.SIGINT)  # Dagster cancels the run at its next step boundary
        return True

    def dispose(self) -> None:
        super().dispose()  # the fork server outlives one instance: it ends with the process


# --- the fork server process -------------------------------------------------------------------------------

def _reap(*_args) -> None:
    """Collect exited run processes (no zombies: a zombie would look alive to the health check)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_body():
    """(``_execute_run_command_body``, ``capture_interrupts``): how `dagster api execute_run` executes a run
    that exists in the instance, in this process.

    Kept private import (2 of 3, docs/BENCHMARKS.md "Private Dagster APIs"): the body of `dagster api
    execute_run` (dagster's python_modules/dagster/dagster/_cli/api.py, execute_run_command), so a forked run
    emits the same events, status and cancellation as a run the default launcher starts, without importing
    the code location again: 2.8-4.7 s saved per run (BENCHMARKS.md "One wave per arrival"; that import cost
    upstream: dagster-io/dagster#25780). Dagster has no public "execute this created run here".
    test_dagster_private_api.py pins both signatures, so an upgrade that moves them fails there by name."""
    from dagster._cli.api import _execute_run_command_body, capture_interrupts

    return _execute_run_command_body, capture_interrupts


def redeliver_swallowed_interrupts(unraisable) -> None:
    """``sys.unraisablehook`` of a run process: a Terminate (SIGINT) is raised by Dagster's signal handler
    wherever the main thread is, and when that is a finalizer or a weakref callback (SQLAlchemy's
    ``_collection_gced``, seen in test_warm_launcher) Python prints "Exception ignored in ..." and drops it:
    the run went on to SUCCESS. The interrupt is sent again, from a timer thread a moment later (sent from
    here, the handler would raise inside this hook and be dropped again), so it lands in the run's code."""
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, dg.DagsterExecutionInterruptedError)):
        resend = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        resend.daemon = True
        resend.start()
    sys.__unraisablehook__(unraisable)


def _run_in_child(request: dict, reply_fd: int) -> None:
    """The forked run process: execute the run as `dagster api execute_run` does, then exit."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the run's own subprocesses (dbt) are waited for normally
        sys.unraisablehook = redeliver_swallowed_interrupts
        os.close(reply_fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        execute_run_body, capture_interrupts = run_body()
        with capture_interrupts():
            ref = dg.deserialize_value(request["instance_ref"])
            with dg.DagsterInstance.from_ref(ref) as instance:
                code = execute_run_body(request["run_id"], instance, lambda _event: None,
                                        set_exit_code_on_failure=False)
    except BaseException:  # noqa: BLE001 - whatever happened, the process must end here, never return to the loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            import logging

            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(module: str) -> None:
    import importlib

    import dagster as dg

    loaded = importlib.import_module(module)
    for value in vars(loaded).values():  # resolve the asset graph and the jobs once, not in every run
        if isinstance(value, dg.Definitions):
            value.get_repository_def().get_all_jobs()
    run_body()  # imported once here, not in every run

    reply_fd = os.dup(1)
    os.dup2(2, 1)  # whatever a run prints goes to the daemon's log, never into the reply pipe
    replies = os.fdopen(reply_fd, "w", buffering=1)
    if threading.active_count() > 1:
        # A fork copies only the forking thread: a lock another Python thread holds would stay held forever
        # in the run. (Native pools that register fork handlers, OpenBLAS and jemalloc, are fine.)
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        replies.write(f"refused: importing {module} started Python threads ({names}); forking is unsafe\n")
        return
    signal.signal(signal.SIGCHLD, _reap)
    replies.write(READY + "\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
            pid = os.fork()
        except (ValueError, OSError) as exc:
            replies.write(json.dumps({"error": str(exc)}) + "\n")
            continue
        if pid == 0:
            _run_in_child(request, reply_fd)
        replies.write(json.dumps({"pid": pid}) + "\n")
        _reap()


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODULE)
