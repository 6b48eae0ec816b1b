"""One way to call any LLM: litellm underneath, a disk cache, retries, and a state instead of exceptions.

``LLMClient(model).complete(messages)`` returns an :class:`LLMResponse` whose ``state`` says what
happened ("ok", "timeout", "invalid_output", "empty", "backend_error", "unavailable": a local model
whose runtime or weights are not installed, with the install command in ``error``); model
misbehaviour and backend failures never raise, so a QA or evaluation asset can count them instead of dying.
Every model answer is cached under ``FINRAG_HOME/cache/llm`` keyed by sha256(model, messages,
params): a re-run with the same inputs makes no model call and costs nothing.
"""

from __future__ import annotations

import hashlib
import json as _json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from finrag_pipeline.core.llm.json_extract import JsonExtraction, extract_json_checked
from finrag_pipeline.core.llm.registry import ModelRegistry, ModelSpec, load_model_registry
from finrag_pipeline.core.paths import FinragPaths

ResponseState = Literal["ok", "timeout", "invalid_output", "empty", "backend_error", "unavailable"]
CACHE_FORMAT = 1


def import_litellm():
    """Import litellm without its network price-list fetch, and register the local provider."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    from finrag_pipeline.core.llm.local_provider import register_local_provider

    register_local_provider()
    return litellm


@dataclass
class LLMResponse:
    text: str
    parsed_json: Any | None
    state: ResponseState
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    error: str | None = None
    attempts: int = 0
    json_truncated: bool = False  # the reply's JSON was cut off and repaired (see json_complete)
    json_complete_keys: tuple[str, ...] = ()  # with json_truncated: top-level keys whose values ended

    def json_complete(self, required: tuple[str, ...]) -> bool:
        """``parsed_json`` holds every ``required`` key, and none of them was cut off by a truncation."""
        return isinstance(self.parsed_json, dict) and all(k in self.parsed_json for k in required) and (
            not self.json_truncated or set(required) <= set(self.json_complete_keys))

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def _transient_errors(litellm) -> tuple[type[BaseException], ...]:
    return (litellm.RateLimitError, litellm.APIConnectionError, litellm.InternalServerError,
            litellm.ServiceUnavailableError)


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """sha256 over the model string, the messages and every call parameter (sorted, JSON)."""
    blob = _json.dumps({"model": model, "messages": messages, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMClient:
    """A configured model. ``params`` go to ``litellm.completion`` (temperature, top_p, max_tokens,
    api_base, api_key, mock_response, ...)."""

    def __init__(
        self,
        model: str,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 1.0,
        cost_per_1k_prompt: float = 0.0,
        cost_per_1k_completion: float = 0.0,
        cache_dir: str | os.PathLike | None = None,
        use_cache: bool = True,
        name: str | None = None,
        **params: Any,
    ) -> None:
        self.model = model
        self.name = name or model
        self.params = params
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.cost_per_1k_prompt = cost_per_1k_prompt
        self.cost_per_1k_completion = cost_per_1k_completion
        self.use_cache = use_cache
        self.cache_dir = Path(cache_dir) if cache_dir else FinragPaths.from_env().llm_cache_dir
        self.calls = 0  # real backend calls made (cache hits excluded), for tests and logs

    @classmethod
    def from_spec(cls, spec: ModelSpec, **overrides: Any) -> LLMClient:
        kwargs: dict[str, Any] = dict(
            timeout_s=spec.timeout_s, max_retries=spec.max_retries, backoff_s=spec.backoff_s,
            cost_per_1k_prompt=spec.cost_per_1k_prompt, cost_per_1k_completion=spec.cost_per_1k_completion,
            name=spec.name or spec.provider, **spec.params,
        )
        kwargs.update(overrides)
        return cls(spec.provider, **kwargs)

    @classmethod
    def from_registry(cls, name: str, registry: ModelRegistry | None = None, **overrides: Any) -> LLMClient:
        """Build the client for a name in models.yaml (or a raw litellm model string)."""
        return cls.from_spec((registry or load_model_registry()).get(name), **overrides)

    # -- public -----------------------------------------------------------------------------------
    def complete(self, messages: list[dict[str, Any]], json: bool = True, **params: Any) -> LLMResponse:
        """Call the model once (plus retries); never raises for model or backend failure."""
        call_params = {**self.params, **params}
        if json:
            call_params["response_format"] = {"type": "json_object"}
        key = cache_key(self.model, messages, call_params)
        if self.use_cache and (hit := self._cache_read(key)) is not None:
            return self._finish(hit["text"], json, hit["prompt_tokens"], hit["completion_tokens"],
                                latency_ms=0.0, cached=True, attempts=0)
        return self._call_with_retries(messages, call_params, json, key)

    def unavailable_reason(self) -> str | None:
        """For a local model: why it cannot run here (one line naming the install command), else None.
        Checked once per process; hosted models are never checked (their errors come per call)."""
        return local_unavailable_reason(self.model)

    # -- internals --------------------------------------------------------------------------------
    def _call_with_retries(self, messages, call_params, want_json: bool, key: str) -> LLMResponse:
        if reason := self.unavailable_reason():
            return LLMResponse("", None, "unavailable", error=reason)
        litellm = import_litellm()
        transient = _transient_errors(litellm)
        last_state: ResponseState = "backend_error"
        last_error = ""
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * (2 ** (attempt - 1)))  # exponential backoff
            try:
                self.calls += 1
                resp = litellm.completion(model=self.model, messages=messages, timeout=self.timeout_s,
                                          num_retries=0, drop_params=True, **call_params)
            except litellm.Timeout as exc:
                last_state, last_error = "timeout", f"{type(exc).__name__}: {exc}"[:500]
                continue
            except transient as exc:
                last_state, last_error = "backend_error", f"{type(exc).__name__}: {exc}"[:500]
                continue
            except Exception as exc:  # noqa: BLE001 - auth, bad request, unknown provider: not retried
                if (local := _local_unavailable(exc)) is not None:
                    return LLMResponse("", None, "unavailable", error=str(local), latency_ms=_ms_since(started),
                                       attempts=attempt + 1)
                return LLMResponse("", None, "backend_error", error=f"{type(exc).__name__}: {exc}"[:500],
                                   latency_ms=_ms_since(started), attempts=attempt + 1)
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = getattr(resp, "usage", None)
            p_tok = int(getattr(usage, "prompt_tokens", 0) or 0)
            c_tok = int(getattr(usage, "completion_tokens", 0) or 0)
            if self.use_cache:
                self._cache_write(key, {"text": text, "prompt_tokens": p_tok, "completion_tokens": c_tok})
            return self._finish(text, want_json, p_tok, c_tok, latency_ms=_ms_since(started),
                                cached=False, attempts=attempt + 1, raw=resp)
        return LLMResponse("", None, last_state, error=last_error, latency_ms=_ms_since(started),
                           attempts=self.max_retries + 1)

    def _finish(self, text: str, want_json: bool, p_tok: int, c_tok: int, *, latency_ms: float,
                cached: bool, attempts: int, raw: Any = None) -> LLMResponse:
        cost = 0.0 if cached else self._cost(p_tok, c_tok, raw)
        if not text.strip():
            return LLMResponse(text, None, "empty", p_tok, c_tok, latency_ms, cost, cached, attempts=attempts)
        extraction = extract_json_checked(text) if want_json else JsonExtraction(None)
        parsed = extraction.value
        state: ResponseState = "invalid_output" if want_json and parsed is None else "ok"
        return LLMResponse(text, parsed, state, p_tok, c_tok, latency_ms, cost, cached, attempts=attempts,
                           json_truncated=extraction.truncated,
                           json_complete_keys=tuple(sorted(extraction.complete_keys)))

    def _cost(self, p_tok: int, c_tok: int, raw: Any) -> float:
        if self.cost_per_1k_prompt or self.cost_per_1k_completion:
            return p_tok / 1000 * self.cost_per_1k_prompt + c_tok / 1000 * self.cost_per_1k_completion
        if raw is None or self.model.startswith("local/") or "mock_response" in self.params:
            return 0.0
        try:  # litellm's bundled price map knows the hosted models
            import litellm

            return float(litellm.completion_cost(completion_response=raw) or 0.0)
        except Exception:  # noqa: BLE001 - unknown model: no price
            return 0.0

    def _cache_path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cache_read(self, key: str) -> dict[str, Any] | None:
        path = self._cache_path(key)
        try:
            data = _json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return data if data.get("format") == CACHE_FORMAT else None

    def _cache_write(self, key: str, payload: dict[str, Any]) -> None:
        path = self._cache_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(_json.dumps({"format": CACHE_FORMAT, "model": self.model, **payload}), "utf-8")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one



_UNAVAILABLE: dict[str, str | None] = {}


def local_unavailable_reason(model: str) -> str | None:
    """For a litellm model string "local/<name>": why it cannot run here (one line naming the install
    command), or None; None for every other provider. Checked once per process and model."""
    if not model.startswith("local/"):
        return None
    if model not in _UNAVAILABLE:
        from finrag_pipeline.core.llm.local_provider import unavailable_reason

        _UNAVAILABLE[model] = unavailable_reason(model.split("/", 1)[1])
    return _UNAVAILABLE[model]


def _local_unavailable(exc: BaseException):
    """The LocalLLMUnavailable behind ``exc`` (litellm may wrap a custom provider's exception), or None."""
    from finrag_pipeline.core.llm.local_model import LocalLLMUnavailable

    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, LocalLLMUnavailable):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def response_to_dict(resp: LLMResponse) -> dict[str, Any]:
    return asdict(resp)
