"""llama.cpp through the prebuilt C library in the ``llama-cpp-cffi`` wheel: no compile at install.

``llama-cpp-python`` has no wheel on PyPI (it compiles llama.cpp, ~12 min on 2 cores). The
``llama-cpp-cffi==0.4.17`` wheel (manylinux_2_28, CPU build with AVX2) carries llama.cpp's public C
API compiled into ``llama/_llama_cpp_cpu.*.so``. Newer versions of that wheel and
``llama-cpp-py-sync`` need a newer glibc/libstdc++ than Debian 12 has (see docs/BENCHMARKS.md).

Why the extension is loaded by file and not as ``llama._llama_cpp_cpu``: the package's
``__init__`` imports its own high-level API, which pins huggingface-hub/protobuf/attrs versions that
conflict with transformers 4.57 (so the wheel is installed with ``--no-deps``) and downloads
tokenizers from the hub. Only the compiled C API is used here, and only llama.cpp's public
functions (``llama.h``). ``test_llm_runtime.py`` checks the functions this module calls exist.

:class:`LlamaCppModel` is a small driver: chat template from the GGUF, greedy or sampled
generation, JSON via a GBNF grammar, stop strings, a deadline between tokens, prefix-reusing
evaluation and last-token logits (for P(Yes) scoring).
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

WHEEL = "llama-cpp-cffi==0.4.17"
_EXT_NAME = "_llama_cpp_cpu"
_LOCK = threading.Lock()
_CAPI: Any = None

# The JSON grammar from llama.cpp's grammars/json.gbnf (an object at the root, as response_format
# json_object asks).
JSON_OBJECT_GRAMMAR = r'''
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [1-9] [0-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
'''


class RuntimeMissing(ImportError):
    """The prebuilt llama.cpp library is not installed (or cannot load on this machine)."""


def find_library() -> str | None:
    """Path of the wheel's compiled llama.cpp extension, or None (found without importing anything:
    ``find_spec`` of a top-level package does not run its ``__init__``)."""
    spec = importlib.util.find_spec("llama")
    dirs = list(spec.submodule_search_locations or []) if spec else []
    found = sorted(p for d in dirs for p in glob.glob(os.path.join(d, f"{_EXT_NAME}.*.so")))
    return found[0] if found else None


def load_capi() -> tuple[Any, Any]:
    """(lib, ffi) of llama.cpp's C API from the llama-cpp-cffi wheel, loaded once per process."""
    global _CAPI
    with _LOCK:
        if _CAPI is None:
            path = find_library()
            if path is None:
                raise RuntimeMissing(f"the prebuilt llama.cpp library ({WHEEL}) is not installed")
            ext_spec = importlib.util.spec_from_file_location(_EXT_NAME, path)
            module = importlib.util.module_from_spec(ext_spec)
            try:
                ext_spec.loader.exec_module(module)
            except ImportError as exc:  # e.g. a glibc/libstdc++ older than the build's
                raise RuntimeMissing(f"the prebuilt llama.cpp library ({WHEEL}) does not load here: "
                                     f"{str(exc)[:200]}") from exc
            lib, ffi = module.lib, module.ffi

            @ffi.def_extern(name="llama_cpp_cffi_ggml_log_callback")
            def _quiet_log(level, text, user_data):  # llama.cpp logs every load to stderr otherwise
                return None

            lib.llama_log_set(lib.llama_cpp_cffi_ggml_log_callback, ffi.NULL)
            lib.llama_backend_init()
            _CAPI = (lib, ffi)
        return _CAPI


