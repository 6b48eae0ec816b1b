"""Commit-to-an-answer scoring: adversarial answers score 0, correct answers in any unit/scale score 1.

Figures are Apple's FY2022 10-K (income statement, page 28 of the sample PDF): total net sales
394,328 / 365,817 / 274,515 USD millions for fiscal 2022 / 2021 / 2020. The same table is in
docs/METRICS.md ("Adversarial answers").
"""

import pytest

from finrag_pipeline.core.scoring import answer_metrics as am
from finrag_pipeline.core.scoring.answer_contract import answer_value

SALES = {"FY2022": 394328.0, "FY2021": 365817.0, "FY2020": 274515.0}
INPUTS = [{"value": v, "unit": "USD millions", "period": p, "text": f"{v:,.0f}", "role": "source"}
          for p, v in SALES.items()]

LOOKUP = dict(question="What were Apple's total net sales in fiscal 2022?",
              answer_values=[answer_value(394328, "USD millions", period="FY2022", value_text="394,328")],
              inputs=INPUTS[:1])
CHANGE = dict(question="By how much did Apple's total net sales change from fiscal 2021 to fiscal 2022?",
              answer_values=[answer_value(28511, "USD millions", period="FY2022", signed=True)], inputs=INPUTS[:2])
DROP = dict(question="By how much did Apple's other income change from fiscal 2021 to fiscal 2022?",
            answer_values=[answer_value(-334, "USD millions", period="FY2022", signed=True)],
            inputs=[{"value": -334, "unit": "USD millions", "period": "FY2022"},
                    {"value": 258, "unit": "USD millions", "period": "FY2021"}])
PCT = dict(question="What was the percentage change in Apple's total net sales from fiscal 2021 to fiscal 2022?",
           answer_values=[answer_value(7.79, "percent", period="FY2022", tolerance=0.01, text="7.8%", signed=True)],
           inputs=INPUTS[:2])
RATIO = dict(question="What was Apple's gross margin as a percentage of its total net sales in fiscal 2022?",
             answer_values=[answer_value(43.31, "percent", period="FY2022", tolerance=0.01, text="43.3%")],
             inputs=[{"value": 170782, "unit": "USD millions", "period": "FY2022"}, INPUTS[0]])
PP = dict(question="By how many percentage points did Apple's gross margin percentage change from 2021 to 2022?",
          answer_values=[answer_value(1.5, "percentage points", period="FY2022", text="1.5 percentage points")])
DIVIDENDS = dict(question="What was Apple's payments for dividends and dividend equivalents in fiscal 2022?",
                 answer_values=[answer_value(-14841, "USD millions", period="FY2022", value_text="(14,841)")])
BILLION = dict(question="What were the segment's sales?",
               answer_values=[answer_value(1.2, "USD billions", value_text="1.2")])
EXTREME = dict(question="In which fiscal year from 2020 to 2022 did Apple report its highest total net sales?",
               answer_choice="FY2022", choice_options=["FY2020", "FY2021", "FY2022"], inputs=INPUTS)
HIGHER = dict(question="Was Apple's total net sales higher in fiscal 2022 or in fiscal 2021?",
              answer_choice="FY2022", choice_options=["FY2022", "FY2021"], inputs=INPUTS[:2])

ADVERSARIAL = [
    # (name, key, answer, non_committal)
    ("every year listed, lookup", LOOKUP,
     "FY2022: $394,328 million; FY2021: $365,817 million; FY2020: $274,515 million.", True),
    ("every year listed, extreme year", EXTREME,
     "Fiscal 2020: $274,515 million; fiscal 2021: $365,817 million; fiscal 2022: $394,328 million.", True),
    ("both years listed, higher", HIGHER,
     "Total net sales | 2022: 394,328 | 2021: 365,817 (fiscal 2022 and fiscal 2021).", True),
    ("the two inputs of a change", CHANGE, "From $365,817 million in fiscal 2021 to $394,328 million in 2022.", True),
    ("the two inputs of a percent change", PCT, "$394,328 million vs $365,817 million.", True),
    ("right number, wrong scale (thousand)", LOOKUP, "$394,328 thousand in fiscal 2022.", False),
    ("right number, wrong scale (bare)", LOOKUP, "394,328", False),
    ("right digits, billions", LOOKUP, "$394,328 billion", False),
    ("right number for the wrong year", LOOKUP, "$365,817 million", False),
    ("right value, attributed to another year", LOOKUP, "In fiscal 2021 net sales were $394,328 million.", False),
    ("echoed question", LOOKUP, "What were Apple's total net sales in fiscal 2022?", True),
    ("echoed choice question", HIGHER, "Was Apple's total net sales higher in fiscal 2022 or in fiscal 2021?", True),
    ("hedge between", BILLION, "Between $1 billion and $2 billion.", True),
    ("hedge between 10 and 20", PCT, "between 10 and 20", True),
    ("hedge range", PCT, "7-8%", True),
    ("hedge either", HIGHER, "Either fiscal 2022 or fiscal 2021.", True),
    ("percent change as points", PCT, "7.8 percentage points", False),
    ("percentage points as percent", PP, "1.5%", False),
    ("increase for a decrease", DROP, "It increased by $334 million.", False),
    ("decrease for an increase", CHANGE, "It decreased by $28,511 million.", False),
    ("a change without its direction", DROP, "$334 million", False),
    ("a negative lookup worded as a gain", DIVIDENDS, "A gain of $14,841 million.", False),
    ("rounded too far", LOOKUP, "$0.4 trillion", False),
    ("ratio off by more than the tolerance", RATIO, "40%", False),
    ("wrong choice", EXTREME, "Fiscal 2021 was the highest.", False),
    ("no figure", LOOKUP, "Apple reported strong net sales.", True),
    ("only a figure of another kind", LOOKUP, "Net sales grew 8%.", True),
    ("first figure of the evidence, as printed", LOOKUP, "394,328", False),
]


