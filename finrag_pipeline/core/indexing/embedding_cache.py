"""On-disk embedding cache keyed by (embedder name, sha256 of text), in SQLite.

Re-indexing a filing, or indexing another chunking variant whose table rows are identical,
re-embeds only texts never seen before. SQLite handles several processes (WAL, busy timeout).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

_CHUNK = 500  # SQLite's host-parameter limit is 999 by default: look up in slices


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """``get_many``/``put_many`` float32 vectors under ``(embedder_name, text_sha)``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("""CREATE TABLE IF NOT EXISTS embeddings (
                               embedder TEXT NOT NULL, sha TEXT NOT NULL, dim INTEGER NOT NULL,
                               vector BLOB NOT NULL, PRIMARY KEY (embedder, sha))""")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def get_many(self, embedder: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(shas))
        with self._connect() as con:
            for i in range(0, len(unique), _CHUNK):
                part = unique[i:i + _CHUNK]
                rows = con.execute(
                    f"SELECT sha, dim, vector FROM embeddings WHERE embedder = ? AND sha IN ({','.join('?' * len(part))})",
                    [embedder, *part]).fetchall()
                for sha, dim, blob in rows:
                    found[sha] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return found

    def put_many(self, embedder: str, items: dict[str, np.ndarray]) -> None:
        rows = [(embedder, sha, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
                for sha, v in items.items()]
        with self._connect() as con:
            con.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)

    def missing(self, embedder_name: str, texts: Sequence[str]) -> dict[str, str]:
        """sha -> text of the ``texts`` not cached yet, in first-seen order: exactly what ``embed`` would
        hand to ``encode`` now."""
        shas = [text_sha(t) for t in texts]
        return self._missing(shas, texts, self.get_many(embedder_name, shas))

    @staticmethod
    def _missing(shas: Sequence[str], texts: Sequence[str], cached: dict[str, np.ndarray]) -> dict[str, str]:
        return {sha: text for sha, text in zip(shas, texts, strict=True) if sha not in cached}

    def embed(self, embedder_name: str, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray],
              dim: int) -> tuple[np.ndarray, int]:
        """Vectors for ``texts`` (cached or freshly encoded) and how many were encoded."""
        shas = [text_sha(t) for t in texts]
        cached = self.get_many(embedder_name, shas)
        missing = self._missing(shas, texts, cached)
        if missing:
            fresh = encode(list(missing.values()))
            new = dict(zip(missing.keys(), fresh, strict=True))
            self.put_many(embedder_name, new)
            cached.update(new)
        out = np.stack([cached[s] for s in shas]) if shas else np.zeros((0, dim), dtype=np.float32)
        return out.astype(np.float32, copy=False), len(missing)