class LlamaCppModel:
    """One GGUF model and one context (not thread-safe: callers serialise with a lock)."""

    def __init__(self, model_path: str, n_ctx: int = 4096, n_threads: int = 1, n_batch: int = 512) -> None:
        lib, ffi = self.lib, self.ffi = load_capi()
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self._model = lib.llama_model_load_from_file(str(model_path).encode(), mparams)
        if self._model == ffi.NULL:
            raise RuntimeError(f"llama.cpp could not load {model_path}")
        cparams = lib.llama_context_default_params()
        cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = n_ctx, n_batch, n_batch
        cparams.n_threads = cparams.n_threads_batch = n_threads
        self._ctx = lib.llama_init_from_model(self._model, cparams)
        if self._ctx == ffi.NULL:
            lib.llama_model_free(self._model)
            raise RuntimeError(f"llama.cpp could not create a context for {model_path}")
        self._vocab = lib.llama_model_get_vocab(self._model)
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self._evaluated: list[int] = []   # tokens whose KV entries the context holds, in order
        tmpl = lib.llama_model_chat_template(self._model, ffi.NULL)
        self._template = ffi.string(tmpl) if tmpl != ffi.NULL else None

    def close(self) -> None:
        if getattr(self, "_ctx", None) is not None:
            self.lib.llama_free(self._ctx)
            self.lib.llama_model_free(self._model)
            self._ctx = self._model = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    # -- text <-> tokens ------------------------------------------------------------------------
    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        raw = text.encode("utf-8")
        cap = len(raw) + 16
        buf = self.ffi.new("int32_t[]", cap)
        n = self.lib.llama_tokenize(self._vocab, raw, len(raw), buf, cap, add_special, parse_special)
        if n < 0:  # buffer too small: -n is the size needed
            cap = -n
            buf = self.ffi.new("int32_t[]", cap)
            n = self.lib.llama_tokenize(self._vocab, raw, len(raw), buf, cap, add_special, parse_special)
        return list(buf[0:n])

    def token_bytes(self, token: int) -> bytes:
        buf = self.ffi.new("char[]", 64)
        n = self.lib.llama_token_to_piece(self._vocab, token, buf, 64, 0, False)
        if n < 0:
            buf = self.ffi.new("char[]", -n)
            n = self.lib.llama_token_to_piece(self._vocab, token, buf, -n, 0, False)
        return self.ffi.buffer(buf, n)[:]

    def chat_prompt(self, messages: list[dict[str, Any]]) -> str:
        """The prompt text for ``messages`` by the GGUF's own chat template, assistant turn opened."""
        if self._template is None:
            raise RuntimeError("the GGUF has no chat template")
        ffi = self.ffi
        keep = []
        chat = ffi.new("struct llama_chat_message[]", len(messages))
        for i, m in enumerate(messages):
            role, content = ffi.new("char[]", str(m["role"]).encode()), ffi.new(
                "char[]", str(m.get("content") or "").encode("utf-8"))
            keep += [role, content]
            chat[i].role, chat[i].content = role, content
        size = sum(len(str(m.get("content") or "").encode("utf-8")) for m in messages) * 2 + 512
        for _ in range(2):
            buf = ffi.new("char[]", size)
            n = self.lib.llama_chat_apply_template(self._template, chat, len(messages), True, buf, size)
            if n < 0:
                raise RuntimeError("llama.cpp does not know the GGUF's chat template")
            if n <= size:
                return ffi.buffer(buf, n)[:].decode("utf-8", "replace")
            size = n + 1
        raise RuntimeError("chat template output did not fit")

    # -- evaluation -----------------------------------------------------------------------------
    def eval(self, tokens: list[int]) -> None:
        """Make the context hold exactly ``tokens``, reusing the KV cache of the shared prefix
        (consecutive calls with the same system prompt or query pay only for what differs)."""
        if len(tokens) >= self.n_ctx:
            raise ValueError(f"prompt of {len(tokens)} tokens exceeds the context of {self.n_ctx}")
        common = 0
        for a, b in zip(self._evaluated, tokens[:-1], strict=False):  # always re-evaluate the last token
            if a != b:
                break
            common += 1
        if common == 0:
            self.lib.llama_kv_cache_clear(self._ctx)
        else:
            self.lib.llama_kv_cache_seq_rm(self._ctx, -1, common, -1)
        self._evaluated = self._evaluated[:common]
        self._decode(tokens[common:])

    def _decode(self, tokens: list[int]) -> None:
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            arr = self.ffi.new("int32_t[]", chunk)
            # llama_batch_get_one positions the tokens after the ones in the KV cache.
            rc = self.lib.llama_decode(self._ctx, self.lib.llama_batch_get_one(arr, len(chunk)))
            if rc != 0:
                self._evaluated = []
                self.lib.llama_kv_cache_clear(self._ctx)
                raise RuntimeError(f"llama_decode failed with code {rc}")
            self._evaluated.extend(chunk)

    def last_logits(self):
        """Logits for the token after the last evaluated one (a numpy view, valid until the next eval)."""
        import numpy as np

        ptr = self.lib.llama_get_logits_ith(self._ctx, -1)
        return np.frombuffer(self.ffi.buffer(ptr, self.n_vocab * 4), dtype=np.float32)

    # -- generation -----------------------------------------------------------------------------
    def _sampler(self, temperature: float, top_p: float, seed: int | None, json_mode: bool):
        lib, ffi = self.lib, self.ffi
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if json_mode:
            grammar = lib.llama_sampler_init_grammar(self._vocab, JSON_OBJECT_GRAMMAR.encode(), b"root")
            if grammar == ffi.NULL:
                lib.llama_sampler_free(chain)
                raise RuntimeError("llama.cpp rejected the JSON grammar")
            lib.llama_sampler_chain_add(chain, grammar)
        if temperature <= 0:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        else:
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(top_p, 1))
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(temperature))
            lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(
                0xFFFFFFFF if seed is None else seed & 0xFFFFFFFF))
        return chain

    def _grammar_greedy(self, grammar) -> int:
        """The most likely token the grammar allows, checking only the argmax first.

        Applying a grammar to all ~151k vocabulary entries each step halved the speed of JSON
        output here; the greedy choice is nearly always allowed, so it is tried alone and the whole
        vocabulary is constrained only when it is rejected (what llama.cpp's own common sampler does)."""
        import numpy as np

        lib, ffi = self.lib, self.ffi
        logits = self.last_logits()
        token = int(np.argmax(logits))
        one = ffi.new("llama_token_data[1]")
        one[0].id, one[0].logit, one[0].p = token, float(logits[token]), 0.0
        arr = ffi.new("llama_token_data_array *")
        arr.data, arr.size, arr.selected, arr.sorted = one, 1, -1, False
        lib.llama_sampler_apply(grammar, arr)
        if not np.isfinite(one[0].logit):
            cand = np.empty(self.n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
            cand["id"] = np.arange(self.n_vocab, dtype=np.int32)
            cand["logit"] = logits
            cand["p"] = 0.0
            arr.data, arr.size = ffi.from_buffer("llama_token_data[]", cand), self.n_vocab
            lib.llama_sampler_apply(grammar, arr)
            token = int(cand["id"][np.argmax(cand["logit"])])
        lib.llama_sampler_accept(grammar, token)
        return token

    def generate(self, prompt_tokens: list[int], *, max_tokens: int = 512, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, json_mode: bool = False,
                 stop: list[str] | None = None, deadline: float | None = None) -> Iterator[str]:
        """Yield text pieces after ``prompt_tokens``; stops at end-of-generation, a stop string,
        ``max_tokens`` (then ``self.finish == "length"``) or raises TimeoutError after ``deadline``."""
        room = self.n_ctx - len(prompt_tokens) - 1
        if room <= 0:
            raise ValueError(f"prompt of {len(prompt_tokens)} tokens leaves no room in a context of {self.n_ctx}")
        max_tokens = min(max_tokens, room)
        self.eval(prompt_tokens)
        lazy_grammar = json_mode and temperature <= 0
        sampler = self._sampler(temperature, top_p, seed, json_mode and not lazy_grammar)
        if lazy_grammar:
            grammar = self.lib.llama_sampler_init_grammar(self._vocab, JSON_OBJECT_GRAMMAR.encode(), b"root")
            if grammar == self.ffi.NULL:
                self.lib.llama_sampler_free(sampler)
                raise RuntimeError("llama.cpp rejected the JSON grammar")
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = [s for s in (stop or []) if s]
        text, emitted = "", 0
        self.finish, self.n_generated = "stop", 0
        try:
            for _ in range(max_tokens):
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("generation passed its deadline")
                if lazy_grammar:
                    token = self._grammar_greedy(grammar)
                else:
                    token = self.lib.llama_sampler_sample(sampler, self._ctx, -1)
                if self.lib.llama_vocab_is_eog(self._vocab, token):
                    break
                self.n_generated += 1
                text += decoder.decode(self.token_bytes(token))
                cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
                if cut >= 0:
                    if cut > emitted:
                        yield text[emitted:cut]
                    return
                # hold back a tail that could be the start of a stop string
                hold = max((len(s) - 1 for s in stops), default=0)
                if len(text) - hold > emitted:
                    yield text[emitted:len(text) - hold]
                    emitted = len(text) - hold
                self._decode([token])
            else:
                self.finish = "length"
            text += decoder.decode(b"", final=True)
            if len(text) > emitted:
                yield text[emitted:]
        finally:
            self.lib.llama_sampler_free(sampler)
            if lazy_grammar:
                self.lib.llama_sampler_free(grammar)
