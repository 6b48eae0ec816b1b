"""Outside RAG systems under test: ``assets_config/systems.yaml``, their contract and the adapters.

A system under test is any RAG system the platform did not build. It is asked each question of a QA
set once (per scope) and answers with ``{answer, contexts: [{text, filing_id?, page?, chunk_id?}],
citations?, cost?}``; :mod:`system_eval` maps its contexts onto the corpus and scores the rows with the
same metric functions as the built-in retrievers and answerers. The contract is
:class:`SystemRequest` -> :class:`SystemResponse` (JSON Schema: :func:`contract_json_schema`,
docs/SYSTEMS.md).

Kinds register with :func:`register_system_kind` (a new kind is one class, no factory edit):

* ``http``: POST the request as JSON to ``url``; headers (``${ENV}`` expanded), bearer token from an
  environment variable, timeout, retries with exponential backoff on 5xx and connection errors,
  a concurrency limit.
* ``python``: ``"pkg.mod:callable"`` called with the request as a dict (+ ``options``).
* ``file``: a JSONL of answers produced elsewhere, keyed by ``qa_id`` or by the question text.

Every call ends in a :class:`SystemCall` with a state; a failure is never an exception and never a
missing row: ``timeout``, ``http_error``, ``connection_error``, ``malformed_response``,
``empty_answer``, ``missing_answer`` (a file without that question) or ``backend_error`` (a Python
system raised). They are answer response states (core/scoring/response_states.py) and score 0.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import json
import os
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from finrag_pipeline.core.config import ConfigError, config_dir, unknown_names_error

SYSTEMS_FILE = "systems.yaml"
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


# ---------------------------------------------------------------------------------------------
# The contract (what a system receives and returns)


class SystemRequest(BaseModel):
    """What every system is asked, once per question and scope."""

    model_config = ConfigDict(extra="forbid")
    question: str
    filing_id: str = Field(description="the filing the question is about")
    scope: Literal["filing", "corpus"] = Field(
        description="filing: search that filing only; corpus: every filing (the others are distractors)")
    qa_id: str | None = Field(None, description="the question's id in the QA set (for logs and files)")
    k: int | None = Field(None, ge=1, description="how many contexts to return, best first")


class SystemContext(BaseModel):
    """One retrieved passage, best first. ``filing_id`` + ``page`` (1-based, physical PDF page / HTML page
    as the platform numbers them) place it exactly; otherwise its text is matched onto the corpus."""

    model_config = ConfigDict(extra="ignore")
    text: str = ""
    filing_id: str | None = None
    page: int | None = Field(None, ge=1)
    chunk_id: str | None = Field(None, description="the platform's chunk id, if the system indexes our chunks")


class SystemCitation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    filing_id: str
    page: int = Field(ge=1)
    chunk_id: str | None = None


class SystemResponse(BaseModel):
    """A system's answer. ``answer`` empty or missing is the ``empty_answer`` failure; ``cost`` in USD."""

    model_config = ConfigDict(extra="ignore")
    answer: str | None = None
    contexts: list[SystemContext] = Field(default_factory=list)
    citations: list[SystemCitation] = Field(default_factory=list)
    cost: float | None = Field(None, ge=0)
    abstained: bool = Field(False, description="true: the system declined to answer (scored as an abstention)")


def contract_json_schema() -> dict[str, Any]:
    """The request and response JSON Schemas (docs/SYSTEMS.md shows them; a test keeps them equal)."""
    return {"request": SystemRequest.model_json_schema(), "response": SystemResponse.model_json_schema()}


# ---------------------------------------------------------------------------------------------
# One call's outcome

# States of a call; every one but "ok" is a failure response state (response_states.SYSTEM_FAILURE_STATES)
# except "abstained", which scores as a non-answer.
CALL_STATES = ("ok", "abstained", "timeout", "http_error", "connection_error", "malformed_response",
               "empty_answer", "missing_answer", "backend_error")


@dataclass
class SystemCall:
    state: str
    response: SystemResponse | None = None   # contexts are kept even when the answer is empty
    reason: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    attempts: int = 1

    @property
    def contexts(self) -> list[SystemContext]:
        return list(self.response.contexts) if self.response is not None else []


