"""Benchmark: the answer scorer against answers people graded (issue 25, items 3a and 4).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/answer_agreement.py [--set data/labelled_answers/answers.jsonl]
        [--judge MODEL] [--disagreements N] [--split dev] [--reference-only] [--json]

Scores every answer of a labelled answer set with the scorer on the path (`ensure_contract` through
`runner.answer_key`, then `answer_metrics.correctness`: core/evaluation/human_agreement.py) and prints,
per split (all / dev / heldout) and answer kinds: coverage (share decided), agreement and Cohen's kappa
where it decides, false accepts and rejects, system-level Kendall tau-b; then the held-out half's
figure+choice figures against issue 25's done-criterion (coverage >= 80%, agreement >= 95%, kappa >=
0.85). ``--reference-only`` drops each row's stored QA item, so every contract is derived from the
question and the reference alone, as for an imported people-graded set; ``--split dev`` prints only the
development half's disagreements (tune on dev, measure held-out). Nothing is written to a warehouse. The repository's set is self-written (one author wrote the
answers and the labels): every figure on it is an upper bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from finrag_pipeline.core.evaluation import human_agreement as ha

DONE = {"coverage": 0.80, "agreement": 0.95, "kappa": 0.85}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default=str(ha.REPO_SET))
    ap.add_argument("--judge", default=None, help="models.yaml name of a rubric judge (optional)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--disagreements", type=int, default=0, help="print this many answers where scorer and label differ")
    ap.add_argument("--split", default=None, help="print disagreements of this split only (dev while tuning)")
    ap.add_argument("--reference-only", action="store_true",
                    help="derive every contract from the question and reference alone (ignore stored QA items)")
    args = ap.parse_args()
    judge = None
    if args.judge:
        from finrag_pipeline.core.evaluation.judge import RubricJudge

        judge = RubricJudge.from_model(args.judge)
    t0 = time.perf_counter()
    rows = ha.read_labelled_answers(args.set)
    if args.reference_only:
        rows = [dataclasses.replace(r, qa_item=None) for r in rows]
    verdicts = ha.score_labelled_answers(rows, set_name="benchmark", judge=judge)
    summ = ha.summaries(verdicts)
    seconds = time.perf_counter() - t0
    if args.json:
        print(json.dumps(summ, indent=2, default=str))
        return
    load = os.getloadavg()
    print(f"$ {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"{len(verdicts)} answers, {len({r.qa_id or r.question for r in rows})} questions, "
          f"{len({r.system for r in rows if r.system})} systems; scored in {seconds:.1f} s "
          f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n")
    print(ha.summary_markdown(summ))
    overall = summ[0]
    print("\nlabel x scorer, all answers:\n" + ha.confusion_markdown(overall))
    print("\nsystems (people: share Correct over all answers; scorer: mean correctness over decided answers):")
    for s in overall["systems"]:
        mean = "n/a" if s["scorer_mean"] is None else f"{s['scorer_mean']:.2f}"
        print(f"  {s['system']:<20} people {s['human_correct']:.2f}  scorer {mean}  ({s['n_decided']}/{s['n']} decided)")
    if judge is not None:
        print("\n" + ha.judge_markdown(overall) + f"\njudge meter: {judge.meter()}")
    shown = [v for v in verdicts if v["agrees"] is False and (args.split is None or v["split"] == args.split)]
    for v in shown[: args.disagreements]:
        print(f"\n[{v['answer_id']}] {v['label']} vs scorer {v['scorer_decision']}: {v['scorer_reason']}\n"
              f"  R: {v['reference']}\n  A: {' '.join(v['answer'].split())[:300]}")
    held = next((s for s in summ if s["split"] == "heldout" and s["kinds"] == "figure+choice"), None)
    if held:
        print("\nissue 25 done-criterion, held-out figure+choice answers (self-written set: an upper bound):")
        for key, floor in DONE.items():
            v = held[key]
            ok = v is not None and v >= floor
            print(f"  {key:<10} {('n/a' if v is None else f'{v:.3f}'):>7}  (>= {floor:.2f}) {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
