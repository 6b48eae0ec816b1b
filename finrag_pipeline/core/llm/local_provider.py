"""The in-process llama.cpp provider: ``litellm.completion(model="local/qwen2.5-0.5b", ...)``.

Registered in ``litellm.custom_provider_map`` under the provider name "local", so every caller
goes through the same litellm path as a hosted model. Each GGUF is loaded once per process
(n_ctx=4096, n_threads=FINRAG_LLM_THREADS or all cores). Generation streams internally so a wall-clock timeout can stop it
between tokens (llama.cpp itself cannot be interrupted mid-call).

:func:`score_yes_no` and :func:`score_pairs` read P(Yes) from the last-token logits: a cheap
judge and a reranker when no cross-encoder weights are available offline.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

from finrag_pipeline.core.llm.local_model import LOCAL_MODELS, ensure_local_model

PROVIDER = "local"
N_CTX = 4096
# llama.cpp threads wait for each other in spin barriers: on 2 cores shared with other work, 2 threads
# ran 20x slower than 1 here. FINRAG_LLM_THREADS sets it (default: all cores, right on a quiet machine).
N_THREADS = int(os.environ.get("FINRAG_LLM_THREADS") or os.cpu_count() or 1)
_LOCK = threading.RLock()  # llama.cpp contexts are not thread-safe
_MODELS: dict[str, Any] = {}


def load_llama(name: str = "qwen2.5-0.5b"):
    """The process-wide ``llama_cpp.Llama`` for a local model name, loaded on first use."""
    with _LOCK:
        if name not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise RuntimeError("llama-cpp-python is missing: pip install -e '.[local-llm]'") from exc
            path = ensure_local_model(name)
            _MODELS[name] = Llama(model_path=str(path), n_ctx=N_CTX, n_threads=N_THREADS,
                                  n_threads_batch=N_THREADS, verbose=False)
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
        kwargs["stop"] = optional_params["stop"]
    return kwargs


def run_chat(model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any],
             timeout_s: float | None = None) -> tuple[str, int, int, str]:
    """Generate with the local model: (text, prompt_tokens, completion_tokens, finish_reason).

    Raises TimeoutError when ``timeout_s`` passes before generation ends."""
    llm = load_llama(_model_name(model))
    kwargs = _generation_kwargs(optional_params)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    pieces: list[str] = []
    n_completion = 0
    finish = "stop"
    with _LOCK:
        stream = llm.create_chat_completion(messages=messages, stream=True, **kwargs)
        for chunk in stream:
            choice = chunk["choices"][0]
            piece = choice.get("delta", {}).get("content") or ""
            if piece:
                pieces.append(piece)
                n_completion += 1
            finish = choice.get("finish_reason") or finish
            if deadline and time.monotonic() > deadline:
                stream.close()
                raise TimeoutError(f"local model {model} exceeded {timeout_s}s")
        n_prompt = max(0, llm.n_tokens - n_completion)
    return "".join(pieces), n_prompt, n_completion, finish


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


def _first_tokens(llm, words: tuple[str, ...]) -> list[int]:
    ids = {llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)[0] for w in words}
    return sorted(ids)


def _logsumexp(values: list[float]) -> float:
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


def _eval_reusing_prefix(llm, tokens: list[int]) -> None:
    """Evaluate ``tokens``, keeping the KV cache of the prefix shared with the previous call
    (consecutive pairs with the same query then only pay for the passage)."""
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
    llm = load_llama(_model_name(model))
    with _LOCK:
        tokens = llm.tokenize(_chatml(prompt, system).encode("utf-8"), add_bos=False, special=True)
        tokens = tokens[-(N_CTX - 8):]  # keep the question end (and the open assistant turn) when too long
        _eval_reusing_prefix(llm, tokens)
        logits = _last_logits(llm)
        yes = _logsumexp([float(logits[t]) for t in _first_tokens(llm, ("Yes", "yes", " Yes"))])
        no = _logsumexp([float(logits[t]) for t in _first_tokens(llm, ("No", "no", " No"))])
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
