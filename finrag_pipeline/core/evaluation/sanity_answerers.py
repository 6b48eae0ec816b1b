"""Sanity answerers: lazy systems every answer evaluation runs beside the real ones.

Each says nothing a careful reader would accept, so each must score (near) 0 correctness on
answerable questions; if one does not, the scoring can be gamed (finrag_pipeline_tests/
test_sanity_answerers.py fails above metric_registry.SANITY_LIMITS.max_correctness):

* ``sanity_echo`` repeats the question;
* ``sanity_all_figures`` quotes every figure of the retrieved evidence, with the scale each text
  declares ("$394,328 million; $365,817 million; ...") - a list that contains the answer;
* ``sanity_first_figure`` quotes the first figure of the top hit as printed;
* ``sanity_abstain`` always abstains: credit only on unanswerable questions (abstention accuracy).

All cite the hits they read, so citation metrics are computed for them as for any answerer.
"""

from __future__ import annotations

from collections.abc import Sequence

from finrag_pipeline.core.answering import AnswerResult, Citation, register_answerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import SCALE_NAME, parse_figures, scale_of_text

SANITY_ANSWERERS = ("sanity_echo", "sanity_all_figures", "sanity_first_figure", "sanity_abstain")
MAX_FIGURES = 40   # an answer of every figure of five table chunks stays readable


def _cite(hits: Sequence[Hit]) -> list[Citation]:
    out: list[Citation] = []
    for h in hits:
        c = (h.filing_id, h.page_start, h.chunk_id)
        if c not in out:
            out.append(c)
    return out


@register_answerer("sanity_echo")
class EchoAnswerer:
    name = "sanity_echo"

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        if not hits:
            return AnswerResult("", [], "no_evidence")
        return AnswerResult(question, _cite(hits[:1]), "answered")


@register_answerer("sanity_all_figures")
class AllFiguresAnswerer:
    name = "sanity_all_figures"

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        figures: list[str] = []
        used: list[Hit] = []
        for h in hits:
            scale = scale_of_text(h.text)
            word = f" {SCALE_NAME[scale]}" if scale in SCALE_NAME else ""
            found = [f.text + (word if not (f.explicit_scale or f.percent or f.points) else "")
                     for f in parse_figures(h.text)]
            if found:
                used.append(h)
            figures += [f for f in found if f not in figures]
        if not figures:
            return AnswerResult("", [], "no_evidence" if not hits else "abstained")
        return AnswerResult("; ".join(figures[:MAX_FIGURES]) + ".", _cite(used), "answered")


@register_answerer("sanity_first_figure")
class FirstFigureAnswerer:
    name = "sanity_first_figure"

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        if not hits:
            return AnswerResult("", [], "no_evidence")
        figures = parse_figures(hits[0].text)
        if not figures:
            return AnswerResult("", [], "abstained")
        return AnswerResult(figures[0].text, _cite(hits[:1]), "answered")


@register_answerer("sanity_abstain")
class AbstainAnswerer:
    name = "sanity_abstain"

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        return AnswerResult("", [], "abstained")