def parse_response(data: Any, *, latency_ms: float | None = None, attempts: int = 1) -> SystemCall:
    """A decoded JSON body (or a callable's return value) -> a SystemCall with its state."""
    if isinstance(data, SystemResponse):
        response = data
    else:
        if not isinstance(data, Mapping):
            return SystemCall("malformed_response", reason=f"expected a JSON object, got {type(data).__name__}",
                              latency_ms=latency_ms, attempts=attempts)
        try:
            response = SystemResponse.model_validate(dict(data))
        except ValidationError as exc:
            return SystemCall("malformed_response", reason=f"response does not match the schema: {_short(exc)}",
                              latency_ms=latency_ms, attempts=attempts)
    cost = response.cost
    if response.abstained:
        return SystemCall("abstained", response, "the system declined to answer", latency_ms, cost, attempts)
    if not (response.answer or "").strip():
        return SystemCall("empty_answer", response, "the response has no answer text", latency_ms, cost, attempts)
    return SystemCall("ok", response, None, latency_ms, cost, attempts)


def _short(exc: Exception, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text[:limit]


# ---------------------------------------------------------------------------------------------
# Kinds

SYSTEM_KINDS: dict[str, type[SystemSpec]] = {}


def register_system_kind(kind: str) -> Callable[[type[SystemSpec]], type[SystemSpec]]:
    """Class decorator: ``@register_system_kind("grpc")`` on a :class:`SystemSpec` subclass whose ``kind``
    field is ``Literal["grpc"]``; systems.yaml entries with that kind validate against it."""

    def decorate(cls: type[SystemSpec]) -> type[SystemSpec]:
        if kind in SYSTEM_KINDS and SYSTEM_KINDS[kind] is not cls:
            raise ValueError(f"system kind {kind!r} registered twice")
        SYSTEM_KINDS[kind] = cls
        return cls

    return decorate


class SystemSpec(BaseModel):
    """Fields every kind has. Subclasses implement :meth:`call`; :meth:`call_many` may run calls at once."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    description: str = ""
    k: int | None = Field(None, ge=1, description="contexts asked for; default: the largest top_k of the matrix")

    def call(self, request: SystemRequest) -> SystemCall:
        raise NotImplementedError

    def call_many(self, requests: Sequence[SystemRequest]) -> list[SystemCall]:
        """One SystemCall per request, in order. An adapter bug becomes a backend_error state."""
        return [self._safe_call(r) for r in requests]

    def _safe_call(self, request: SystemRequest) -> SystemCall:
        t0 = time.perf_counter()
        try:
            return self.call(request)
        except Exception as exc:  # noqa: BLE001 - one failing question must not hide the others
            return SystemCall("backend_error", reason=f"{type(exc).__name__}: {exc}"[:1000],
                              latency_ms=(time.perf_counter() - t0) * 1000.0)

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the system for its config hash (no secrets: header values are not in it)."""
        return self.model_dump(mode="json", exclude={"description"})

    def check_ready(self) -> None:
        """Raise ConfigError when the system cannot be called at all (missing env var, missing file)."""


def _expand_env(value: str, what: str) -> str:
    def repl(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"{what} needs the environment variable {name}, which is not set")
        return os.environ[name]

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", repl, value)


@register_system_kind("http")
class HttpSystem(SystemSpec):
    """POST :class:`SystemRequest` as JSON to ``url``; the body must be a :class:`SystemResponse`."""

    kind: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict, description='values may name env vars: "${MY_KEY}"')
    bearer_token_env: str | None = Field(None, description="env var holding a token sent as Authorization: Bearer")
    timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(2, ge=0, description="extra attempts after a 5xx or a connection error")
    backoff_s: float = Field(0.5, ge=0, description="wait before retry n is backoff_s * 2**(n-1)")
    concurrency: int = Field(4, ge=1, description="requests in flight at once")

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError(f"url must start with http:// or https://, got {v!r}")
        return v

    def fingerprint(self) -> dict[str, Any]:
        return self.model_dump(mode="json", include={"kind", "url", "k"})

    def request_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json",
                   **{k: _expand_env(v, f"header {k}") for k, v in self.headers.items()}}
        if self.bearer_token_env:
            token = os.environ.get(self.bearer_token_env)
            if not token:
                raise ConfigError(f"bearer_token_env names {self.bearer_token_env}, which is not set")
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def check_ready(self) -> None:
        self.request_headers()

    def call(self, request: SystemRequest) -> SystemCall:
        import requests

        headers = self.request_headers()
        body = request.model_dump(mode="json", exclude_none=True)
        t0 = time.perf_counter()
        attempts, last = 0, None
        while True:
            attempts += 1
            try:
                resp = requests.post(self.url, json=body, headers=headers, timeout=self.timeout_s)
            except requests.Timeout as exc:   # a slow system is not retried: it would only be slower
                return SystemCall("timeout", reason=f"no reply within {self.timeout_s:g} s ({type(exc).__name__})",
                                  latency_ms=_ms(t0), attempts=attempts)
            except requests.ConnectionError as exc:
                last = SystemCall("connection_error", reason=f"{type(exc).__name__}: {_short(exc, 200)}",
                                  attempts=attempts)
            else:
                if resp.status_code >= 500:
                    last = SystemCall("http_error", reason=f"HTTP {resp.status_code}: {resp.text[:200]}",
                                      attempts=attempts)
                elif resp.status_code >= 400:   # the request is wrong: retrying sends the same request
                    return SystemCall("http_error", reason=f"HTTP {resp.status_code}: {resp.text[:200]}",
                                      latency_ms=_ms(t0), attempts=attempts)
                else:
                    try:
                        data = resp.json()
                    except ValueError as exc:
                        return SystemCall("malformed_response", reason=f"invalid JSON: {_short(exc, 200)}; body "
                                          f"starts {resp.text[:80]!r}", latency_ms=_ms(t0), attempts=attempts)
                    return parse_response(data, latency_ms=_ms(t0), attempts=attempts)
            if attempts > self.retries:
                last.latency_ms = _ms(t0)
                if attempts > 1:
                    last.reason = f"{last.reason} (after {attempts} attempts)"
                return last
            time.sleep(self.backoff_s * 2 ** (attempts - 1))

    def call_many(self, requests_: Sequence[SystemRequest]) -> list[SystemCall]:
        self.check_ready()   # a missing secret is a configuration error, before any request
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._safe_call, requests_))


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def resolve_callable(target: str) -> Callable[..., Any]:
    """``"pkg.mod:attr"`` -> the object (ConfigError naming the part that failed)."""
    if ":" not in target:
        raise ConfigError(f"python system target {target!r} must look like 'pkg.module:callable'")
    module_name, attr = target.split(":", 1)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"python system target {target!r}: cannot import {module_name}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"python system target {target!r}: {module_name} has no {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"python system target {target!r} is not callable")
    return obj


