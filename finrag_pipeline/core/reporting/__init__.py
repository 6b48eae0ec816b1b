"""HTML report of the evaluation results (plotly charts, self-contained)."""

from finrag_pipeline.core.reporting.report import build_report

__all__ = ["build_report"]
