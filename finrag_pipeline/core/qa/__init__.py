"""QA sets with known evidence: model-free and LLM generators, filters, importers, human review."""

from finrag_pipeline.core.qa.config import QAConfig, load_qa_config
from finrag_pipeline.core.qa.generate import QAGenerationResult, generate_qa_set

__all__ = ["QAConfig", "QAGenerationResult", "generate_qa_set", "load_qa_config"]