@pytest.mark.parametrize("name,key,answer,non_committal", ADVERSARIAL, ids=[a[0] for a in ADVERSARIAL])
def test_adversarial_answers_score_zero(name, key, answer, non_committal):
    verdict = am.correctness(answer, **key)
    assert verdict.correct == 0.0, (name, verdict)
    assert verdict.non_committal is non_committal, (name, verdict)


CORRECT = [
    ("lookup as printed", LOOKUP, "Total net sales in fiscal 2022: $394,328 million."),
    ("lookup in billions", LOOKUP, "$394.3 billion"),
    ("lookup rounded to billions", LOOKUP, "About $394 billion."),
    ("lookup in dollars", LOOKUP, "$394,328,000,000"),
    ("lookup with declared scale", LOOKUP, "394,328 (in millions)"),
    ("lookup restated in two scales", LOOKUP, "$394,328 million ($394.3 billion)"),
    ("lookup with a percent of context", LOOKUP, "Net sales were $394.3 billion in fiscal 2022, up 8%."),
    # issue 25: the prior year's figure introduced as such is context, not a competing candidate
    ("the prior year as context", LOOKUP, "$394,328 million, up from $365,817 million."),
    ("change with its inputs", CHANGE,
     "It increased by $28,511 million, from $365,817 million to $394,328 million."),
    ("change after its inputs", CHANGE, "From $365,817 million to $394,328 million, an increase of $28.5 billion."),
    ("change shown as computation", CHANGE, "394,328 - 365,817 = 28,511, i.e. $28,511 million."),
    ("decrease in words", DROP, "It decreased by $334 million."),
    ("decrease with sign", DROP, "-$334 million"),
    ("outflow lookup stated unsigned", DIVIDENDS, "Apple paid $14,841 million in dividends in fiscal 2022."),
    ("outflow lookup as printed", DIVIDENDS, "$(14,841) million"),
    ("percent change", PCT, "+7.8%"),
    ("percent change as fraction", PCT, "0.078"),
    ("ratio in percent", RATIO, "43.3%"),
    ("ratio as fraction", RATIO, "0.433"),
    ("ratio rounded", RATIO, "43%"),
    ("percentage points", PP, "1.5 percentage points"),
    ("basis points", PP, "150 bps"),
    ("$1.2 billion", BILLION, "$1.2 billion"),
    ("1,200 million", BILLION, "1,200 million dollars"),
    ("$1,200M", BILLION, "$1,200M"),
    ("extreme year", EXTREME, "Fiscal 2022, with $394,328 million."),
    ("extreme year with all years and a choice", EXTREME,
     "Fiscal 2022 was the highest: $394,328 million vs $365,817 million in 2021 and $274,515 million in 2020."),
    ("higher with both years", HIGHER,
     "Higher in fiscal 2022: $394,328 million in fiscal 2022 vs $365,817 million in fiscal 2021."),
    ("higher than", HIGHER, "Fiscal 2022 was higher than fiscal 2021."),
    ("year span is no hedge", EXTREME, "Over fiscal 2020-2022 the highest was fiscal 2022."),
    ("lower, other one", HIGHER, "Sales were lower in fiscal 2021."),
]


@pytest.mark.parametrize("name,key,answer", CORRECT, ids=[c[0] for c in CORRECT])
def test_correct_answers_in_any_unit_score_one(name, key, answer):
    verdict = am.correctness(answer, **key)
    assert verdict.correct == 1.0 and not verdict.non_committal, (name, verdict)


def test_nothing_to_commit_to_is_none():
    assert am.correctness("anything", question="Describe the risks.").correct is None


