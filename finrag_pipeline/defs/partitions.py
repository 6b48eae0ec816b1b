"""Partitions: one dynamic partition per registered filing (readable keys such as ``AAPL-2022-10K``), and
for the chunking-variant assets filing x chunking, the chunking being the non-default variants of
assets_config/ingest.yaml (read when the code location loads: edit ingest.yaml, reload the location)."""

import warnings

import dagster as dg

from finrag_pipeline.core.variants import variant_names

FILINGS_PARTITIONS_NAME = "filings"
filings_partitions = dg.DynamicPartitionsDefinition(name=FILINGS_PARTITIONS_NAME)

FILING_DIMENSION = "filing"
CHUNKING_DIMENSION = "chunking"
CHUNKING_VARIANTS: list[str] = variant_names()
# None when ingest.yaml has no variant besides the default: then there are no variant assets at all.
filing_x_chunking_partitions = dg.MultiPartitionsDefinition({
    FILING_DIMENSION: filings_partitions,
    CHUNKING_DIMENSION: dg.StaticPartitionsDefinition(CHUNKING_VARIANTS),
}) if CHUNKING_VARIANTS else None


def evaluated_variants() -> list[str]:
    """The variants of the dimension that eval_matrix.yaml evaluates. Only these are built by automation
    (a new filing, a changed parse); the others are built on demand (`finrag variants build`, the UI), so a
    variant declared for an experiment costs nothing per arrival until the matrix names it."""
    from finrag_pipeline.core.evaluation.runner import EvalMatrix
    from finrag_pipeline.core.variants import is_default_chunking

    try:
        named = [c for c in EvalMatrix.load().retrieval.chunking if not is_default_chunking(c)]
    except (OSError, ValueError):  # an invalid matrix fails the evaluation run with its message, not the load
        return []
    return [c for c in named if c in CHUNKING_VARIANTS]


def on_filing_dimension() -> dg.PartitionMapping:
    """filing x chunking <-> filings: a filing's partition maps to its partitions of every variant."""
    with warnings.catch_warnings():  # a beta API: its warning says nothing a user can act on
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=FILING_DIMENSION)
