"""Agreement of the answer scorer (and of an optional judge) with answers people graded.

A *labelled answer set* is JSONL or CSV, one answer per row: ``answer`` and ``label`` (Correct /
Incorrect / Refusal, as a person graded it against the reference), the question as ``qa_id`` and/or
``question`` + ``reference``, and optionally ``system`` (which RAG system wrote it), ``split``
(dev / heldout), ``kind`` (figure / choice / narrative / unanswerable: what the question asks for,
as the labeller saw it), ``answer_id``, ``label_note`` and ``qa_item`` (the QA item's stored fields,
so the set scores the same without the warehouse it came from). The repository's own set and its
labelling guide are in data/labelled_answers/.

Each answer is scored by the project's scorer exactly as an evaluation scores it: the QA item's
contract (:func:`~finrag_pipeline.core.scoring.answer_contract.ensure_contract` via
:func:`~finrag_pipeline.core.evaluation.runner.answer_key`), then
:func:`~finrag_pipeline.core.scoring.answer_metrics.correctness`. The scorer *accepts* (1),
*rejects* (0) or does not decide (None: "judged, not matched"). A person accepts only Correct;
Incorrect and Refusal are both rejections of an answerable question's answer.

Figures (:func:`agreement_summary`), each per split and per kind:

* coverage: decided / answers;
* agreement: share of the decided answers where scorer and label agree (accept vs reject);
* Cohen's kappa over the decided answers (:func:`cohen_kappa`);
* false accepts (scorer 1, label not Correct) and false rejects (scorer 0, label Correct);
* the confusion of label x scorer decision (accept / reject / undecided);
* system-level Kendall tau-b (:func:`~finrag_pipeline.core.evaluation.agreement.kendall_tau_b`)
  between the people's ranking of the systems (share Correct over all their answers) and the
  scorer's (mean correctness over the answers it decided: a NULL is left out of a mean, as in every
  mean of the project), when two or more systems are present.
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from finrag_pipeline.core.evaluation.agreement import kendall_tau_b
from finrag_pipeline.core.models import QAItem
from finrag_pipeline.core.paths import REPO_ROOT

LABELS = ("Correct", "Incorrect", "Refusal")
ANSWER_KINDS = ("figure", "choice", "narrative", "unanswerable")
DECISIONS = ("accept", "reject", "undecided")
SPLITS = ("dev", "heldout")
# Kinds the done-criterion of issue 25 is measured on: answers a deterministic scorer should decide.
DECIDABLE_KINDS = ("figure", "choice")
_LABEL_ALIASES = {"correct": "Correct", "incorrect": "Incorrect", "wrong": "Incorrect", "refusal": "Refusal",
                  "refused": "Refusal", "refuse": "Refusal"}


class LabelledSetError(ValueError):
    """A labelled answer set that cannot be read: says which row and field, and what is valid."""


@dataclass
class LabelledAnswer:
    answer: str
    label: str
    question: str = ""
    reference: str = ""
    qa_id: str = ""
    answer_id: str = ""
    system: str = ""
    split: str = ""
    kind: str = ""
    label_note: str = ""
    qa_item: dict[str, Any] | None = field(default=None, repr=False)


# ---------------------------------------------------------------------------------------------
# Reading a set


def _rows_of(path: Path) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise LabelledSetError(f"{path.name} line {n}: not JSON ({exc})") from None
            if not isinstance(rec, dict):
                raise LabelledSetError(f"{path.name} line {n}: expected a JSON object, got {type(rec).__name__}")
            out.append((n, rec))
        return out
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            return [(n, dict(rec)) for n, rec in enumerate(csv.DictReader(fh), 2)]
    raise LabelledSetError(f"{path.name}: unknown format {suffix!r} (a labelled answer set is .jsonl or .csv)")


def normalise_label(value: Any) -> str | None:
    return _LABEL_ALIASES.get(str(value or "").strip().lower())


def read_labelled_answers(path: str | Path) -> list[LabelledAnswer]:
    """The rows of a labelled answer set; a row missing what scoring needs raises LabelledSetError
    naming the row (nothing is skipped silently)."""
    path = Path(path)
    if not path.exists():
        raise LabelledSetError(f"no labelled answer set at {path}")
    out: list[LabelledAnswer] = []
    seen: set[str] = set()
    for n, rec in _rows_of(path):
        where = f"{path.name} row {n}"
        label = normalise_label(rec.get("label"))
        if label is None:
            raise LabelledSetError(f"{where}: label {rec.get('label')!r} is not one of {', '.join(LABELS)}")
        if rec.get("answer") is None:
            raise LabelledSetError(f"{where}: no answer column")
        qa_item = rec.get("qa_item")
        if isinstance(qa_item, str) and qa_item.strip():
            try:
                qa_item = json.loads(qa_item)
            except ValueError as exc:
                raise LabelledSetError(f"{where}: qa_item is not JSON ({exc})") from None
        question = str(rec.get("question") or (qa_item or {}).get("question") or "").strip()
        reference = str(rec.get("reference") or rec.get("reference_answer")
                        or (qa_item or {}).get("reference_answer") or "").strip()
        qa_id = str(rec.get("qa_id") or "").strip()
        if not qa_id and not (question and reference):
            raise LabelledSetError(f"{where}: needs a qa_id, or a question and its reference answer")
        kind = str(rec.get("kind") or "").strip().lower()
        if kind and kind not in ANSWER_KINDS:
            raise LabelledSetError(f"{where}: kind {kind!r} is not one of {', '.join(ANSWER_KINDS)}")
        answer_id = str(rec.get("answer_id") or "").strip() or _row_id(qa_id or question, str(rec.get("system") or ""),
                                                                       str(rec["answer"]))
        if answer_id in seen:
            raise LabelledSetError(f"{where}: answer_id {answer_id!r} occurs twice")
        seen.add(answer_id)
        out.append(LabelledAnswer(
            answer=str(rec["answer"]), label=label, question=question, reference=reference, qa_id=qa_id,
            answer_id=answer_id, system=str(rec.get("system") or "").strip(),
            split=str(rec.get("split") or "").strip(), kind=kind, label_note=str(rec.get("label_note") or ""),
            qa_item=qa_item if isinstance(qa_item, dict) else None))
    if not out:
        raise LabelledSetError(f"{path.name}: no labelled answers")
    return out


def _row_id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def split_by_question(question_keys: Iterable[str], *, seed: int = 25, heldout_share: float = 0.5
                      ) -> dict[str, str]:
    """question key -> "dev" / "heldout": the sorted distinct keys shuffled with ``seed`` and cut, so
    every answer to one question lands in the same half (no question is seen on both sides)."""
    keys = sorted(set(question_keys))
    random.Random(seed).shuffle(keys)
    cut = round(len(keys) * (1 - heldout_share))
    return {k: ("dev" if i < cut else "heldout") for i, k in enumerate(keys)}


# ---------------------------------------------------------------------------------------------
# Scoring each answer


def qa_item_of(row: LabelledAnswer, stored: Mapping[str, QAItem] | None = None) -> QAItem:
    """The QA item an answer is scored against: the one embedded in the row, else the warehouse's
    item of ``qa_id``, else one built from the question and reference alone (the contract then comes
    from the reference, as for an imported item)."""
    if row.qa_item:
        known = {f.name for f in fields(QAItem)}
        data = {k: v for k, v in row.qa_item.items() if k in known}
        data.setdefault("qa_id", row.qa_id or _row_id(row.question))
        data.setdefault("filing_id", "")
        data.setdefault("question", row.question)
        data.setdefault("reference_answer", row.reference)
        data.setdefault("question_type", "unanswerable" if row.kind == "unanswerable" else "factual")
        data["evidence"] = []   # the scorer's correctness never reads evidence
        return QAItem(**data)
    if stored and row.qa_id in stored:
        return stored[row.qa_id]
    if not (row.question and row.reference):
        raise LabelledSetError(f"answer {row.answer_id}: qa_id {row.qa_id!r} is not in the warehouse and the row "
                               "has no question and reference of its own")
    return QAItem(qa_id=row.qa_id or _row_id(row.question), filing_id="", question=row.question,
                  reference_answer=row.reference,
                  question_type="unanswerable" if row.kind == "unanswerable" else "factual", source="labelled")


@dataclass(frozen=True)
class ScorerVerdict:
    correctness: float | None
    non_committal: bool
    reason: str

    @property
    def decision(self) -> str:
        return decision_of(self.correctness)


def decision_of(score: float | None) -> str:
    if score is None or score != score:   # NaN read back from a table is "not decided" too
        return "undecided"
    return "accept" if score >= 0.5 else "reject"


def scorer_verdict(answer: str, item: QAItem) -> ScorerVerdict:
    """The project's correctness of ``answer`` against ``item``, as the evaluation runner scores it."""
    from finrag_pipeline.core.evaluation.runner import answer_key
    from finrag_pipeline.core.scoring.answer_metrics import correctness

    key = answer_key(item)
    # score_answer would need gold evidence; correctness gets every field of the key it reads, by name,
    # so a scorer whose correctness reads more of the key (required terms, ...) is served as in score_answer
    wanted = inspect.signature(correctness).parameters
    kwargs = {name: getattr(key, name) for name in wanted if name != "answer" and hasattr(key, name)}
    v = correctness(answer, **kwargs)
    return ScorerVerdict(v.correct, bool(v.non_committal), v.reason)


