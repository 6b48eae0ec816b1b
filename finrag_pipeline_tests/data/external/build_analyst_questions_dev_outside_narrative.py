"""Writes analyst_questions_dev_outside_narrative.jsonl: narrative questions on five 10-Ks OUTSIDE the demo
(robustness/ COSTCO_2020, WALMART_2021, INTEL_2020, NIKE_2020, NETFLIX_2020), FinanceBench format, split
"dev_outside". Development data written by the builder of the narrative answerer's fifth pass (issue 26, narr4)
while building it: every figure measured on it is an upper bound. References and evidence read by hand in the
filings' text (0-indexed physical PDF pages, as FinanceBench)."""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("analyst_questions_dev_outside_narrative.jsonl")

# (id, company, doc_name, question, answer, 0-indexed page, evidence text)
QUESTIONS = [
    ("outside_n01", "Costco", "COSTCO_2020_10K", "What drove Costco's net sales increase in fiscal 2020?",
     "An 8% increase in comparable sales and sales at new warehouses opened in 2019 and 2020 (net sales rose $13,869 million or 9%).",
     23, "Net sales increased $13,869 or 9% during 2020, primarily due to an 8% increase in comparable sales and sales at new warehouses opened in 2019 and 2020."),
    ("outside_n02", "Costco", "COSTCO_2020_10K", "Why did Costco's membership fee revenue increase in 2020?",
     "Membership sign-ups at existing and new warehouses (membership fees rose 6% to $3,541 million).",
     24, "The increase in membership fees was primarily due to membership sign-ups at existing and new warehouses."),
    ("outside_n03", "Costco", "COSTCO_2020_10K", "What explains the change in Costco's gross margin percentage in FY2020?",
     "It rose 18 basis points (11.20% vs 11.02%), primarily due to a 32 basis point increase in core merchandise categories, predominantly fresh foods and food and sundries, partially offset by ancillary businesses hurt by COVID-19 closures.",
     24, "This increase was primarily due to a 32 basis point increase in our core merchandise categories, predominantly fresh foods and food and sundries, partially offset by a decrease in softlines and hardlines."),
    ("outside_n04", "Costco", "COSTCO_2020_10K", "Why did Costco's interest income decline in 2020?",
     "Lower interest rates in the U.S. and Canada, partially offset by higher average cash and investment balances.",
     26, "The decrease in interest income in 2020 was primarily due to lower interest rates in the U.S. and Canada, partially offset by higher average cash and investment balances."),
    ("outside_n05", "Costco", "COSTCO_2020_10K", "How did Costco's SG&A as a percentage of net sales change in 2020 and why?",
     "It decreased three basis points to 10.01%; operating costs were lower by 26 basis points due to leveraging increased sales, offset by incremental wage and sanitation costs from COVID-19 of about $456 million (28 basis points).",
     25, "Operating costs related to warehouse operations and other businesses, which include e-commerce and travel, were lower by 26 basis points, primarily due to leveraging increased sales."),
    ("outside_n06", "Walmart", "WALMART_2021_10K", "What drove Walmart's gross profit rate increase in fiscal 2021?",
     "Strategic sourcing initiatives, strong sales in higher margin categories and fewer markdowns (the rate rose 20 basis points), partially offset by carryover of prior year price investment and temporary closures of Auto Care Centers and Vision Centers.",
     37, "For fiscal 2021, the increase was primarily due to strategic sourcing initiatives, strong sales in higher margin categories, and fewer markdowns."),
    ("outside_n07", "Walmart", "WALMART_2021_10K", "Why did Walmart's effective tax rate increase in fiscal 2021?",
     "The loss on the divestiture of certain international operations held for sale or sold, which provided minimal realizable tax benefit (33.3% vs 24.4%).",
     38, "The increase in our effective tax rate for fiscal 2021 as compared to fiscal 2020 is primarily due to the loss related to the divestiture of certain international operations classified as held for or sold in fiscal 2021, which provided minimal realizable tax benefit."),
    ("outside_n08", "Walmart", "WALMART_2021_10K", "What drove the growth in Sam's Club membership and other income in fiscal 2021?",
     "Growth in total members, helped by higher renewal rates, and higher Plus Member penetration (up 6.8%).",
     40, "For fiscal 2021 and 2020, the increases were primarily due to growth in total members, which benefited from higher overall renewal rates, and higher Plus Member penetration."),
    ("outside_n09", "Walmart", "WALMART_2021_10K", "What drove Walmart's net sales growth in fiscal 2021?",
     "Strong positive comparable sales in Walmart U.S. and Sam's Club and in most international markets from COVID-19 demand (net sales up $35.3 billion or 6.8%), partially offset by $5.0 billion of currency exchange rates.",
     37, "For fiscal 2021, the increase was primarily due to strong positive comparable sales for the Walmart U.S. and Sam's Club segments as well as positive comparable sales in the majority of our international markets resulting from increased demand stemming from the COVID-19 pandemic."),
    ("outside_n10", "Intel", "INTEL_2020_10K", "What explains the increase in Intel's effective tax rate in 2020?",
     "A change in the permanent reinvestment assertion on undistributed earnings in China, from the planned divestiture of the NAND memory business, and a reduced foreign derived intangible income benefit (16.7% vs 12.5%).",
     42, "Our effective tax rate increased in 2020 compared to 2019, primarily driven by a change in our permanent reinvestment assertion with respect to undistributed earnings in China, as a result of our planned divestiture of the NAND memory business."),
    ("outside_n11", "Intel", "INTEL_2020_10K", "What drove the decline in Intel's IOTG revenue in 2020?",
     "The economic impacts of COVID-19: $470 million of lower ASPs from weaker core mix and $265 million from weaker demand for IOTG platform products (revenue down $814 million or 21%).",
     28, "IOTG revenue decreased $814 million, or 21%, primarily driven by the economic impacts of COVID-19 with $470 million in lower ASPs driven by weaker core mix and $265 million driven by weaker demand for IOTG platform products."),
    ("outside_n12", "Intel", "INTEL_2020_10K", "What drove the improvement in Intel's NSG operating income in 2020?",
     "$716 million of higher ASPs from market pricing recovery and $741 million from continued improvements in unit cost (an operating profit of $361 million after a $1.2 billion loss).",
     31, "The operating profit was driven by $716 million higher ASPs from market pricing recovery and $741 million due to continued improvements in unit cost."),
    ("outside_n13", "Intel", "INTEL_2020_10K", "Why did Intel's R&D spending increase in 2020?",
     "Investments in process technology and in the PC and data-centric businesses, partially offset by the ramp down of the 5G smartphone modem business and lower incentive-based cash compensation (up $194 million or 1%).",
     41, "R&D spending increased by $194 million, or 1%, driven by the following: + Investments in our process technology + Investments in our PC and data-centric businesses"),
    ("outside_n14", "Intel", "INTEL_2020_10K", "What patent infringement claims has VLSI Technology brought against Intel?",
     "VLSI filed suits in the Northern District of California (October 2017, eight patents acquired from NXP, damages estimated up to $7.1 billion), in Delaware (June 2018, about $4.13 billion sought on two patents) and in the Western District of Texas (April 2019, about $11 billion).",
     109, "In October 2017, VLSI Technology LLC (VLSI) filed a complaint against Intel in the U.S. District Court for the Northern District of California alleging infringement of eight patents acquired from NXP Semiconductors, N.V. (NXP)."),
    ("outside_n15", "Nike", "NIKE_2020_10K", "What drove the decrease in NIKE's revenues in fiscal 2020?",
     "Growth of 7% in the first nine months was more than offset by a 38% decline in the fourth quarter due to COVID-19: lower shipments to wholesale customers and store closures (revenues down 4% to $37.4 billion).",
     29, "Fiscal 2020 NIKE, Inc. Revenues declined 4% to $37.4 billion, as revenue growth of 7% for the first nine months of fiscal 2020 was more than offset by a 38% decline in the fourth quarter due to the impacts of COVID-19."),
    ("outside_n16", "Netflix", "NETFLIX_2020_10K", "What drove the increase in Netflix's revenues in 2020?",
     "24% growth in average paying memberships and a 1% increase in average monthly revenue per paying membership (revenues up 24%).",
     23, "The increase in our consolidated revenues was due to the 24% growth in average paying memberships and a 1% increase in average monthly revenue per paying membership."),
]


def main() -> None:
    lines = []
    for qid, company, doc, question, answer, page, evidence in QUESTIONS:
        lines.append(json.dumps({"financebench_id": qid, "company": company, "doc_name": doc,
                                 "question_type": "novel-generated", "question_category": "narrative",
                                 "question": question, "answer": answer,
                                 "evidence": [{"doc_name": doc, "evidence_page_num": page, "evidence_text": evidence}],
                                 "split": "dev_outside"}))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} questions -> {OUT}")


if __name__ == "__main__":
    main()
