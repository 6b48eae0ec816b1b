"""One deterministic decision on one answer, from the question and the reference alone.

:func:`decide` is what the rubric judge and the human-label agreement tooling call: it derives the
answer contract (core/scoring/answer_contract.py: a reference that is one figure, in the units the question
asks for; the committed parts of a sentence reference) unless one is given, and scores the answer
with :func:`answer_metrics.correctness` (claims, units, hedges, lists, echoes). ``decided`` False means
the rules cannot say (a narrative reference, a reference stating several competing figures): a judge
must, and ``reason`` says why. Key-fact recall (judge-free) is reported beside, for the judge to use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finrag_pipeline.core.scoring.answer_contract import contract_from_text
from finrag_pipeline.core.scoring.answer_metrics import correctness, key_fact_recall


@dataclass(frozen=True)
class Decision:
    """``decided``: the deterministic rules decided; ``correct``: their verdict (None when undecided);
    ``non_committal``: a list of candidates, a hedge, an echo or no figure; ``reason`` in words;
    ``contract``: how the contract was derived (or why it could not be); ``key_fact_recall``: share of
    the reference's key facts the answer states (None without key facts)."""

    decided: bool
    correct: bool | None
    reason: str
    non_committal: bool = False
    contract: str = ""
    key_fact_recall: float | None = None


def decide(answer: str, question: str, reference: str, *, answer_values: Sequence[Mapping[str, Any]] | None = None,
           answer_choice: str | None = None, choice_options: Sequence[str] = (),
           inputs: Sequence[Mapping[str, Any]] = (), periods: Sequence[str] = (),
           required_terms: Sequence[str] = ()) -> Decision:
    """Is ``answer`` right for ``question``, given the ``reference`` answer? See the module docstring."""
    contract = contract_from_text(question, reference, periods)
    if answer_values is None and answer_choice is None and not required_terms:
        answer_values, answer_choice = contract.values, contract.choice
        choice_options, required_terms = contract.options, contract.required_terms
        inputs = inputs or contract.inputs
        note = contract.reason
    else:
        note = "the contract given"
    recall, _ = key_fact_recall(answer, contract.key_facts, question)
    if not (answer or "").strip():
        return Decision(True, False, "no answer", True, note, recall)
    verdict = correctness(answer, question=question, answer_values=answer_values or (), answer_choice=answer_choice,
                          choice_options=choice_options, inputs=inputs, required_terms=required_terms)
    if verdict.correct is None:
        return Decision(False, None, f"{verdict.reason}: {note}", False, note, recall)
    return Decision(True, verdict.correct == 1.0, verdict.reason, verdict.non_committal, note, recall)