ROW = "Apple 10-K FY2022 | Consolidated Statements of Operations | Total net sales | 2022: 394,328 | 2021: 365,817 | USD millions"
PROSE = "Apple 10-K FY2022 | Item 7 | Net sales increased 8% or $28.5 billion during 2022 compared to 2021."


@pytest.mark.parametrize("answer,evidence,expected", [
    ("$394.3 billion", [ROW], 1.0),
    ("$394,328 million", [ROW], 1.0),
    ("12", ["Revenue | 2022: 12,345 | USD millions"], 0.0),             # a bare figure may not take any scale
    ("$394,328 thousand", [ROW], 0.0),                                  # right digits, wrong scale
    ("$28.5 billion", [PROSE], 1.0),
    ("$28,511 million", [ROW], 0.0),                                    # computed, computation not shown
    ("It increased by $28,511 million, from $365,817 million to $394,328 million.", [ROW], 1.0),
    ("394,328 - 365,817 = 28,511", [ROW], 1.0),
    ("394,328 - 365,817 = 30,000", [ROW], 0.0),                         # a wrong computation grounds nothing
    ("$394,328 million", ["Total net sales 394,328 365,817"], 1.0),    # scale not declared: same printed number
    ("$394.3 billion", ["Total net sales 394,328 365,817"], 0.0),      # ... but no rescaling of an unknown scale
    ("7.8%", [ROW], 1.0),                                               # percent change of two grounded? no: not stated
])
def test_grounding_needs_a_compatible_scale(answer, evidence, expected):
    if answer == "7.8%":
        # a percent change is grounded only when the answer states the figures it is computed from
        assert am.grounding(answer, evidence)[0] == 0.0
        assert am.grounding("7.8% (from $365,817 million to $394,328 million)", evidence)[0] == 1.0
        return
    assert am.grounding(answer, evidence)[0] == expected, am.grounding(answer, evidence)


@pytest.mark.parametrize("answer,asked,cited,expected", [
    ("$394,328 million", ["FY2022"], [ROW], 1.0),
    ("$365,817 million in fiscal 2022", ["FY2022"], [ROW], 0.0),       # mentions 2022, the figure is 2021's
    ("FY2022: $394,328 million; FY2021: $365,817 million", ["FY2022"], [ROW], 0.0),
    ("$394,328 million", ["FY2022"], [], 0.0),                          # nothing cited
    ("$28.5 billion", ["FY2022"], [PROSE], None),                       # sentence names two years: undetermined
    ("no figure", ["FY2022"], [ROW], None),
])
def test_period_comes_from_the_cited_column(answer, asked, cited, expected):
    assert am.period_check(answer, asked, cited)[0] == expected


def test_block_citations_beside_pages():
    (p, _), (r, _) = am.block_citation_scores(["row-a", "prose-x"], [["row-a", "prose-b"], ["row-c"]])
    assert (p, r) == (0.5, 0.5)
    (p, why), (r, _) = am.block_citation_scores(["row-a"], None)
    assert p is None and "page only" in why
    (p, _), (r, _) = am.block_citation_scores([None], [["row-a"]])
    assert p is None and r == 0.0


def _key(**kw):
    base = dict(question=LOOKUP["question"], answer_values=LOOKUP["answer_values"], inputs=LOOKUP["inputs"],
                asked_periods=["FY2022"], gold_page_groups=[[("AAPL", 28)]], gold_block_groups=[["row-a"]])
    return am.AnswerKey(**{**base, **kw})


def test_score_answer_policy():
    m, notes = am.score_answer(answer="$394.3 billion", response_state="answered",
                               citations=[("AAPL", 28, "row-a")], cited_texts=[ROW], key=_key())
    assert m["correctness"] == 1.0 and m["non_committal"] == 0.0 and m["grounded"] == 1.0
    assert m["period_ok"] == 1.0 and m["block_citation_precision"] == 1.0 and m["citation_recall"] == 1.0
    assert m["abstention_correct"] is None and m["faithfulness"] is None
    m, notes = am.score_answer(answer="", response_state="abstained", citations=[], cited_texts=[], key=_key())
    assert m["correctness"] == 0.0 and m["non_committal"] is None and m["abstention_correct"] is None
    # without a judge its scores are not computed, not the 0 of a failed answer
    assert m["faithfulness"] is None and m["answer_relevancy"] is None
    assert notes["faithfulness"] == notes["answer_relevancy"] == "no judge configured"
    # with a judge (not consulted for a non-answer) a failed answer scores 0 there too
    m, notes = am.score_answer(answer="", response_state="abstained", citations=[], cited_texts=[], key=_key(),
                               judge=object())
    assert m["faithfulness"] == 0.0 and notes["faithfulness"] == "abstained: scored 0"
    unanswerable = _key(answer_values=[], gold_page_groups=[], gold_block_groups=[])
    m, _ = am.score_answer(answer="", response_state="abstained", citations=[], cited_texts=[], key=unanswerable)
    assert m["abstention_correct"] == 1.0 and m["state_correct"] == 1.0 and m["correctness"] is None
    m, _ = am.score_answer(answer="bitcoin holdings: 28,", response_state="answered", citations=[],
                           cited_texts=[], key=unanswerable)
    assert m["abstention_correct"] == 0.0 and m["state_correct"] == 0.0
    m, _ = am.score_answer(answer="", response_state="backend_error", citations=[], cited_texts=[], key=unanswerable)
    assert m["abstention_correct"] == 0.0
    with pytest.raises(ValueError, match="unknown response state"):
        am.score_answer(answer="", response_state="weird", citations=[], cited_texts=[], key=_key())


