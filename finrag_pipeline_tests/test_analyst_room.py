"""The analyst room's walls: one public entry point, and the registered ``calculator`` composed in evaluation
(core/analyst imports nothing of evaluation; test_import_graph.py checks the direction)."""

from finrag_pipeline.core import analyst
from finrag_pipeline.core.analyst.calculator import CalculatorAnswerer
from finrag_pipeline.core.analyst.store import FactStore
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.evaluation.answerer_registry import build_answerer
from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer, routed_to_narrative

NOTHING_TO_COMPUTE = "Who is the chief executive officer?"
QUALITATIVE = "What drove the change in Apple's gross margin in fiscal 2022?"


def test_entry_point_names_what_callers_outside_core_use():
    for name in ("CalculatorAnswerer", "FactStore", "Lexicon", "make_plan", "resolve_term", "explanation",
                 "explanation_lines", "ToolCallingAnswerer", "StructuredPromptAnswerer"):
        assert name in analyst.__all__ and getattr(analyst, name) is not None
    assert analyst.CalculatorAnswerer is CalculatorAnswerer


def test_registered_calculator_is_the_composed_one():
    calc = build_answerer("calculator", store=FactStore())
    assert isinstance(calc, CalculatorAnswerer) and calc.name == "calculator"
    assert isinstance(calc.fallback, ExtractiveAnswerer) and calc.route_qualitative.func is routed_to_narrative
    # the narrative route is one narrative answerer kept for the calculator's life (each filing's passages read
    # once), given the facts' warehouse (none here: an in-memory store)
    route = calc.route_qualitative.keywords["narrative"]
    assert set(calc.route_qualitative.keywords) == {"narrative"} and route.name == "narrative"
    assert route.warehouse is None


def test_composed_calculator_routes_and_falls_back_as_before():
    calc = calculator_answerer(FactStore())
    fell_back = calc.answer(NOTHING_TO_COMPUTE, [])
    assert fell_back.details.get("fallback") == "extractive" and fell_back.response_state == "no_evidence"
    routed = calc.answer(QUALITATIVE, [])
    assert routed.details.get("routed_to") == "narrative" and routed.response_state == "no_evidence"


def test_calculator_alone_abstains_where_it_has_nothing_to_compute():
    """Without the answerers evaluation hands in, the room's calculator never quotes or narrates: it says why."""
    calc = CalculatorAnswerer(FactStore())
    alone = calc.answer(NOTHING_TO_COMPUTE, [])
    assert alone.response_state == "abstained" and alone.details["reason"].startswith("nothing to compute")
    assert "fallback" not in alone.details and "routed_to" not in alone.details
