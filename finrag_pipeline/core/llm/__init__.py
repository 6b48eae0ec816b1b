"""LLM access for finrag: litellm client with cache/retries/JSON repair, model registry, local llama.cpp."""

from finrag_pipeline.core.llm.client import LLMClient, LLMResponse, cache_key
from finrag_pipeline.core.llm.json_extract import extract_json
from finrag_pipeline.core.llm.registry import ModelRegistry, ModelSpec, load_model_registry

__all__ = ["LLMClient", "LLMResponse", "ModelRegistry", "ModelSpec", "cache_key", "extract_json",
           "load_model_registry"]