def kind_of(row: LabelledAnswer, item: QAItem) -> str:
    """The labeller's kind; without one, what the stored contract asks for (or "other")."""
    if row.kind:
        return row.kind
    if item.answer_choice:
        return "choice"
    if item.answer_values:
        return "figure"
    return "other"


VERDICT_COLUMNS = ("set_name", "answer_id", "qa_id", "split", "system", "kind", "question", "reference", "answer",
                   "label", "label_note", "human_decision", "scorer_correctness", "scorer_non_committal",
                   "scorer_decision", "scorer_reason", "agrees", "judge_name", "judge_label", "judge_correctness",
                   "judge_decision", "judge_reason", "judge_cost_usd", "judge_cached")


def score_labelled_answers(rows: Sequence[LabelledAnswer], *, set_name: str,
                           stored: Mapping[str, QAItem] | None = None, judge: Any | None = None,
                           progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """One verdict row per answer (VERDICT_COLUMNS): the label, the scorer's decision and reason and,
    with a ``judge`` (core/evaluation/judge.py RubricJudge), the judge's, carrying the judge's name."""
    out = []
    for i, row in enumerate(rows):
        item = qa_item_of(row, stored)
        verdict = scorer_verdict(row.answer, item)
        human = "accept" if row.label == "Correct" else "reject"
        rec = {
            "set_name": set_name, "answer_id": row.answer_id, "qa_id": row.qa_id or item.qa_id,
            "split": row.split or None, "system": row.system or None, "kind": kind_of(row, item),
            "question": item.question, "reference": item.reference_answer, "answer": row.answer, "label": row.label,
            "label_note": row.label_note or None, "human_decision": human,
            "scorer_correctness": verdict.correctness,
            "scorer_non_committal": verdict.non_committal if verdict.correctness is not None else None,
            "scorer_decision": verdict.decision, "scorer_reason": verdict.reason,
            "agrees": None if verdict.correctness is None else verdict.decision == human,
            **dict.fromkeys(("judge_name", "judge_label", "judge_correctness", "judge_decision", "judge_reason",
                             "judge_cost_usd", "judge_cached"))}
        if judge is not None:
            jv = judge.judge(question=item.question, reference=item.reference_answer, answer=row.answer)
            rec.update(judge_name=jv.judge, judge_label=jv.label, judge_correctness=jv.correctness,
                       judge_decision=decision_of(jv.correctness), judge_reason=jv.reason,
                       judge_cost_usd=jv.cost_usd, judge_cached=jv.cached)
        out.append(rec)
        if progress:
            progress(i + 1, len(rows))
    return out


# ---------------------------------------------------------------------------------------------
# Statistics


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two aligned label lists: (p_o - p_e) / (1 - p_e), p_o the observed agreement,
    p_e the agreement expected from each rater's label shares. None when undefined (no pairs, or
    both raters used one and the same label throughout: p_e = 1)."""
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs aligned lists, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    cats = sorted(set(a) | set(b), key=str)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_e = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def decision_agreement(rows: Sequence[Mapping[str, Any]], rater: str, other: str) -> dict[str, Any]:
    """Coverage / agreement / kappa of ``rater``'s decision column against ``other``'s, over the rows
    where ``rater`` decided (and ``other`` too); false accepts and rejects count ``rater`` against
    ``other`` taken as the truth."""
    n = len(rows)
    decided = [r for r in rows if r[rater] in ("accept", "reject") and r[other] in ("accept", "reject")]
    a = [r[rater] for r in decided]
    b = [r[other] for r in decided]
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    return {"n": n, "n_decided": len(decided), "coverage": _share(len(decided), n),
            "agreement": _share(agree, len(decided)), "kappa": cohen_kappa(a, b),
            "false_accepts": sum(x == "accept" and y == "reject" for x, y in zip(a, b, strict=True)),
            "false_rejects": sum(x == "reject" and y == "accept" for x, y in zip(a, b, strict=True))}


def confusion(rows: Sequence[Mapping[str, Any]], decision: str = "scorer_decision") -> dict[str, dict[str, int]]:
    """label -> decision -> answers (every label and decision present, zeros included)."""
    table = {lab: dict.fromkeys(DECISIONS, 0) for lab in LABELS}
    for r in rows:
        table[r["label"]][r[decision]] += 1
    return table


def system_ranking(rows: Sequence[Mapping[str, Any]], score: str = "scorer_correctness") -> dict[str, Any]:
    """Per system: people's share Correct (all its answers) and the scorer's mean ``score`` (the answers
    it decided); Kendall tau-b between the two over the systems the scorer decided any answer of."""
    by_system: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("system"):
            by_system.setdefault(r["system"], []).append(r)
    systems = []
    for name, rs in sorted(by_system.items()):
        decided = [float(r[score]) for r in rs if r[score] is not None and r[score] == r[score]]
        systems.append({"system": name, "n": len(rs), "human_correct": sum(r["label"] == "Correct" for r in rs) / len(rs),
                        "n_decided": len(decided), "scorer_mean": sum(decided) / len(decided) if decided else None})
    ranked = [s for s in systems if s["scorer_mean"] is not None]
    if len(ranked) < 2:
        return {"systems": systems, "kendall_tau_b": None,
                "note": f"{len(ranked)} system(s) with decided answers: a ranking needs two"}
    tau = kendall_tau_b([s["human_correct"] for s in ranked], [s["scorer_mean"] for s in ranked])
    return {"systems": systems, "kendall_tau_b": tau,
            "note": None if tau is not None else "one of the rankings is all tied"}


def agreement_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Scorer vs people (and judge vs people, judge vs scorer when judged) over ``rows``."""
    out = {**decision_agreement(rows, "scorer_decision", "human_decision"), "confusion": confusion(rows)}
    ranking = system_ranking(rows)
    out["system_kendall_tau_b"], out["system_note"], out["systems"] = (
        ranking["kendall_tau_b"], ranking["note"], ranking["systems"])
    judged = [r for r in rows if r.get("judge_name")]
    if judged:
        out["judge"] = {"name": sorted({r["judge_name"] for r in judged}),
                        "vs_people": decision_agreement(judged, "judge_decision", "human_decision"),
                        "vs_scorer": decision_agreement(judged, "judge_decision", "scorer_decision"),
                        "cost_usd": sum(float(r.get("judge_cost_usd") or 0.0) for r in judged),
                        "system_kendall_tau_b": system_ranking(judged, "judge_correctness")["kendall_tau_b"]}
    return out


