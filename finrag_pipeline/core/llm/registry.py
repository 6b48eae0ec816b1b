"""Named LLMs from ``assets_config/models.yaml``: provider string, call params, timeouts, prices.

A name in a config (``llm_model: local-0.5b``) resolves here to everything needed to build an
:class:`~finrag_pipeline.core.llm.client.LLMClient`, so switching provider is a YAML edit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from finrag_pipeline.core.config import config_path, read_yaml, unknown_names_error
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR

DEFAULT_MODELS_YAML = ASSETS_CONFIG_DIR / "models.yaml"


class ModelSpec(BaseModel):
    """One named model. ``provider`` is the litellm model string ("openai/gpt-4o-mini", "local/qwen2.5-0.5b")."""

    name: str = ""
    provider: str
    params: dict[str, Any] = Field(default_factory=dict)   # temperature, top_p, max_tokens, api_base, mock_response...
    timeout_s: float = 60.0
    max_retries: int = 2
    backoff_s: float = 1.0
    cost_per_1k_prompt: float = 0.0
    cost_per_1k_completion: float = 0.0
    description: str = ""
    requires: str | None = None    # pip extra or service needed ("local-llm", "OPENAI_API_KEY")


class ModelRegistry(BaseModel):
    default: str = "local-0.5b"
    # Which llama.cpp binding runs "local/<name>" models: auto = llama-cpp-python when importable
    # (compiled at install), else the prebuilt llama-cpp-cffi wheel. FINRAG_LOCAL_RUNTIME overrides.
    local_runtime: Literal["auto", "llama-cpp-cffi", "llama-cpp-python"] = "auto"
    models: dict[str, ModelSpec] = Field(default_factory=dict)

    def get(self, name: str) -> ModelSpec:
        """The spec for ``name``; an unknown name that looks like a litellm string is used as-is."""
        if name in self.models:
            return self.models[name]
        if "/" in name:
            return ModelSpec(name=name, provider=name)
        raise unknown_names_error("model", [name], self.models)


def load_model_registry(path: str | Path | None = None) -> ModelRegistry:
    """Parse models.yaml (default ``assets_config/models.yaml``); each entry's key becomes its name."""
    raw = read_yaml(path or config_path("models.yaml"))
    models = {name: {**spec, "name": name} for name, spec in (raw.get("models") or {}).items()}
    return ModelRegistry(default=raw.get("default", "local-0.5b"),
                         local_runtime=raw.get("local_runtime", "auto"), models=models)
