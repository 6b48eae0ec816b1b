"""One dynamic partition per registered filing; keys are readable filing ids such as ``AAPL-2022-10K``."""

import dagster as dg

FILINGS_PARTITIONS_NAME = "filings"
filings_partitions = dg.DynamicPartitionsDefinition(name=FILINGS_PARTITIONS_NAME)
