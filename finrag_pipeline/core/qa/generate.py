"""``generate_qa_set``: run the configured generators for one filing, then the filters.
``generate_llm_set``: LLM questions for one filing on demand (`finrag qa generate`), through the same
filters, deduplicated against the questions the filing already has, with their leakage measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.llm.client import LLMClient
from finrag_pipeline.core.models import Chunk, FilingMeta, Page, QAItem, TableRow, XbrlFact
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.filters import Embedder, apply_filters, filter_duplicates, minilm_embedder
from finrag_pipeline.core.qa.llm_generator import generate_llm
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.scoring.answer_contract import ensure_contract


@dataclass
class QAGenerationResult:
    items: list[QAItem]
    log: list[dict[str, Any]] = field(default_factory=list)   # {stage, reason, count[, generator]}

    def log_rows(self, filing_id: str) -> list[dict[str, Any]]:
        """Rows for the qa.generation_log table."""
        return [{"filing_id": filing_id, "generator": e.get("generator", ""), "stage": e["stage"],
                 "reason": e["reason"], "count": int(e["count"])} for e in self.log]


def generate_qa_set(meta: FilingMeta, pages: list[Page], table_rows: list[TableRow], facts: list[XbrlFact],
                    chunks: list[Chunk], config: QAConfig | None = None, llm_client: LLMClient | None = None,
                    embedder: Embedder | None = None) -> QAGenerationResult:
    """The QA set of one filing: every configured generator, then the filters, with counts of all drops.

    The LLM generator runs only when "llm" is in ``config.generators``; its client defaults to
    ``config.llm.model`` from assets_config/models.yaml. Never raises for LLM misbehaviour."""
    config = config or QAConfig()
    items: list[QAItem] = []
    log: list[dict[str, Any]] = []
    if "model_free" in config.generators:
        made, glog = generate_model_free(meta, pages, table_rows, facts, chunks, config)
        items += made
        log += glog + [{"stage": "generate", "reason": "generated", "count": len(made), "generator": "model_free"}]
    if "llm" in config.generators:
        client = llm_client or LLMClient.from_registry(config.llm.model)
        made, glog = generate_llm(meta, pages, chunks, config, client)
        items += made
        log += glog + [{"stage": "llm_generate", "reason": "generated", "count": len(made),
                        "generator": f"llm:{client.name}"}]
    kept, flog = apply_filters(items, pages, chunks, config.filters, embedder)
    log += flog + [{"stage": "final", "reason": "kept", "count": len(kept)}]
    # every stored item carries its answer contract (an LLM item whose answer is one figure gets it too)
    return QAGenerationResult([ensure_contract(i) for i in kept], log)


def generate_llm_set(meta: FilingMeta, pages: list[Page], chunks: list[Chunk], client: LLMClient,
                     config: QAConfig | None = None, existing: list[QAItem] = (), embedder: Embedder | None = None,
                     n: int | None = None) -> QAGenerationResult:
    """LLM questions for one filing through ``client`` (any litellm model or the local GGUF model):
    the generator, then the filters of ``config.filters`` (figures and quote in the evidence,
    passage-dependent, answer in the question), then duplicates among themselves AND against
    ``existing`` (the filing's stored questions come first, so a new question repeating one is
    dropped), then the answer contract and the phrasing leakage of every kept item.

    ``n`` overrides ``config.llm.n_chunks`` (one call per sampled chunk). Never raises for LLM
    misbehaviour: every call outcome and every drop is counted in the log."""
    from finrag_pipeline.core.qa.leakage import annotate_leakage

    config = config or QAConfig()
    if n is not None:
        config = config.model_copy(update={"llm": config.llm.model_copy(update={"n_chunks": int(n)})})
    generator = f"llm:{client.name}"
    made, log = generate_llm(meta, pages, chunks, config, client)
    log += [{"stage": "llm_generate", "reason": "generated", "count": len(made), "generator": generator}]
    no_dedup = config.filters.model_copy(update={"dedup": config.filters.dedup.model_copy(update={"enabled": False})})
    kept, flog = apply_filters(made, pages, chunks, no_dedup)
    log += flog
    if config.filters.dedup.enabled:
        if embedder is None and config.filters.dedup.embedder == "minilm":
            embedder = minilm_embedder()
        others = [i for i in existing if i.generator != generator or i.filing_id != meta.filing_id]
        result = filter_duplicates([*others, *kept], config.filters.dedup.threshold, embedder)
        new_ids = {i.qa_id for i in result.kept}
        survivors = [i for i in kept if i.qa_id in new_ids]
        # only this run's drops are counted (duplicates among the stored questions are not its business)
        if len(kept) > len(survivors):
            log.append({"stage": "filter", "reason": "duplicate_of_existing_or_own",
                        "count": len(kept) - len(survivors)})
        kept = survivors
    items = annotate_leakage([ensure_contract(i) for i in kept], chunks, pages, settings=config.leakage)
    log.append({"stage": "final", "reason": "kept", "count": len(items)})
    return QAGenerationResult(items, [{**e, "generator": generator} for e in log])
