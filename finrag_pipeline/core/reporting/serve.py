"""Serve the reports folder over http (``finrag report --serve``; the web explorer, ``finrag serve``,
serves the report at the same path): the Dagster UI links the report there, since browsers block
``file://`` links from an http page."""

from __future__ import annotations

import functools
import http.server
import os
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765   # the web explorer's default port too: it serves the report at the same path
REPORT_FILE = "finrag_report.html"   # in FinragPaths.reports_dir


def report_address() -> tuple[str, int]:
    """Host and port of the report server: FINRAG_REPORT_HOST / FINRAG_REPORT_PORT, else 127.0.0.1:8765."""
    return os.environ.get("FINRAG_REPORT_HOST", DEFAULT_HOST), int(os.environ.get("FINRAG_REPORT_PORT", DEFAULT_PORT))


def report_url(name: str = REPORT_FILE) -> str:
    host, port = report_address()
    return f"http://{host}:{port}/{name}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


def make_server(directory: Path, host: str | None = None, port: int | None = None) -> http.server.ThreadingHTTPServer:
    """A static file server of ``directory`` (read-only: GET and HEAD only). Port 0 picks a free one."""
    default_host, default_port = report_address()
    handler = functools.partial(_QuietHandler, directory=str(directory))
    return http.server.ThreadingHTTPServer((host or default_host, default_port if port is None else port), handler)
