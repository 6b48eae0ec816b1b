"""Data-quality expectations run through great-expectations (ephemeral context, pandas data frames).

GX costs ~3 s to import, so it is imported inside :func:`validate`, not at module import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class ValidationOutcome:
    success: bool
    results: list[dict[str, Any]] = field(default_factory=list)  # one per expectation

    def summary_markdown(self) -> str:
        lines = ["| expectation | column | ok | unexpected | examples |", "|---|---|---|---|---|"]
        for r in self.results:
            lines.append(f"| {r['expectation']} | {r.get('column', '')} | {'yes' if r['success'] else 'NO'} "
                         f"| {r.get('unexpected_count', '')} | {r.get('examples', '')} |")
        return "\n".join(lines)


def validate(df: pd.DataFrame, expectations: list[tuple[str, dict[str, Any]]], name: str = "check") -> ValidationOutcome:
    """Validate ``df`` against ``[(ExpectationClassName, kwargs), ...]``; an empty frame fails loudly."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # One progress bar per metric floods the logs of every run: off.
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    batch = (context.data_sources.add_pandas(f"{name}_source")
             .add_dataframe_asset(f"{name}_asset")
             .add_batch_definition_whole_dataframe(f"{name}_batch")
             .get_batch(batch_parameters={"dataframe": df}))
    suite = gx.ExpectationSuite(name=f"{name}_suite")
    for cls_name, kwargs in expectations:
        suite.add_expectation(getattr(gx.expectations, cls_name)(**kwargs))
    result = batch.validate(suite)
    rows = []
    for r in result.results:
        cfg = r.expectation_config
        res = r.result or {}
        rows.append({
            "expectation": cfg.type, "column": cfg.kwargs.get("column", ""), "success": bool(r.success),
            "unexpected_count": res.get("unexpected_count", res.get("observed_value", "")),
            "examples": ", ".join(map(str, (res.get("partial_unexpected_list") or [])[:3])),
        })
    return ValidationOutcome(bool(result.success), rows)
