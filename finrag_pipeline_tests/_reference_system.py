"""A reference outside RAG system for the tests: a real HTTP server (Starlette under uvicorn, 127.0.0.1 on a
free port) that wraps one built-in retriever and the calculator answerer behind the systems contract
(docs/SYSTEMS.md), with fault injection per question; and a Python-callable system over BM25.

Faults (``ReferenceServer.faults[qa_id]``): ``slow`` (replies after ``slow_seconds``), ``delay`` (after
0.5 s), ``500`` (every
attempt), ``flaky`` (500 on the first attempt, then a normal reply), ``invalid_json`` (a 200 whose body is
not JSON), ``empty`` (a reply with an empty answer), ``not_in_corpus`` (every context moved to a page the
filing does not have).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from finrag_pipeline.core.evaluation.runner import ordered_hits, scope_filters


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def contexts_of(hits: list) -> list[dict[str, Any]]:
    """Hits as contexts of the contract: text, filing and first page (no chunk id: an outside system does not
    know ours, so the adapter must place them by page and text)."""
    return [{"text": h.text, "filing_id": h.filing_id, "page": h.page_start} for h in hits]


class ReferenceSystem:
    """hybrid_rrf (or ``retriever``) + the calculator over a FinragSession: what the server serves."""

    def __init__(self, session: Any, retriever: str = "hybrid_rrf", answerer: str = "calculator"):
        from finrag_pipeline.core.evaluation.runner import AnswerConfig

        self.session = session
        self.retriever = session.retriever(retriever)
        cfg = AnswerConfig(model=answerer, prompt_type=answerer, temperature=0.0, top_p=1.0, retriever=retriever, k=5)
        self.answerer = session.answerer_factory(cfg)
        self.lock = threading.Lock()   # one search at a time: the session's indexes are shared

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        k = int(request.get("k") or 5)
        with self.lock:
            result = self.retriever.retrieve(request["question"], k, scope_filters(request["scope"],
                                                                                    request["filing_id"]))
            hits = ordered_hits(result.hits)[:k]
            answer = self.answerer.answer(request["question"], hits)
        return {"answer": answer.text, "contexts": contexts_of(hits),
                "citations": [{"filing_id": f, "page": p, "chunk_id": c} for f, p, c in answer.citations],
                "abstained": answer.response_state != "answered", "cost": 0.001}


class ReferenceServer:
    def __init__(self, system: ReferenceSystem, *, slow_seconds: float = 3.0):
        self.system = system
        self.slow_seconds = slow_seconds
        self.faults: dict[str, str] = {}
        self.requests: Counter[str] = Counter()   # qa_id -> requests received
        self.in_flight = 0
        self.max_in_flight = 0                     # the most requests served at once (the adapter's limit)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/rag"
        app = Starlette(routes=[Route("/rag", self.rag, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                     lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    async def rag(self, request: Request):
        self.in_flight += 1   # one event loop: no lock needed
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._reply(request)
        finally:
            self.in_flight -= 1

    async def _reply(self, request: Request):
        body = await request.json()
        qa_id = body.get("qa_id") or ""
        self.requests[qa_id] += 1
        fault = self.faults.get(qa_id)
        if fault == "slow":
            await asyncio.sleep(self.slow_seconds)
        if fault == "delay":   # within the timeout: holds a slot of the adapter's concurrency
            await asyncio.sleep(0.5)
        if fault == "500" or (fault == "flaky" and self.requests[qa_id] == 1):
            return PlainTextResponse("injected failure", status_code=500)
        if fault == "invalid_json":
            return PlainTextResponse('{"answer": "394,328", "contexts": [', media_type="application/json")
        reply = await run_in_threadpool(self.system.answer, body)
        if fault == "empty":
            reply["answer"] = ""
        if fault == "not_in_corpus":
            reply["contexts"] = [dict(c, page=9999) for c in reply["contexts"]]
        return JSONResponse(reply)

    def start(self) -> ReferenceServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the reference server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@contextlib.contextmanager
def running_server(system: ReferenceSystem, **kwargs: Any) -> Iterator[ReferenceServer]:
    server = ReferenceServer(system, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()


# --- a Python-callable system over a home's BM25 (systems.yaml kind "python") ---------------------------

_SESSIONS: dict[str, Any] = {}


def bm25_system(request: dict[str, Any], *, home: str, drop: str = "none") -> dict[str, Any]:
    """BM25 top-k of ``home`` as contexts. ``drop="half"``: a degraded system that loses every other context,
    starting with its first (half of them)."""
    from finrag_pipeline.core.session import FinragSession

    session = _SESSIONS.get(home) or _SESSIONS.setdefault(home, FinragSession.open(home))
    k = int(request.get("k") or 5)
    hits = ordered_hits(session.retriever("bm25").search(request["question"], k,
                                                          scope_filters(request["scope"], request["filing_id"])))
    if drop == "half":
        hits = hits[1::2]
    first = hits[0].text.split(". ")[0] if hits else ""
    return {"answer": first, "contexts": contexts_of(hits)}
