"""The calculator answerer on the generated metric questions (analyst words from phrasing.yaml), scored by
answer_metrics.correctness on the figure it commits to. Run: python benchmarks/metric_questions_calculator.py"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "finrag_pipeline_tests"))
from collections import Counter

from _analyst_corpus import parsed_samples

from finrag_pipeline.core.analyst import FactStore
from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.scoring.answer_metrics import correctness

ps = parsed_samples()
calc = calculator_answerer(FactStore.from_parsed(ps.values()))
ok, tot, states = Counter(), Counter(), Counter()
for p in ps.values():
    items, _ = generate_model_free(p.meta, p.pages, p.table_rows, p.facts, chunk_filing(p.meta, p.pages, p.table_rows))
    for i in (i for i in items if i.question_type == "metric"):
        r = calc.answer(i.question, [], i.periods)
        v = correctness(r.details.get("figure", r.text), question=i.question, answer_values=i.answer_values,
                        inputs=[f for f in i.answer_figures if f.get("role") == "source"])
        k = i.metadata["metric"].split(":")[0]
        tot[k] += 1
        ok[k] += v.correct == 1.0
        states[r.response_state] += 1
print(f"calculator on generated (analyst-worded) metric questions: {sum(ok.values())}/{sum(tot.values())} correct; states {dict(states)}")
print({k: f"{ok[k]}/{tot[k]}" for k in tot})
