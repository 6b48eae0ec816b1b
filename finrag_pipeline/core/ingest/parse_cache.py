"""THE cache of parsed filings for scripts that parse corpus files outside a home (benchmarks, the question
builders under finrag_pipeline_tests/data/external/): one pickle per filing, keyed by

* the filing's sha256 (and its metadata sidecar's, when one sits next to it: ``registry.find_sidecar``), and
* the parser's fingerprint: the sha256 of the source of every ``finrag_pipeline`` module
  ``core/ingest/parse.py`` imports, directly or not (found by reading their imports), of the ingest
  configuration (``ingest.yaml`` as resolved now) and of the versions of the PDF/HTML libraries it calls.

A parser change therefore parses again (an old pickle is never read by a new parser); the same bytes parsed by
the same code are read back. Pipelines inside a home do not use it (the warehouse is their record).

    from finrag_pipeline.core.ingest.parse_cache import cached_parse
    parsed = cached_parse("/work/shared/corpus/html/x.htm", cache_dir)   # cache_dir None: parse, no cache
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import pickle
import tempfile
from importlib import metadata
from pathlib import Path

from finrag_pipeline.core.ingest.registry import find_sidecar

# where the benchmarks keep parsed filings unless told otherwise (``FINRAG_PARSE_CACHE`` overrides)
DEFAULT_PARSE_CACHE = Path(os.environ.get("FINRAG_PARSE_CACHE", "/tmp/finrag_parse_cache"))
PARSER_MODULE = "finrag_pipeline.core.ingest.parse"
# third-party distributions the parser reads files with: a new version may read them differently
PARSER_LIBRARIES = ("pypdfium2", "pdfplumber", "pdfminer.six", "lxml", "pydantic", "pyyaml")


def _module_file(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin) if spec and spec.origin and spec.origin.endswith(".py") else None


def _imported_modules(name: str, source: str) -> set[str]:
    """The finrag_pipeline modules one module's source imports (lazy imports inside functions included)."""
    package = name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("finrag_pipeline")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative import
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("finrag_pipeline"):
                out.add(base)
                out |= {f"{base}.{a.name}" for a in node.names}   # "from pkg import module"
    return out


def parser_sources(module: str = PARSER_MODULE) -> dict[str, Path]:
    """Every finrag_pipeline module ``module`` imports, directly or not, with its file."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            path = _module_file(name)
        except (ImportError, ValueError):
            path = None
        if path is None:   # a name imported from a module, not a module
            continue
        seen[name] = path
        parents = [".".join(name.split(".")[:i]) for i in range(2, name.count(".") + 1)]   # package __init__s
        todo += parents + sorted(_imported_modules(name, path.read_text(encoding="utf-8")) - set(seen))
    return seen


@functools.cache
def parser_fingerprint() -> str:
    """sha256 of the parser's code, its configuration and its libraries' versions (see the module docstring)."""
    from finrag_pipeline.core.config import config_path

    h = hashlib.sha256()
    for name, path in sorted(parser_sources().items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    ingest_yaml = config_path("ingest.yaml")
    h.update(Path(ingest_yaml).read_bytes() if ingest_yaml and Path(ingest_yaml).exists() else b"-")
    for dist in PARSER_LIBRARIES:
        try:
            h.update(f"{dist}={metadata.version(dist)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=-\0".encode())
    return h.hexdigest()


def cache_dir_for(option: str | Path | None) -> Path:
    """The cache directory a script's ``--cache`` names: a directory; a path given the old way (one pickle per
    batch, ``/tmp/outside.pkl``), whose filings then go to ``<path>.d/`` (an old pickle is never read: it holds no
    parser fingerprint); none given: ``DEFAULT_PARSE_CACHE``."""
    if option is None:
        return DEFAULT_PARSE_CACHE
    path = Path(option)
    return path if path.is_dir() or not (path.is_file() or path.suffix == ".pkl") else path.with_name(path.name + ".d")


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(path: str | Path, fingerprint: str | None = None) -> str:
    """``<stem>-<sha256 of the filing (+ sidecar)>-<parser fingerprint>``, shortened: the pickle's name."""
    digest = file_sha256(path)
    sidecar = find_sidecar(path)
    if sidecar is not None:
        digest = hashlib.sha256((digest + file_sha256(sidecar)).encode()).hexdigest()
    return f"{Path(path).stem}-{digest[:20]}-{(fingerprint or parser_fingerprint())[:16]}"


def cached_parse(path: str | Path, cache_dir: str | Path | None, *, fingerprint: str | None = None):
    """``parse_filing(path)``, read from ``cache_dir`` when this filing was parsed by this parser before, else
    parsed and written there (atomically: a killed run leaves no half pickle). ``cache_dir`` None: no cache.
    ``fingerprint`` overrides the parser's (tests)."""
    from finrag_pipeline.core.ingest.parse import parse_filing

    if cache_dir is None:
        return parse_filing(path)
    cache_dir = Path(cache_dir)
    cached = cache_dir / f"{cache_key(path, fingerprint)}.pkl"
    if cached.exists():
        try:
            return pickle.loads(cached.read_bytes())
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass   # unreadable (a class renamed under the same fingerprint cannot happen; a torn file can): parse again
    parsed = parse_filing(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(parsed, f)
    os.chmod(tmp, 0o644)   # mkstemp makes it private; the cache is shared by the scripts of one machine
    os.replace(tmp, cached)
    return parsed
