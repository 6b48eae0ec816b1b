"""Page/TableRow -> Chunk. Pure core: no Dagster imports."""

from finrag_pipeline.core.chunking.chunker import PAGE_JOINER, chunk_filing, filing_text
from finrag_pipeline.core.chunking.config import ChunkingConfig, chunking_variants, load_chunking_config
from finrag_pipeline.core.chunking.sentences import sentences, split_sentences
from finrag_pipeline.core.chunking.text import table_row_text

__all__ = [
    "PAGE_JOINER", "ChunkingConfig", "chunk_filing", "chunking_variants", "filing_text",
    "load_chunking_config", "sentences", "split_sentences", "table_row_text",
]
