"""Compare offline LLM runtimes on the packaged Qwen2.5 GGUF files (issue 26 item 5).

For one runtime and one model, in a fresh process: load time, prompt reading speed (tokens/s over a
~600-token prompt), generation speed (tokens/s over 128 greedy tokens), peak RSS, and how many of
5 JSON-mode answers parse as a JSON object. Run each runtime in its own process so RSS is its own:

    nice -n 10 python benchmarks/local_llm_runtimes.py --runtime llama-cpp-cffi --model qwen2.5-0.5b
    nice -n 10 python benchmarks/local_llm_runtimes.py --runtime transformers-gguf --model qwen2.5-0.5b

Prints one JSON line; record the load average (`uptime`) beside it: the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import time

PASSAGE = (
    "Total net sales increased 8% or $29.3 billion during 2022 compared to 2021, driven primarily by higher "
    "net sales of iPhone, Services and Mac. Products gross margin was $114,728 million in 2022 and services "
    "gross margin was $56,054 million. Research and development expense was $26,251 million, up 14%, "
    "driven primarily by increases in headcount-related expenses. Selling, general and administrative "
    "expense was $25,094 million. Net income was $99,803 million and diluted earnings per share $6.11. "
)
JSON_PROMPTS = [
    "What was net income in 2022?",
    "What was research and development expense in 2022?",
    "By how much did total net sales increase in 2022?",
    "What was diluted earnings per share?",
    "What drove the increase in total net sales?",
]
SYSTEM = ('Answer from the passage. Reply with a JSON object {"answer": string, "evidence_quote": string}.')


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class LlamaCppCffi:
    """The prebuilt llama.cpp C library in the llama-cpp-cffi 0.4.17 wheel (the default runtime)."""

    def __init__(self, path: str, threads: int) -> None:
        from finrag_pipeline.core.llm.llama_capi import LlamaCppModel

        self.llm = LlamaCppModel(path, n_ctx=4096, n_threads=threads)

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text))

    def read(self, prompt: str) -> None:
        self.llm.eval(self.llm.tokenize(prompt))

    def generate(self, messages, max_tokens: int, json_mode: bool) -> str:
        return "".join(self.llm.generate(self.llm.tokenize(self.llm.chat_prompt(messages)),
                                         max_tokens=max_tokens, json_mode=json_mode))


class LlamaCppPySync:
    """The prebuilt llama.cpp library in the llama-cpp-py-sync wheel (CFFI, no compile)."""

    def __init__(self, path: str, threads: int) -> None:
        from llama_cpp_py_sync import Llama

        self.llm = Llama(path, n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads)

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text, add_special=False))

    def read(self, prompt: str) -> None:
        self.llm.generate(prompt, max_tokens=1, temperature=0.0)

    def generate(self, messages, max_tokens: int, json_mode: bool) -> str:
        out = self.llm.create_chat_completion(
            messages, max_tokens=max_tokens, temperature=0.0, top_k=1, repeat_penalty=1.0,
            response_format={"type": "json_object"} if json_mode else None)
        return out["choices"][0]["message"]["content"]


class TransformersGGUF:
    """transformers + torch CPU, dequantising the GGUF into float32 at load (needs the gguf package)."""

    def __init__(self, path: str, threads: int, dtype: str = "float32") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        folder, name = os.path.split(path)
        self.tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        self.model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                          torch_dtype=getattr(torch, dtype))
        self.model.eval()
        self.torch = torch

    def count(self, text: str) -> int:
        return len(self.tok(text)["input_ids"])

    def read(self, prompt: str) -> None:
        with self.torch.inference_mode():
            self.model(**self.tok(prompt, return_tensors="pt"))

    def generate(self, messages, max_tokens: int, json_mode: bool) -> str:
        # No grammar-constrained decoding here: JSON mode is the prompt alone.
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        with self.torch.inference_mode():
            out = self.model.generate(ids, max_new_tokens=max_tokens, do_sample=False)
        return self.tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


RUNTIMES = {"llama-cpp-cffi": LlamaCppCffi, "llama-cpp-py-sync": LlamaCppPySync,
            "transformers-gguf": TransformersGGUF}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", choices=sorted(RUNTIMES), required=True)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--json-prompts", type=int, default=len(JSON_PROMPTS))
    args = ap.parse_args()

    from finrag_pipeline.core.llm.local_model import ensure_local_model

    path = str(ensure_local_model(args.model))
    t0 = time.perf_counter()
    rt = RUNTIMES[args.runtime](path, args.threads)
    load_s = time.perf_counter() - t0

    prompt = PASSAGE * 6
    n_prompt = rt.count(prompt)
    t0 = time.perf_counter()
    rt.read(prompt)
    read_tps = n_prompt / (time.perf_counter() - t0)

    story = [{"role": "user", "content": "Write a long, detailed story about a lighthouse keeper."}]
    t0 = time.perf_counter()
    text = rt.generate(story, args.gen_tokens, json_mode=False)
    gen_s = time.perf_counter() - t0
    n_gen = rt.count(text)

    valid = 0
    answers = []
    for q in JSON_PROMPTS[: args.json_prompts]:
        reply = rt.generate([{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": f"Passage: {PASSAGE}\nQuestion: {q}"}], 96, True)
        with contextlib.suppress(ValueError):
            valid += isinstance(json.loads(reply), dict)
        answers.append(reply[:120])
    print(json.dumps({
        "runtime": args.runtime, "model": args.model, "threads": args.threads,
        "load_s": round(load_s, 2), "prompt_tokens": n_prompt, "read_tokens_per_s": round(read_tps, 1),
        "generated_tokens": n_gen, "generate_tokens_per_s": round(n_gen / gen_s, 1),
        "json_valid": f"{valid}/{args.json_prompts}", "peak_rss_mb": round(_rss_mb()),
        "loadavg": os.getloadavg()[0], "answers": answers}))


if __name__ == "__main__":
    main()