@register_system_kind("python")
class PythonSystem(SystemSpec):
    """``target(request_dict, **options)`` returning a :class:`SystemResponse` or a dict shaped like one."""

    kind: Literal["python"] = "python"
    target: str
    options: dict[str, Any] = Field(default_factory=dict)

    def check_ready(self) -> None:
        resolve_callable(self.target)

    def call(self, request: SystemRequest) -> SystemCall:
        fn = resolve_callable(self.target)
        t0 = time.perf_counter()
        try:
            data = fn(request.model_dump(mode="json"), **self.options)
        except Exception as exc:  # noqa: BLE001 - the system's own error, recorded as its state
            return SystemCall("backend_error", reason=f"{type(exc).__name__}: {exc}"[:1000], latency_ms=_ms(t0))
        return parse_response(data, latency_ms=_ms(t0))


def question_key(text: str) -> str:
    """How a file's question text is matched to a QA item's: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@register_system_kind("file")
class FileSystem(SystemSpec):
    """Answers produced elsewhere: one JSON object per line, ``{qa_id | question, answer, contexts?,
    citations?, cost?, latency_ms?}``. ``path`` is relative to the config directory (or absolute)."""

    kind: Literal["file"] = "file"
    path: str
    key: Literal["auto", "qa_id", "question"] = "auto"
    _loaded: tuple[dict[str, Any], dict[str, Any], list[str]] | None = PrivateAttr(None)

    def resolved_path(self) -> Path:
        p = Path(os.path.expanduser(self.path))
        return p if p.is_absolute() else config_dir() / p

    def fingerprint(self) -> dict[str, Any]:
        path = self.resolved_path()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"
        # the file's bytes, not its name: new answers in the same file are another run
        return {"kind": "file", "sha256": digest, "key": self.key, "k": self.k}

    def check_ready(self) -> None:
        if not self.resolved_path().is_file():
            raise ConfigError(f"file system: {self.resolved_path()} does not exist")

    def _load(self) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        """(by qa_id, by question key, problems). A line that is not JSON is a problem of the file; a JSON line
        with a key is kept as is, so a schema error shows on its question as malformed_response."""
        if self._loaded is None:
            self.check_ready()
            by_id: dict[str, Any] = {}
            by_question: dict[str, Any] = {}
            problems: list[str] = []
            with self.resolved_path().open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError as exc:
                        problems.append(f"line {n}: invalid JSON ({_short(exc, 80)})")
                        continue
                    if not isinstance(record, dict) or not (record.get("qa_id") or record.get("question")):
                        problems.append(f"line {n}: no qa_id or question")
                        continue
                    if record.get("qa_id"):
                        by_id.setdefault(str(record["qa_id"]), record)
                    if record.get("question"):
                        by_question.setdefault(question_key(str(record["question"])), record)
            self._loaded = (by_id, by_question, problems)
        return self._loaded

    def call(self, request: SystemRequest) -> SystemCall:
        by_id, by_question, problems = self._load()
        record = None
        if self.key in ("auto", "qa_id") and request.qa_id:
            record = by_id.get(request.qa_id)
        if record is None and self.key in ("auto", "question"):
            record = by_question.get(question_key(request.question))
        if record is None:
            extra = f"; unreadable lines: {', '.join(problems[:5])}" if problems else ""
            return SystemCall("missing_answer", reason=f"no answer for qa_id {request.qa_id!r} or its question in "
                                                       f"{self.resolved_path().name}{extra}")
        latency = record.get("latency_ms")
        call = parse_response({k: v for k, v in record.items() if k not in ("qa_id", "question", "latency_ms")},
                              latency_ms=float(latency) if isinstance(latency, int | float) else None)
        return call


# ---------------------------------------------------------------------------------------------
# systems.yaml


class GateSpec(BaseModel):
    """A regression gate: the candidate must not be significantly worse than the baseline by more than
    ``max_drop`` on ``metric`` (core/evaluation/gate.py). Baseline / candidate: a run id or a config name."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    baseline: str
    candidate: str
    metric: str = "hit_page"
    max_drop: float = Field(0.0, ge=0.0)
    scope: Literal["filing", "corpus"] | None = None

    @property
    def label(self) -> str:
        return self.name or f"{self.candidate} vs {self.baseline} on {self.metric}"