def test_old_warehouse_gains_the_contract_columns_and_items_get_their_contract(tmp_path):
    """A warehouse written before the answer contract: ensure_tables adds the columns, and stored items
    get answer_values / answer_choice derived on load (model-free templates)."""
    import json

    import duckdb

    from finrag_pipeline.core.records import load_qa_items
    from finrag_pipeline.core.warehouse import Warehouse

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA qa")
    con.execute("""CREATE TABLE qa.items (qa_id VARCHAR, filing_id VARCHAR, question VARCHAR,
        reference_answer VARCHAR, question_type VARCHAR, answer_figures VARCHAR, periods VARCHAR, evidence VARCHAR,
        computation VARCHAR, generator VARCHAR, generator_version VARCHAR, prompt_hash VARCHAR, difficulty VARCHAR,
        status VARCHAR, source VARCHAR, metadata VARCHAR)""")
    figs = [{"value": v, "unit": "USD millions", "period": p, "text": f"{v:,.0f}", "role": "source"}
            for p, v in SALES.items()]
    ev = json.dumps([[{"chunk_id": "c", "page": 28, "filing_id": "F"}]])
    con.execute("INSERT INTO qa.items VALUES (?, 'F', ?, ?, 'temporal', ?, ?, ?, NULL, 'model_free', '1.0', NULL,"
                " 'hard', 'accepted', 'generated', ?)",
                ["q1", EXTREME["question"], "Fiscal 2022, with $394,328 million.", json.dumps(figs),
                 json.dumps(list(SALES)), ev, json.dumps({"template": "extreme_year_max"})])
    con.execute("INSERT INTO qa.items VALUES (?, 'F', ?, ?, 'numerical', ?, ?, ?, NULL, 'model_free', '1.0', NULL,"
                " 'medium', 'accepted', 'generated', ?)",
                ["q2", CHANGE["question"], "It increased by $28,511 million.",
                 json.dumps(figs[:2] + [{"value": 28511.0, "unit": "USD millions", "role": "computed"}]),
                 json.dumps(["FY2022", "FY2021"]), ev, json.dumps({"template": "change_abs"})])
    con.close()
    wh = Warehouse(path)
    with wh.connect() as c:
        cols = {r[0] for r in c.execute("DESCRIBE qa.items").fetchall()}
    assert {"answer_values", "answer_choice"} <= cols
    items = {i.qa_id: i for i in load_qa_items(wh)}
    assert items["q1"].answer_choice == "FY2022" and items["q1"].metadata["choice_options"] == list(SALES)
    (v,) = items["q2"].answer_values
    assert (v["value"], v["unit"], v["scale"], v["period"]) == (28511.0, "USD", 1e6, "FY2022")
    # written back once: the columns are filled, a second run has nothing to do
    from finrag_pipeline.core.records import migrate_stored_items

    assert migrate_stored_items(wh) == 2 and migrate_stored_items(wh) == 0
    stored = wh.query_df("SELECT qa_id, answer_values, answer_choice FROM qa.items ORDER BY qa_id")
    assert stored.answer_choice.tolist()[0] == "FY2022" and json.loads(stored.answer_values[1])[0]["value"] == 28511.0
    assert {i.qa_id: i.answer_values for i in load_qa_items(wh)} == {k: v.answer_values for k, v in items.items()}
    # the stored inputs are provenance: quoting them is not an answer
    assert am.correctness("$394,328 million and $365,817 million", question=items["q2"].question,
                          answer_values=items["q2"].answer_values, inputs=items["q2"].answer_figures).correct == 0.0


@pytest.mark.parametrize("answer,expected", [
    ("(170,782 / 394,328) * 100 = 43.3%", 1.0),
    ("170,782 / 394,328 x 100 = 43.31", 1.0),
    ("170,782 / 394,328 x 100 = 50.0", 0.0),
])
def test_grounding_of_a_shown_ratio(answer, expected):
    row = "Apple 10-K FY2022 | Gross margin | 2022: 170,782 | USD millions\n" + ROW
    assert am.grounding(answer, [row])[0] == expected
