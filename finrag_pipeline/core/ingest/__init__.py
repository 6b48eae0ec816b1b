"""Bytes of a 10-K (PDF or inline-XBRL HTML) -> FilingMeta, Page, TableRow, XbrlFact. No Dagster here."""

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.parse import ParsedFiling, parse_filing

__all__ = ["IngestError", "ParsedFiling", "parse_filing"]
