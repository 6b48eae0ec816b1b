"""A tiny FINRAG_HOME built from data/apple_2022_excerpt.pdf (4 pages of Apple's FY2022 10-K).

Pages of the excerpt (checked by hand):
  1 cover, 2 Item 1A Risk Factors, 3 Item 8 index, 4 CONSOLIDATED STATEMENTS OF OPERATIONS
  (Total net sales 394,328 / Net income 99,803, USD millions, FY2022).

:func:`build_excerpt_home` does what the ingest/chunk/index assets do, with the core functions:
parse, write core.filings/pages/table_rows/chunks, default chunking, TantivyIndex (+ LanceIndex).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import Chunk, EvidencePlace, QAItem

EXCERPT = Path(__file__).parent / "data" / "apple_2022_excerpt.pdf"
FILING_ID = "AAPL-2022-10K"
INCOME_STATEMENT_PAGE = 4
RISK_FACTORS_PAGE = 2


@dataclass
class ExcerptCorpus:
    paths: Any
    warehouse: Any
    parsed: Any
    chunks: list[Chunk]  # default chunking, leaves and parents

    @property
    def filing_id(self) -> str:
        return self.parsed.meta.filing_id

    def leaves(self) -> list[Chunk]:
        return [c for c in self.chunks if c.is_leaf]

    def evidence(self, page: int, phrase: str) -> list[EvidencePlace]:
        """One evidence group: every default leaf chunk on ``page`` whose text holds ``phrase``."""
        places = [EvidencePlace(c.chunk_id, page, c.filing_id) for c in self.leaves()
                  if c.page_start <= page <= c.page_end and phrase.lower() in c.text.lower()]
        assert places, f"{phrase!r} is on no chunk of page {page}"
        return places


def build_excerpt_home(home: Path, *, embedder: Any = None, with_lance: bool = False) -> ExcerptCorpus:
    from finrag_pipeline.core.catalog import write_filing
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.chunking.config import load_chunking_config
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.ingest.parse import parse_filing
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    paths = FinragPaths.from_env(home).ensure()
    wh = Warehouse(paths.warehouse)
    parsed = parse_filing(EXCERPT)
    fid = parsed.meta.filing_id
    assert fid == FILING_ID
    write_filing(wh, parsed.meta)
    wh.replace_rows("core.pages", rows_of(parsed.pages), where={"filing_id": fid})
    wh.replace_rows("core.table_rows", rows_of(parsed.table_rows), where={"filing_id": fid})
    chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config("default"))
    wh.replace_rows("core.chunks", rows_of(chunks), where={"filing_id": fid})
    TantivyIndex(paths.tantivy_dir).upsert_filing(fid, chunks)
    if with_lance:
        from finrag_pipeline.core.indexing.lance_index import LanceIndex

        LanceIndex(paths.lancedb_dir, embedder).upsert_filing(fid, chunks)
    return ExcerptCorpus(paths, wh, parsed, chunks)


def excerpt_qa_items(corpus: ExcerptCorpus) -> list[QAItem]:
    """Three hand-made questions whose evidence pages were checked in the PDF."""
    fid = corpus.filing_id
    p4, p2 = INCOME_STATEMENT_PAGE, RISK_FACTORS_PAGE
    return [
        QAItem(qa_id="q-net-sales", filing_id=fid, question="What were Apple's total net sales in fiscal 2022?",
               reference_answer="$394,328 million", question_type="numerical",
               answer_figures=[{"value": 394328, "unit": "USD millions", "period": "FY2022", "text": "394,328"}],
               periods=["FY2022"], evidence=[corpus.evidence(p4, "394,328")], generator="hand"),
        QAItem(qa_id="q-net-income", filing_id=fid, question="What was Apple's net income in fiscal 2022?",
               reference_answer="$99,803 million", question_type="numerical",
               answer_figures=[{"value": 99803, "unit": "USD millions", "period": "FY2022", "text": "99,803"}],
               periods=["FY2022"], evidence=[corpus.evidence(p4, "99,803")], generator="hand"),
        QAItem(qa_id="q-macro-risk", filing_id=fid,
               question="How do global and regional economic conditions affect Apple's business?",
               reference_answer="Adverse economic conditions can materially adversely affect the Company's "
                                "business, results of operations and financial condition.",
               question_type="narrative", evidence=[corpus.evidence(p2, "regional economic conditions")],
               generator="hand"),
    ]


# llama.cpp threads wait for each other in spin barriers: when the 2 cores are shared with other work,
# 2 threads were 20x slower than 1 here (one 157+26-token answer: 84 s vs 4.1 s, load average ~3.7).
LLM_TEST_THREADS = int(os.environ.get("FINRAG_TEST_LLM_THREADS", "1"))


@contextlib.contextmanager
def local_llm_threads(n: int = LLM_TEST_THREADS) -> Iterator[None]:
    """Load the local model with ``n`` threads inside this block (it is cached per process: a model
    already loaded keeps its thread count)."""
    import pytest

    from finrag_pipeline.core.llm import local_provider

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local_provider, "N_THREADS", n)
        yield


def local_model_ready(name: str = "qwen2.5-0.5b") -> Path:
    """The local GGUF under the current FINRAG_HOME without copying 0.5 GB into every test home.

    The verified file is kept once per machine under .finrag/test-cache/models (hard-linked from the
    repo's own .finrag/models when that one is already assembled) and hard-linked into the test home.
    """
    from finrag_pipeline.core.llm.local_model import LOCAL_MODELS, ensure_local_model
    from finrag_pipeline.core.paths import REPO_ROOT, FinragPaths

    spec = LOCAL_MODELS[name]
    shared_dir = REPO_ROOT / ".finrag" / "test-cache" / "models"
    target_dir = FinragPaths.from_env().models_dir
    for src_dir, dst_dir in ((REPO_ROOT / ".finrag" / "models", shared_dir), (shared_dir, target_dir)):
        if src_dir == dst_dir:
            continue
        if dst_dir is target_dir:
            ensure_local_model(name, models_dir=shared_dir)  # assembles + verifies once per machine
        src, dst = src_dir / spec.filename, dst_dir / spec.filename
        if src.exists() and not dst.exists():
            dst_dir.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
                marker = src.with_suffix(".sha256")
                if marker.exists():
                    dst.with_suffix(".sha256").write_text(marker.read_text())
            except OSError:
                pass  # another filesystem: ensure_local_model assembles a copy instead
    return ensure_local_model(name)  # verified by size + sha marker; assembles only if linking failed