class SystemsConfig(BaseModel):
    """``assets_config/systems.yaml``: ``systems`` by name (each validated by the model of its ``kind``) and
    the regression ``gates`` the blocking asset check runs on the marts."""

    model_config = ConfigDict(extra="forbid")
    systems: dict[str, SystemSpec] = Field(default_factory=dict)
    gates: list[GateSpec] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _by_kind(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        systems = data.get("systems") or {}
        if not isinstance(systems, Mapping):
            raise ValueError("systems must be a mapping of name -> definition")
        parsed: dict[str, SystemSpec] = {}
        for name, entry in systems.items():
            if not NAME_PATTERN.match(str(name)):
                raise ValueError(f"system name {name!r}: letters, digits, '_' and '-', starting with a letter")
            if isinstance(entry, SystemSpec):
                parsed[name] = entry
                continue
            if not isinstance(entry, Mapping) or "kind" not in entry:
                raise ValueError(f"system {name!r} needs a kind ({', '.join(sorted(SYSTEM_KINDS))})")
            kind = entry["kind"]
            if kind not in SYSTEM_KINDS:
                raise ValueError(f"system {name!r}: unknown kind {kind!r}; valid: {', '.join(sorted(SYSTEM_KINDS))}")
            model = SYSTEM_KINDS[kind]
            unknown = sorted(set(entry) - set(model.model_fields))
            if unknown:
                raise ValueError(f"unknown field of system {name!r} (kind {kind}) {unknown[0]!r}; "
                                 f"valid: {', '.join(sorted(model.model_fields))}")
            parsed[name] = model.model_validate(dict(entry))
        data["systems"] = parsed
        return data

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None, directory: str | os.PathLike | None = None
             ) -> SystemsConfig:
        from finrag_pipeline.core.config import config_path, deep_merge, load_yaml

        path = Path(directory) / SYSTEMS_FILE if directory else config_path(SYSTEMS_FILE)
        data = load_yaml(SYSTEMS_FILE, directory) if path.exists() else {}
        return cls.model_validate(deep_merge(data, overrides))

    def get(self, name: str) -> SystemSpec:
        if name not in self.systems:
            raise unknown_names_error("system", [name], self.systems)
        return self.systems[name]


def system_config_hash(name: str, spec: SystemSpec, k: int, call_k: int) -> str:
    """The configuration hash of a system's rows at cut-off ``k`` of a call asking ``call_k`` contexts."""
    from finrag_pipeline.core.evaluation.runner import config_hash

    return config_hash({"system": name, "k": k, "call_k": call_k, **spec.fingerprint()})


if __name__ == "__main__":   # the contract as docs/SYSTEMS.md shows it
    for part, schema in contract_json_schema().items():
        print(f"{part}:\n```json\n{json.dumps(schema, indent=2)}\n```")
