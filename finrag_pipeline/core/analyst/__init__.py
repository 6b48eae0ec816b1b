"""The analyst room: what a 10-K's line items mean and how an analyst computes with them.

Its parts, from the bottom up (no module here imports retrieval, qa or evaluation; they import it):

- ``lexicon.py`` (line items, their synonyms, statements and formulas: assets_config/lexicon.yaml) and
  ``vocabulary.py`` (analysts' abbreviations: assets_config/analyst_vocabulary.yaml);
- the fact layer: ``labels.py``, ``model.py`` (FactValue, FactSource), ``store.py`` (line items from
  table rows + XBRL facts, reconciled, per filing), ``formula.py`` (exact decimal formulas),
  ``definitions.py`` and ``plan.py`` (a question -> the quantity and its arithmetic), ``judgements.py``
  (trend / threshold / comparison / share-of-whole answers);
- the answerers built on it: ``calculator.py`` (the offline ``calculator`` answerer) and
  ``llm_answerers.py`` (an LLM handed the calculator's lookups and arithmetic). docs/CALCULATOR.md.

This module is the room's one public entry point: the CLI, the web app, benchmarks and callers outside
core/ import from here. Modules inside core/ import the submodule that defines a name (as everywhere
in core/), so that reading an import says which part of the room it needs.
"""

from finrag_pipeline.core.analyst.calculator import CalculatorAnswerer, explanation, explanation_lines
from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.analyst.llm_answerers import StructuredPromptAnswerer, ToolCallingAnswerer
from finrag_pipeline.core.analyst.plan import Plan, PlanError, make_plan, resolve_term
from finrag_pipeline.core.analyst.store import FactStore, FilingFacts

__all__ = [
    "CalculatorAnswerer", "FactStore", "FilingFacts", "Lexicon", "Plan", "PlanError", "StructuredPromptAnswerer",
    "ToolCallingAnswerer", "explanation", "explanation_lines", "make_plan", "resolve_term",
]
