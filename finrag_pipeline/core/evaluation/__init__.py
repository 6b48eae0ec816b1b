"""Evaluation: retrieval + answer metrics, answerers, bootstrap/paired stats, the matrix runner.

Pure core (no Dagster imports). Metric definitions: docs/METRICS.md.
"""
