"""LLM-written questions through any litellm model, with failures counted instead of raised.

Chunks are sampled round-robin over sections and spread over pages (coverage, not the first ten
pages); each prompt asks for one question of a type in strict JSON; the chunk (two for
multi-hop) becomes the evidence. Generator name, version and the prompt's hash are recorded.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from typing import Any

from finrag_pipeline.core.llm.client import LLMClient
from finrag_pipeline.core.models import Chunk, EvidencePlace, FilingMeta, Page, QAItem, stable_id
from finrag_pipeline.core.numbers import NUM_TOKEN_RE, digits_key, is_distinctive
from finrag_pipeline.core.qa.config import QAConfig

GENERATOR_VERSION = "1.2"

# Written for small local models as much as for large ones: one task, the keys described in place
# (not an example to copy), the rules as a short list, and the excerpt kept short (llm.max_chunk_chars).
SYSTEM = ("You write one exam question about a company's annual report (Form 10-K). "
          "You reply with one JSON object and nothing else.")

TYPE_INSTRUCTIONS = {
    "factual": "Ask about one fact stated in Excerpt A.",
    "numerical": "Ask for one figure (an amount, count or percentage) printed in Excerpt A.",
    "comparative": "Ask which of two figures or two years in Excerpt A is higher.",
    "multi-hop": "Ask a question that needs one fact from Excerpt A and one fact from Excerpt B together.",
}

USER = ("Company: {company}. Fiscal year: {year}.\n\n{excerpts}\n\nTask: {instruction}\n"
        "Rules:\n"
        "- the question is a full sentence that starts with What, Which or How and ends with a question mark;\n"
        "- the question names {company} and a fiscal year, and never mentions an excerpt, table, text or passage;\n"
        "- the answer is short: one figure or a few words copied from the excerpt;\n"
        "- evidence_quote copies, word for word, the line of the excerpt that holds the answer.\n"
        'Reply with JSON: {{"question": "<the question>", "answer": "<the answer>", '
        '"question_type": "{qtype}", "evidence_quote": "<words copied from the excerpt>"}}')


def prompt_hash() -> str:
    """Hash of every prompt text, so a set records which prompts made it."""
    blob = "\x1f".join([SYSTEM, USER, *[f"{k}={v}" for k, v in sorted(TYPE_INSTRUCTIONS.items())]])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sample_chunks(chunks: list[Chunk], n: int, seed: str, min_chars: int = 200,
                  chunk_types: tuple[str, ...] = ("prose", "table_row")) -> list[Chunk]:
    """``n`` leaf chunks, round-robin over sections, each section's pick spread over its pages."""
    pool = [c for c in chunks if c.is_leaf and c.chunk_type in chunk_types and len(c.text) >= min_chars]
    rng = random.Random(seed)
    by_section: dict[str, list[Chunk]] = defaultdict(list)
    for c in sorted(pool, key=lambda c: (c.page_start, c.position)):
        by_section[c.section or "front"].append(c)
    queues = []
    for section in sorted(by_section):
        items = by_section[section]
        rng.shuffle(items)
        queues.append(sorted(items[: max(1, n)], key=lambda c: rng.random()))
    rng.shuffle(queues)
    out: list[Chunk] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def _best_page(chunk: Chunk, quote: str, pages: dict[int, Page]) -> int:
    """The chunk page whose text contains the quote (or its first numbers), else its first page."""
    probe = (quote or "")[:60].lower()
    for p in range(chunk.page_start, chunk.page_end + 1):
        if probe and p in pages and probe in pages[p].text.lower():
            return p
    return chunk.page_start


def _answer_figures(answer: str) -> list[dict[str, Any]]:
    figs = []
    for m in NUM_TOKEN_RE.finditer(answer or ""):
        key = digits_key(m.group(0))
        if is_distinctive(key) or "." in key:
            figs.append({"value": float(key), "unit": None, "text": m.group(0), "role": "source", "scale": 1.0})
    return figs


