"""``generate_qa_set``: run the configured generators for one filing, then the filters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.llm.client import LLMClient
from finrag_pipeline.core.models import Chunk, FilingMeta, Page, QAItem, TableRow, XbrlFact
from finrag_pipeline.core.qa.answer_contract import ensure_contract
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.filters import Embedder, apply_filters
from finrag_pipeline.core.qa.llm_generator import generate_llm
from finrag_pipeline.core.qa.model_free import generate_model_free


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
