"""Build analyst_questions_heldout5_narrative.jsonl (issue 26: fresh held-out NARRATIVE analysts' questions).

HELD OUT: whoever builds an answerer or a retriever must not open this file or the JSONL it writes.
Each answer restates the filing's stated causes (MD&A, segment and tax discussion, customer note); each evidence
text is a verbatim snippet of its page. ``python build_analyst_questions_heldout5.py HOME`` checks every snippet
against core.pages of an ingested home (read only), then writes the JSONL and evidence_pages_heldout5.json (the
evidence pages as the parser read them, so the fast tests run without a home).
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "analyst_questions_heldout5_narrative.jsonl"
PAGES_OUT = HERE / "evidence_pages_heldout5.json"
SPLIT = "heldout5"
COMPANY = {"APPLE": "Apple", "aapl": "Apple", "AMAZON": "Amazon", "amzn": "Amazon", "BOEING": "Boeing",
           "MICROSOFT": "Microsoft", "nvda": "NVIDIA"}

# (doc_name, 0-indexed evidence page, question, answer, evidence texts, justification); an evidence text on
# another page is a (0-indexed page, text) pair
QUESTIONS = [
    ("APPLE_2021_10K", 24,
     "Why did Apple's Greater China net sales rise in fiscal 2021, and did currency help or hurt?",
     "Greater China net sales increased in 2021 due primarily to higher net sales of iPhone, iPad and Services. "
     "The strength of the renminbi relative to the U.S. dollar had a favorable impact.",
     ["Greater China net sales increased during 2021 compared to 2020 due primarily to higher net sales of iPhone, "
      "iPad and Services."],
     "MD&A, Segment Operating Performance, Greater China paragraph."),
    ("APPLE_2021_10K", 25,
     "What explains the increase in Apple's Products gross margin percentage in FY2021?",
     "The Products gross margin percentage rose in 2021 due primarily to a different Products mix, improved leverage "
     "and the strength in foreign currencies relative to the U.S. dollar.",
     ["Products gross margin percentage increased during 2021 compared to 2020 due primarily to a different "
      "Products mix, improved leverage and the strength in foreign currencies relative to the U.S. dollar."],
     "MD&A, Gross Margin, Products Gross Margin paragraph."),
    ("APPLE_2021_10K", 26,
     "Why was Apple's effective tax rate lower in fiscal 2021 than in fiscal 2020?",
     "It fell due primarily to higher tax benefits from foreign-derived intangible income deductions and share-based "
     "compensation and favorable changes in unrecognized tax benefits, partially offset by a one-time 2020 "
     "adjustment of U.S. foreign tax credits after Treasury regulations issued in December 2019.",
     ["The Company’s effective tax rate for 2021 was lower compared to 2020 due primarily to higher tax benefits "
      "from foreign-derived intangible income deductions"],
     "MD&A, Provision for Income Taxes."),
    ("APPLE_2022_10K", 23,
     "Which Apple product category saw net sales fall in fiscal 2022, and what caused the decline?",
     "iPad was the category whose net sales decreased in 2022, due primarily to lower net sales of iPad Pro.",
     ["iPad net sales decreased during 2022 compared to 2021 due primarily to lower net sales of iPad Pro."],
     "MD&A, Products and Services Performance, iPad paragraph."),
    ("APPLE_2022_10K", 26,
     "What were the main factors behind the decrease in Apple's other income/(expense), net in FY2022?",
     "OI&E decreased due primarily to higher realized losses on debt securities, unfavorable fair value adjustments "
     "on equity securities and higher interest expense, partially offset by higher foreign exchange gains.",
     ["The decrease in OI&E during 2022 compared to 2021 was due primarily to higher realized losses on debt "
      "securities, unfavorable fair value adjustments on equity securities and higher interest expense"],
     "MD&A, Other Income/(Expense), Net."),
    ("APPLE_2022_10K", 26,
     "Why did Apple's effective tax rate go up in fiscal 2022 versus fiscal 2021?",
     "It rose due primarily to a higher effective tax rate on foreign earnings, including the impact to U.S. foreign "
     "tax credits of 2022 Treasury regulatory guidance, and lower tax benefits from foreign-derived intangible income "
     "deductions and share-based compensation.",
     ["The Company’s effective tax rate for 2022 was higher compared to 2021 due primarily to a higher effective "
      "tax rate on foreign earnings"],
     "MD&A, Provision for Income Taxes."),
    ("aapl-10-k-2024-11-01", 23,
     "Which of Apple's geographic segments had lower net sales in fiscal 2024, and why?",
     "Greater China net sales decreased in 2024 due primarily to lower net sales of iPhone and iPad. The weakness "
     "of the renminbi relative to the U.S. dollar also had an unfavorable impact.",
     ["Greater China net sales decreased during 2024 compared to 2023 due primarily to lower net sales of iPhone "
      "and iPad."],
     "MD&A, Segment Operating Performance, Greater China paragraph."),
    ("aapl-10-k-2024-11-01", 26,
     "What drove the rise in Apple's effective tax rate in fiscal 2024?",
     "The rate rose due primarily to a one-time income tax charge of $10.2 billion, net, related to the State Aid "
     "Decision, a higher effective tax rate on foreign earnings and lower tax benefits from share-based "
     "compensation.",
     ["The Company’s effective tax rate for 2024 was higher compared to 2023 due primarily to a one-time income "
      "tax charge of $10.2 billion, net, related to the State Aid Decision"],
     "MD&A, Provision for Income Taxes."),
    ("aapl-10-k-2024-11-01", 24,
     "Why did Apple's Wearables, Home and Accessories net sales decline in fiscal 2024?",
     "They decreased due primarily to lower net sales of Wearables and Accessories.",
     ["Wearables, Home and Accessories net sales decreased during 2024 compared to 2023 due primarily to lower "
      "net sales of Wearables and Accessories."],
     "MD&A, Products and Services Performance."),
    ("AMAZON_2022_10K", 23,
     "Why did Amazon's North America segment swing to an operating loss in 2022?",
     "The loss was primarily due to increased fulfillment and shipping costs (investments in the fulfillment "
     "network, transportation costs, wage rates and incentives), increased technology and content costs and growth "
     "in certain operating expenses, partially offset by increased unit sales, including third-party seller sales, "
     "and advertising sales.",
     ["The North America operating loss in 2022, as compared to the operating income in the prior year, is "
      "primarily due to increased fulfillment and shipping costs"],
     "MD&A, Results of Operations, Operating Income (Loss) by segment."),
    ("AMAZON_2022_10K", 23,
     "What explains the 8% drop in Amazon's International segment sales in 2022?",
     "International sales decreased primarily due to changes in foreign currency exchange rates, which reduced "
     "International net sales by $15.0 billion, partially offset by increased unit sales, advertising sales and "
     "subscription services.",
     ["International sales decreased 8% in 2022, compared to the prior year, primarily due to the impact of "
      "changes in foreign currency exchange rates",
      "Changes in foreign currency exchange rates reduced International net sales by $15.0 billion in 2022."],
     "MD&A, Results of Operations, Net Sales."),
    ("AMAZON_2022_10K", 25,
     "What were the main drivers of higher fulfillment costs at Amazon in 2022?",
     "Fulfillment costs rose primarily due to increased investments in the fulfillment network, variable costs from "
     "higher sales volume and inventory levels, and increased wage rates and incentives; foreign exchange reduced "
     "them by $2.5 billion.",
     ["The increase in fulfillment costs in absolute dollars in 2022, compared to the prior year, is primarily due "
      "to increased investments in our fulfillment network"],
     "MD&A, Operating Expenses, Fulfillment."),
    ("amzn-10-k-2025-02-07", 26,
     "What drove Amazon's International segment from an operating loss to operating income in 2024?",
     "The turnaround was primarily due to increased unit sales and increased advertising sales, partially offset by "
     "increased shipping and fulfillment costs.",
     ["The International operating income in 2024, as compared to the operating loss in the prior year, is "
      "primarily due to increased unit sales and increased advertising sales"],
     "MD&A, Operating Income (Loss) by segment."),
    ("amzn-10-k-2025-02-07", 26,
     "Why did AWS operating income increase in 2024?",
     "It increased primarily due to increased sales, decreased payroll and related expenses and lower depreciation "
     "from the longer estimated useful lives of servers, partially offset by spending on technology infrastructure "
     "to support AWS growth.",
     ["The increase in AWS operating income in 2024, compared to the prior year, is primarily due to increased "
      "sales, decreased payroll and related expenses"],
     "MD&A, Operating Income (Loss) by segment, AWS."),
    ("amzn-10-k-2025-02-07", 25,
     "Why did Amazon's sales and marketing expense go down in 2024?",
     "It decreased primarily due to decreased payroll and related expenses for marketing and selling personnel, "
     "partially offset by increased advertising expenses.",
     ["The decrease in sales and marketing costs in 2024, compared to the prior year, is primarily due to "
      "decreased payroll and related expenses for personnel engaged in marketing and selling activities"],
     "MD&A, Operating Expenses, Sales and Marketing."),
    ("MICROSOFT_2022_10K", 46,
     "What explains the change in Microsoft's effective tax rate in fiscal 2022?",
     "The rate decreased from 14% to 13% primarily due to a $3.3 billion net income tax benefit from the transfer of "
     "intangible properties, offset in part by the mix of income between the U.S. and foreign countries and prior-"
     "year tax benefits from the India Supreme Court decision on withholding taxes.",
     ["Our effective tax rate for fiscal years 2022 and 2021 was 13% and 14%, respectively."],
     "MD&A, Income Taxes, Effective Tax Rate."),
    ("MICROSOFT_2022_10K", 44,
     "What drove Microsoft's Gaming revenue growth in fiscal 2022?",
     "Gaming revenue increased $860 million or 6%, driven by growth in Xbox hardware (up 16% on demand for Xbox "
     "Series X|S) and Xbox content and services (up 3% on Xbox Game Pass subscriptions and first-party content).",
     ["Gaming revenue increased $860 million or 6% on a strong prior year comparable"],
     "MD&A, Segment Results, More Personal Computing."),
    ("MICROSOFT_2022_10K", 42,
     "Which businesses drove Microsoft's revenue increase across its three segments in fiscal 2022?",
     "Revenue rose $30.2 billion or 18%: Intelligent Cloud on Azure and other cloud services, Productivity and "
     "Business Processes on Office 365 Commercial and LinkedIn, and More Personal Computing on Search and news "
     "advertising and Windows.",
     ["Revenue increased $30.2 billion or 18% driven by growth across each of our segments."],
     "MD&A, Overview, Fiscal Year 2022 Compared with Fiscal Year 2021."),
    ("BOEING_2021_10K", 28,
     "What were the main reasons Boeing's Commercial Airplanes loss from operations narrowed in 2021?",
     "BCA's loss fell by $7,372 million primarily due to the absence of the $6,493 million 777X reach-forward loss "
     "recorded in 2020, lower period expenses, lower 737 MAX customer considerations and higher 737 MAX deliveries, "
     "partially offset by a $3,460 million reach-forward loss on the 787 program.",
     ["BCA loss from operations decreased by $7,372 million primarily due to the absence of a $6,493 million "
      "reach-forward loss on the 777X program"],
     "MD&A, Consolidated Results of Operations, Loss From Operations."),
    ("BOEING_2021_10K", 41,
     "Why did Boeing Defense, Space & Security revenues increase in 2021?",
     "BDS revenues rose $283 million primarily due to higher KC-46A Tanker revenue from new orders for 27 aircraft "
     "and lower charges, partially offset by lower revenues on rotorcraft programs, Commercial Crew and VC-25B.",
     ["BDS revenues in 2021 increased by $283 million compared with 2020 primarily due to higher revenue on the "
      "KC-46A Tanker program"],
     "MD&A, Segment Results, Defense, Space & Security, Revenues."),
    ("nvda-10-k-2025-02-26", 40,
     "Which NVIDIA segment saw operating income decline in fiscal 2025, and why?",
     "The Graphics segment's operating income decreased, driven by a 44% increase in segment operating expenses, "
     "partially offset by growth in revenue.",
     ["The year over year decrease in Graphics segment operating income was driven by an increase of 44% in segment "
      "operating expenses, partially offset by growth in revenue."],
     "MD&A, Reportable Segments, segment operating income."),
    ("nvda-10-k-2025-02-26", 37,
     "Why did NVIDIA's operating expenses rise so much in fiscal 2025?",
     "Operating expenses were up 45%, driven by higher compensation and benefits from employee growth and "
     "compensation increases, and engineering development, compute and infrastructure costs for new product "
     "introductions.",
     ["Operating expenses for fiscal year 2025 were up 45% from a year ago, driven by higher compensation and "
      "benefits expenses"],
     "MD&A, Fiscal Year 2025 Summary."),
    ("nvda-10-k-2025-02-26", 40,
     "How concentrated was NVIDIA's revenue among customers in fiscal 2025?",
     "Three direct customers each represented 10% or more of total revenue (Direct Customers A, B and C at 12%, 11% "
     "and 11%), all primarily in Compute & Networking. An indirect customer buying through system integrators and "
     "distributors, including Direct Customer B, is estimated at 10% or more of revenue.",
     ["Direct Customer A 12 %", "Direct Customer C 11 %",
      (41, "an indirect customer which primarily purchases our products through system integrators and distributors, "
           "including through Direct Customer B, is estimated to represent 10% or more of total revenue")],
     "MD&A, Concentration of Revenue."),
]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def records() -> list[dict]:
    out = []
    for n, (doc, page, question, answer, texts, just) in enumerate(QUESTIONS, start=301):
        out.append({"financebench_id": f"analyst_{n:03d}", "company": COMPANY[re.split(r"[_-]", doc)[0]],
                    "doc_name": doc, "question_type": "novel-generated", "question_category": "narrative",
                    "question": question, "answer": answer,
                    "evidence": [{"doc_name": doc, "evidence_page_num": t[0] if isinstance(t, tuple) else page,
                                  "evidence_text": t[1] if isinstance(t, tuple) else t} for t in texts],
                    "justification": just, "split": SPLIT})
    return out


def main(home: str) -> None:
    import duckdb

    con = duckdb.connect(str(Path(home) / "warehouse.duckdb"), read_only=True)
    rows = con.execute("SELECT f.original_name, f.filing_id, p.page_number, p.text FROM core.pages p "
                       "JOIN core.filings f USING (filing_id)").fetchall()
    con.close()
    pages: dict[str, dict] = {}
    for name, fid, page, text in rows:
        entry = pages.setdefault(Path(name).stem, {"filing_id": fid, "n_pages": 0, "pages": {}})
        entry["n_pages"] += 1
        entry["pages"][int(page)] = text or ""
    recs, fixture, missing = records(), {}, []
    for r in recs:
        entry = pages[r["doc_name"]]
        for e in r["evidence"]:
            number = e["evidence_page_num"] + 1                      # FinanceBench pages are 0-indexed
            if _norm(e["evidence_text"]) not in _norm(entry["pages"].get(number, "")):
                missing.append(r["financebench_id"])
            fixed = fixture.setdefault(r["doc_name"], {"filing_id": entry["filing_id"], "n_pages": entry["n_pages"],
                                                       "pages": {}})
            fixed["pages"][str(number)] = entry["pages"][number]
    if missing:
        raise SystemExit(f"evidence not on its page: {missing}")
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    PAGES_OUT.write_text(json.dumps(fixture, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(recs)} records")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/main/.finrag")