def summaries(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`agreement_summary` per split (plus "all") x answer kind group: "all", "figure+choice"
    (the kinds a deterministic scorer should decide) and each kind present."""
    splits = ["all", *sorted({r["split"] for r in rows if r.get("split")})]
    kinds = sorted({r["kind"] for r in rows})
    groups: list[tuple[str, Callable[[Mapping[str, Any]], bool]]] = [("all", lambda r: True)]
    if any(k in DECIDABLE_KINDS for k in kinds):
        groups.append(("figure+choice", lambda r: r["kind"] in DECIDABLE_KINDS))
    groups += [(k, lambda r, k=k: r["kind"] == k) for k in kinds]
    out = []
    for split in splits:
        in_split = [r for r in rows if split == "all" or r.get("split") == split]
        for name, keep in groups:
            sel = [r for r in in_split if keep(r)]
            if sel:
                out.append({"split": split, "kinds": name, **agreement_summary(sel)})
    return out


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def summary_markdown(summ: Sequence[Mapping[str, Any]]) -> str:
    """The summaries as one markdown table (what the CLI and the benchmark print)."""
    lines = ["| split | answers | n | decided | coverage | agreement | kappa | false accepts | false rejects | "
             "system tau-b |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summ:
        lines.append(f"| {s['split']} | {s['kinds']} | {s['n']} | {s['n_decided']} | {_pct(s['coverage'])} | "
                     f"{_pct(s['agreement'])} | {_num(s['kappa'])} | {s['false_accepts']} | {s['false_rejects']} | "
                     f"{_num(s['system_kendall_tau_b'])} |")
    return "\n".join(lines)


def confusion_markdown(summ: Mapping[str, Any]) -> str:
    lines = ["| label \\ scorer | accept | reject | undecided |", "|---|---|---|---|"]
    for lab, row in summ["confusion"].items():
        lines.append(f"| {lab} | {row['accept']} | {row['reject']} | {row['undecided']} |")
    return "\n".join(lines)


def judge_markdown(summ: Mapping[str, Any]) -> str:
    j = summ.get("judge")
    if not j:
        return "no judge configured"
    p, s = j["vs_people"], j["vs_scorer"]
    return (f"judge {', '.join(j['name'])}: decides {_pct(p['coverage'])}; vs people agreement {_pct(p['agreement'])}, "
            f"kappa {_num(p['kappa'])} (false accepts {p['false_accepts']}, false rejects {p['false_rejects']}); "
            f"vs the scorer where both decide ({s['n_decided']}): agreement {_pct(s['agreement'])}, kappa "
            f"{_num(s['kappa'])}; system tau-b {_num(j['system_kendall_tau_b'])}; cost ${j['cost_usd']:.4f}")


def as_dict(row: LabelledAnswer) -> dict[str, Any]:
    return {k: v for k, v in asdict(row).items() if v not in (None, "")}


# ---------------------------------------------------------------------------------------------
# The warehouse


def stored_items(warehouse: Any, qa_ids: Iterable[str]) -> dict[str, QAItem]:
    """The warehouse's QA items of ``qa_ids`` (those it holds), with their contracts."""
    from finrag_pipeline.core.records import qa_item_from_row

    ids = sorted({q for q in qa_ids if q})
    if not ids or warehouse is None or not Path(warehouse.path).exists():
        return {}
    df = warehouse.query_df(f"SELECT * FROM qa.items WHERE qa_id IN ({', '.join('?' * len(ids))})", ids)
    return {r["qa_id"]: qa_item_from_row(r) for r in df.to_dict("records")}


def write_verdicts(warehouse: Any, verdicts: Sequence[Mapping[str, Any]], *, set_name: str, source_file: str) -> int:
    """Replace ``set_name``'s rows of eval.answer_agreement by ``verdicts`` (a re-run is idempotent)."""
    from datetime import UTC, datetime

    now = datetime.now(UTC).replace(tzinfo=None)
    rows = [{**{c: v.get(c) for c in VERDICT_COLUMNS}, "set_name": set_name, "source_file": source_file,
             "scored_at": now} for v in verdicts]
    return warehouse.replace_rows("eval.answer_agreement", rows, where={"set_name": set_name})


REPO_SET = REPO_ROOT / "data" / "labelled_answers" / "answers.jsonl"   # the repository's own set


def score_labelled_set(warehouse: Any, path: str | Path, *, set_name: str | None = None, judge: Any | None = None,
                       write: bool = True) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Read, score and (``write``) store one labelled answer set -> (set name, verdicts, summaries).
    What `finrag score agreement` and the labelled_answer_agreement asset run."""
    path = Path(path)
    rows = read_labelled_answers(path)
    name = set_name or path.stem
    need = [r.qa_id for r in rows if r.qa_id and not r.qa_item]
    stored = stored_items(warehouse, need) if need else {}
    verdicts = score_labelled_answers(rows, set_name=name, stored=stored, judge=judge)
    if write:
        write_verdicts(warehouse, verdicts, set_name=name, source_file=str(path.resolve()))
    return name, verdicts, summaries(verdicts)
