"""Figures for QA generation: re-exported from :mod:`finrag_pipeline.core.numbers`, the one parser
and formatter of figures (kept so existing imports keep working)."""

from finrag_pipeline.core.numbers import (  # noqa: F401
    NUM_TOKEN_RE,
    UNIT_SCALE,
    digits_key,
    figure_in_text,
    format_amount,
    format_number,
    is_distinctive,
    number_tokens,
)
