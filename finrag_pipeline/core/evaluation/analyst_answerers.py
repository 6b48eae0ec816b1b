"""The analyst's answerers as an evaluation runs them.

core/analyst sits below evaluation (evaluation's answerers read its lexicon and vocabulary, the runner builds
its calculator), so it cannot import the extractive and narrative answerers it leans on. They are handed in
here: the registered ``calculator`` is the analyst's :class:`CalculatorAnswerer` with qualitative questions
routed to the narrative answerer first and questions with nothing to compute answered by the extractive one.
"""

from __future__ import annotations

import functools
from typing import Any

from finrag_pipeline.core.analyst.calculator import CalculatorAnswerer
from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.analyst.store import FactStore
from finrag_pipeline.core.answering import register_answerer
from finrag_pipeline.core.evaluation.answerers import (
    ExtractiveAnswerer,
    narrative_answerer,
    routed_to_narrative,
)
from finrag_pipeline.core.evaluation.narrative_figures import LineFigures


@register_answerer("calculator")
def calculator_answerer(store: FactStore | None = None, *, lexicon: Lexicon | None = None, fallback: Any = None,
                        warehouse: Any = None) -> CalculatorAnswerer:
    """The ``calculator`` answerer: facts from ``store`` (default: FINRAG_HOME's warehouse, or ``warehouse``),
    the narrative route for qualitative questions, ``fallback`` (default: the extractive answerer) when there
    is nothing to compute."""
    if store is None and warehouse is not None and lexicon is None:
        # the warehouse's one fact store, which the narrative answers' figure leads read too (each filing read once)
        store = LineFigures.of_warehouse(warehouse).store
    calculator = CalculatorAnswerer(store, lexicon=lexicon, warehouse=warehouse,
                                    fallback=fallback if fallback is not None else ExtractiveAnswerer(warehouse=warehouse))
    # the narrative route reads the neighbouring passages of the warehouse the facts come from, as the
    # narrative answerer the runner builds does (without it, a cause in the passage after a hit was missed)
    # it leads a cause with the line's figures from the calculator's own fact store (built once, kept)
    calculator.route_qualitative = functools.partial(routed_to_narrative, narrative=narrative_answerer(
        getattr(calculator.store, "warehouse", None), calculator.store))
    return calculator
