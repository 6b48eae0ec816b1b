"""Pure core library: parsing, chunking, indexing, retrieval, QA generation, evaluation.

Nothing under ``finrag_pipeline.core`` imports Dagster; the Dagster layer (``finrag_pipeline.defs``),
the CLI and the tests all call into this package.
"""
