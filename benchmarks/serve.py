"""Web explorer latency: p50/p95 of the leaderboard page, the question view and the ask round trip.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve.py [--home FINRAG_HOME] [--repeats 20]

``--home`` is a FINRAG_HOME with a published snapshot (``make demo`` gives .finrag); without one the
script builds the tests' small home (4-page Apple excerpt, evaluated) in a temporary folder.
The app runs under uvicorn in this process and is called over HTTP (urllib), so the times include
routing, the snapshot reads, live retrieval, the page boxes and template rendering; page images are
separate requests (cached PNGs) and not counted. After a warm-up of every URL (the embedding model,
the indexes and the snapshot's derived tables load once), each measured ask uses a question not asked
before, so no search memo or query-vector cache answers it. Targets: pages <= 150 ms, a hybrid ask
<= 300 ms after warm-up.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _small_home() -> Path:
    sys.path.insert(0, str(ROOT / "finrag_pipeline_tests"))
    from _explorer_home import build_explorer_home

    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    home = Path(tempfile.mkdtemp(prefix="finrag-serve-bench-"))
    build_explorer_home(home, load_embedder_config().build())
    return home


def _get(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as resp:
        resp.read()
        assert resp.status == 200, (url, resp.status)
    return (time.perf_counter() - t0) * 1000


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1] if len(values) > 1 else values[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=None)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()

    import uvicorn

    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.web import queries as q
    from finrag_pipeline.web.app import create_app

    home = Path(args.home) if args.home else None
    if home is None or not FinragPaths.from_env(home).warehouse_snapshot.exists():
        home = _small_home()
    app = create_app(str(home))
    snap = app.state.explorer.snapshot
    snap.refresh()
    board, _ = q.leaderboard(snap)
    rows = q.latest_retrieval_rows(snap)
    scope = "corpus" if "corpus" in set(rows["scope"]) else str(rows["scope"].iloc[0])
    best = board[board["scope"] == scope].iloc[0]
    configs = [str(best["config_name"]), *[c for c in board[(board["scope"] == scope) & (board["k"] == best["k"])]
                                           ["config_name"] if c != best["config_name"]][:1]]
    qa_ids = rows[(rows["scope"] == scope) & (rows["config_name"] == configs[0])]["qa_id"].tolist()
    questions = [str(x) for x in rows.drop_duplicates("qa_id")["question"].dropna().tolist()]

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"

    def question_url(qa_id: str) -> str:
        return f"{base}/question/{urllib.parse.quote(qa_id)}?" + urllib.parse.urlencode(
            [("scope", scope), *[("config", c) for c in configs]])

    def ask_url(text: str) -> str:
        return f"{base}/ask?" + urllib.parse.urlencode({"q": text, "scope": "corpus", "a_retriever": "hybrid_rrf",
                                                         "a_k": 5, "a_model": "extractive"})

    # warm-up: model, indexes, snapshot-derived tables, first renders
    for _ in range(3):
        _get(f"{base}/leaderboard")
        _get(question_url(qa_ids[0]))
    _get(ask_url("What was the total revenue in the latest fiscal year? (warm-up)"))
    _get(ask_url("How many employees did the company have? (warm-up)"))

    n = args.repeats
    board_ms = [_get(f"{base}/leaderboard") for _ in range(n)]
    question_ms = [_get(question_url(qa_ids[i % len(qa_ids)])) for i in range(n)]
    fresh = [f"{questions[i % len(questions)]} (variant {i})" for i in range(n)]
    ask_ms = [_get(ask_url(text)) for text in fresh]
    server.should_exit = True

    n_chunks = q.corpus_state(snap).n_chunks
    print(f"home {home} ({len(q.corpus_filings(snap))} filings, {n_chunks} leaf chunks), "
          f"question view configs {configs} scope {scope}, {n} requests each")
    print("| request | p50 ms | p95 ms | target |")
    print("|---|---|---|---|")
    for name, values, target in (("leaderboard page", board_ms, "<= 150"),
                                 ("question view (2 configurations re-run, page boxes)", question_ms, "<= 150"),
                                 ("ask round trip (hybrid_rrf@5 + extractive answer + page boxes)", ask_ms, "<= 300")):
        print(f"| {name} | {statistics.median(values):.1f} | {_p(values, 0.95):.1f} | {target} |")


if __name__ == "__main__":
    main()