def _validate(parsed: Any) -> dict[str, str] | None:
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    if not isinstance(parsed, dict):
        return None
    def pick(*keys: str) -> str:
        for k in keys:   # small models rename keys ("Question", "evidence", "quote")
            for key, value in parsed.items():
                if str(key).strip().lower().replace(" ", "_") == k and value not in (None, ""):
                    return str(value).strip() if not isinstance(value, list) else " ".join(map(str, value)).strip()
        return ""

    q, a = pick("question", "q"), pick("answer", "a", "reference_answer")
    if len(q) < 10 or not a or "<" in q[:2]:
        return None
    return {"question": q, "answer": a, "question_type": pick("question_type", "type"),
            "evidence_quote": pick("evidence_quote", "evidence", "quote", "supporting_quote") or a}


def generate_llm(meta: FilingMeta, pages: list[Page], chunks: list[Chunk], config: QAConfig,
                 client: LLMClient) -> tuple[list[QAItem], list[dict[str, Any]]]:
    """Questions from sampled chunks; every call outcome other than a usable question is counted."""
    settings = config.llm
    generator = f"llm:{client.name}"
    phash = prompt_hash()
    page_map = {p.page_number: p for p in pages}
    sampled = sample_chunks(chunks, settings.n_chunks, f"{config.seed}:{meta.filing_id}",
                            settings.min_chunk_chars, tuple(settings.chunk_types))
    counts: dict[str, int] = defaultdict(int)
    items: list[QAItem] = []
    for i, chunk in enumerate(sampled):
        qtype = settings.question_types[i % len(settings.question_types)]
        group = [chunk]
        if qtype == "multi-hop":
            partner = sampled[(i + 1) % len(sampled)] if len(sampled) > 1 else None
            if partner is None or partner.chunk_id == chunk.chunk_id:
                counts["multi_hop_without_partner"] += 1
                continue
            group.append(partner)
        excerpts = "\n\n".join(f"Excerpt {'AB'[k]} (page {c.page_start}):\n{c.text[: settings.max_chunk_chars]}"
                               for k, c in enumerate(group))
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": USER.format(company=meta.company, year=meta.fiscal_year,
                                                            excerpts=excerpts, instruction=TYPE_INSTRUCTIONS[qtype],
                                                            qtype=qtype)}]
        resp = client.complete(messages, json=True)
        counts[f"call:{resp.state}"] += 1
        if resp.state == "unavailable":  # a local model not installed: every further call fails alike
            counts[f"unavailable: {resp.error}"] += 1
            break
        if resp.cached:
            counts["cache_hit"] += 1
        if not resp.ok:
            continue
        if getattr(resp, "json_truncated", False) and not resp.json_complete(("question", "answer", "evidence_quote")):
            counts["truncated_output"] += 1  # a question or answer cut off mid-JSON is never a QA item
            continue
        fields = _validate(resp.parsed_json)
        if fields is None:
            counts["missing_fields"] += 1
            continue
        joined = "\n".join(c.text for c in group)
        quote_found = bool(fields["evidence_quote"]) and _norm(fields["evidence_quote"]) in _norm(joined)
        evidence = [[EvidencePlace(c.chunk_id, _best_page(c, fields["evidence_quote"], page_map), meta.filing_id)]
                    for c in group]
        figs = _answer_figures(fields["answer"])  # checked against the evidence by the filters
        out_type = {"multi-hop": "multi-page"}.get(qtype, qtype)
        if out_type == "multi-page" and {c.page_start for c in group} == {chunk.page_start}:
            out_type = "comparative"
        items.append(QAItem(
            qa_id=stable_id(meta.filing_id, generator, qtype, *[c.chunk_id for c in group]),
            filing_id=meta.filing_id, question=fields["question"], reference_answer=fields["answer"],
            question_type=out_type, answer_figures=figs, evidence=evidence, generator=generator,
            generator_version=GENERATOR_VERSION, prompt_hash=phash, difficulty="medium",
            metadata={"requested_type": qtype, "model_type": fields["question_type"],
                      "evidence_quote": fields["evidence_quote"], "quote_found": quote_found,
                      "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
                      "latency_ms": resp.latency_ms, "cost_usd": resp.cost_usd}))
    log = [{"stage": "llm_generate", "reason": r, "count": n, "generator": generator}
           for r, n in sorted(counts.items())]
    return items, log


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s.,$%]", " ", text.lower())).strip()
