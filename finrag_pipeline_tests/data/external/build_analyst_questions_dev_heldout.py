"""How analyst_questions_dev.jsonl and analyst_questions_heldout.jsonl were written (README.md here).

THIS FILE HOLDS THE HELD-OUT QUESTIONS: whoever builds or tunes an answerer, a retriever or a scorer
must not read it (nor analyst_questions_heldout.jsonl, nor evidence_pages_dev_heldout.json).

The questions, answers and evidence below were read by hand in the filings' pages as the project's
parser numbers them (`page` is the project's 1-based page: the PDF's physical page; for the
inline-XBRL filings the page of the HTML parser). Every derived figure was computed by hand from the
operands quoted in the evidence and is written out in the justification. This script only:
- checks that every evidence text is verbatim (whitespace aside) on its page as parsed;
- checks the arithmetic of each justification that states "= result" against its operands (see
  ``check_arithmetic``: a typo in a justification fails the build);
- splits the set into a dev and a held-out half, per category, by a seeded shuffle (SEED);
- writes both files in FinanceBench format (evidence_page_num = page - 1, 0-indexed as FinanceBench)
  and evidence_pages_dev_heldout.json (the text of the evidence pages, for the fast import test).

    PYTHONPATH=$PWD python finrag_pipeline_tests/data/external/build_analyst_questions_dev_heldout.py
"""
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = {"dev": HERE / "analyst_questions_dev.jsonl", "heldout": HERE / "analyst_questions_heldout.jsonl"}
PAGES_OUT = HERE / "evidence_pages_dev_heldout.json"
SEED = 26          # issue 26; fixed before the questions were written, never re-drawn
FIRST_ID = 50      # analyst_questions.jsonl holds analyst_001..analyst_049
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))   # the helpers both build scripts share, beside them

from analyst_build import Questions, evidence_not_on_page, record, write_evidence_pages, write_jsonl  # noqa: E402

# FinanceBench's own question types: its judgement questions ("Does AMCOR have a healthy liquidity
# profile based on its quick ratio?") are "domain-relevant"
FB_TYPE = {"metric": "metrics-generated", "lookup": "domain-relevant", "judgement": "domain-relevant",
           "narrative": "novel-generated"}
Q = Questions()
q = Q.q


# ---------------- Apple FY2022 (PDF): income statement p32, balance sheet p34, cash flows p36
A22 = "APPLE_2022_10K"
q(A22, "metric", "DPO is defined as 365 * (average accounts payable between FY2021 and FY2022) / (FY2022 COGS + change in inventory between FY2021 and FY2022). What is Apple's FY2022 DPO? Round to two decimal places.",
  "97.77", [(34, "Accounts payable $ 64,115 $ 54,763"), (34, "Inventories 4,946 6,580"), (32, "Total cost of sales 223,546 212,981 169,559")],
  "average AP = (64,115 + 54,763) / 2 = 59,439; change in inventory = 4,946 - 6,580 = -1,634; 365 * 59,439 / (223,546 - 1,634) = 97.77")
q(A22, "metric", "Using the cash flow statement, how much cash did Apple return to shareholders in FY2022 through dividends and share repurchases combined? Answer in USD millions.",
  "$104,243 million", [(36, "Payments for dividends and dividend equivalents (14,841) (14,467) (14,081)"), (36, "Repurchases of common stock (89,402) (85,971) (72,358)")],
  "14,841 + 89,402 = 104,243 (the cash flow statement's repurchases, not the $90.2 billion repurchased that MD&A states)")
q(A22, "metric", "By what percentage did Apple's R&D expense grow in FY2022 compared with FY2021? Round to one decimal place.",
  "19.8%", [(32, "Research and development 26,251 21,914 18,752")],
  "(26,251 - 21,914) / 21,914 = 19.79%")
q(A22, "metric", "What is Apple's 3 year average of capex as a % of revenue from FY2020 to FY2022? Capex is the cash paid for property, plant and equipment in the cash flow statement. Round to one decimal place.",
  "2.8%", [(36, "Payments for acquisition of property, plant and equipment (10,708) (11,085) (7,309)"), (32, "Total net sales 394,328 365,817 274,515")],
  "FY2020 7,309 / 274,515 = 2.66%; FY2021 11,085 / 365,817 = 3.03%; FY2022 10,708 / 394,328 = 2.72%; mean = 2.80% (pooled 29,102 / 1,034,660 = 2.81%: 2.8% either way)")
q(A22, "judgement", "Does Apple have an improving operating margin profile as of FY2022? Operating margin is operating income divided by total net sales; use FY2020 to FY2022.",
  "Yes. Operating margin rose from 24.1% in FY2020 to 29.8% in FY2021 and 30.3% in FY2022.",
  [(32, "Operating income 119,437 108,949 66,288"), (32, "Total net sales 394,328 365,817 274,515")],
  "66,288 / 274,515 = 24.15%; 108,949 / 365,817 = 29.78%; 119,437 / 394,328 = 30.29%: up each year")
q(A22, "judgement", "Does Apple have a healthy liquidity profile based on its quick ratio at the end of FY2022? Define the quick ratio as (cash and cash equivalents + current marketable securities + accounts receivable, net) / total current liabilities, and treat 1.0 or more as healthy.",
  "No. The quick ratio was 0.50 at the end of FY2022, below 1.0.",
  [(34, "Cash and cash equivalents $ 23,646 $ 34,940"), (34, "Marketable securities 24,658 27,699"), (34, "Accounts receivable, net 28,184 26,278"), (34, "Total current liabilities 153,982 125,481")],
  "(23,646 + 24,658 + 28,184) / 153,982 = 0.50")
q(A22, "narrative", "What drove Apple's total net sales growth in fiscal 2022?",
  "Higher net sales of iPhone, Services and Mac: total net sales rose 8% or $28.5 billion, while weaker foreign currencies against the U.S. dollar had an unfavorable impact on all Products and Services net sales.",
  [(23, "Total net sales increased 8% or $28.5 billion during 2022 compared to 2021, driven primarily by higher net sales of iPhone, Services and Mac.")])
q(A22, "narrative", "Which of Apple's geographic segments saw net sales decline in FY2022, and why?",
  "Only Japan: its net sales fell 9% to $25,977 million because of the weakness of the yen relative to the U.S. dollar (Americas, Europe, Greater China and Rest of Asia Pacific all grew).",
  [(25, "Japan 25,977 (9) % 28,482 33 % 21,418"), (25, "Japan net sales decreased during 2022 compared to 2021 due to the weakness of the yen relative to the U.S. dollar.")])
q(A22, "lookup", "What were Apple's SG&A expenses in FY2022?", "$25,094 million",
  [(32, "Selling, general and administrative 25,094 21,973 19,916")])

# ---------------- Apple FY2021 (PDF): income statement p32, balance sheet p34, cash flows p36
A21 = "APPLE_2021_10K"
q(A21, "metric", "Net profit margin is defined as net income divided by total net sales. What was Apple's net profit margin in FY2021? Answer as a percentage rounded to one decimal place.",
  "25.9%", [(32, "Net income $ 94,680 $ 57,411 $ 55,256"), (32, "Total net sales 365,817 274,515 260,174")],
  "94,680 / 365,817 = 25.88%")
q(A21, "metric", "Primarily using the balance sheet, what was Apple's total debt at the end of FY2021, defined as commercial paper plus current and non-current term debt? Answer in USD millions.",
  "$124,719 million", [(34, "Commercial paper 6,000 4,996"), (34, "Term debt 9,613 8,773"), (34, "Term debt 109,106 98,667")],
  "6,000 + 9,613 + 109,106 = 124,719")
q(A21, "metric", "DSO is defined as 365 * (average accounts receivable, net between FY2020 and FY2021) / FY2021 total net sales. What was Apple's FY2021 DSO? Round to two decimal places.",
  "21.15", [(34, "Accounts receivable, net 26,278 16,120"), (32, "Total net sales 365,817 274,515 260,174")],
  "average AR = (26,278 + 16,120) / 2 = 21,199; 365 * 21,199 / 365,817 = 21.15")
q(A21, "judgement", "Is Apple a capital-intensive business based on FY2021 data? Support the answer with capex as a % of revenue and net PP&E as a % of total assets.",
  "No. Capex was only 3.0% of revenue ($11,085 million of $365,817 million) and net PP&E was 11.2% of total assets ($39,440 million of $351,002 million).",
  [(36, "Payments for acquisition of property, plant and equipment (11,085) (7,309) (10,495)"), (32, "Total net sales 365,817 274,515 260,174"), (34, "Property, plant and equipment, net 39,440 36,766"), (34, "Total assets $ 351,002 $ 323,888")],
  "11,085 / 365,817 = 3.03%; 39,440 / 351,002 = 11.24%")
q(A21, "judgement", "Did Apple's Services business grow faster than its Products business in FY2021? Compare the year-over-year growth of Services and Products net sales.",
  "No. Products net sales grew 34.7% ($220,747 million to $297,392 million) while Services grew 27.3% ($53,768 million to $68,425 million).",
  [(32, "Products $ 297,392 $ 220,747 $ 213,883"), (32, "Services 68,425 53,768 46,291")],
  "297,392 / 220,747 - 1 = 34.72%; 68,425 / 53,768 - 1 = 27.26%")
q(A21, "narrative", "Why was Apple's effective tax rate lower in FY2021 than in FY2020?",
  "Higher tax benefits from foreign-derived intangible income deductions and share-based compensation and the favorable impact of changes in unrecognized tax benefits, partially offset by a one-time adjustment in 2020 of U.S. foreign tax credits (13.3% vs 14.4%).",
  [(27, "The Company’s effective tax rate for 2021 was lower compared to 2020 due primarily to higher tax benefits from foreign-derived intangible income deductions and share-based compensation and the favorable impact of changes in unrecognized tax benefits")])
q(A21, "narrative", "What drove the year-over-year growth in Apple's R&D expense in 2021?",
  "Increases in headcount-related expenses, R&D-related professional services and infrastructure-related costs (R&D rose 17% to $21,914 million).",
  [(26, "The year-over-year growth in R&D expense in 2021 was driven primarily by increases in headcount-related expenses, R&D-related professional services and infrastructure-related costs.")])
q(A21, "lookup", "How much cash did Apple pay for interest in FY2021?", "$2,687 million",
  [(36, "Cash paid for interest $ 2,687 $ 3,002 $ 3,423")])

# ---------------- Apple FY2024 (HTML): income statement p31, balance sheet p33, cash flows p35
A24 = "aapl-10-k-2024-11-01"
q(A24, "metric", "What percentage of Apple's FY2024 total net sales came from the U.S.? Use the geographic data in the segment note and round to one decimal place.",
  "36.4%", [(49, "U.S. 142,196 138,573 147,859"), (49, "Total net sales 391,035 383,285 394,328")],
  "142,196 / 391,035 = 36.36%")
q(A24, "metric", "Using the cash flow statement, what was Apple's FY2024 free cash flow conversion, defined as (cash generated by operating activities - payments for acquisition of property, plant and equipment) / net income? Round to two decimal places.",
  "1.16", [(35, "Cash generated by operating activities 118,254 110,543 122,151"), (35, "Payments for acquisition of property, plant and equipment (9,447) (10,959) (10,708)"), (35, "Net income 93,736 96,995 99,803")],
  "(118,254 - 9,447) / 93,736 = 108,807 / 93,736 = 1.16")
q(A24, "metric", "Calculate Apple's FY2024 inventory turnover ratio as FY2024 cost of sales divided by the average of inventories at the end of FY2023 and FY2024 (primarily the balance sheet). Round to two decimal places.",
  "30.90", [(31, "Total cost of sales 210,352 214,137 223,546"), (33, "Inventories 7,286 6,331")],
  "average inventory = (7,286 + 6,331) / 2 = 6,808.5; 210,352 / 6,808.5 = 30.90")
q(A24, "judgement", "Does Apple have an improving gross margin profile as of FY2024? Use the total gross margin percentage for FY2022 to FY2024.",
  "Yes. Total gross margin percentage rose from 43.3% in FY2022 to 44.1% in FY2023 and 46.2% in FY2024.",
  [(26, "Total gross margin percentage 46.2 % 44.1 % 43.3 %")],
  "as printed; check: 180,683 / 391,035 = 46.21%, 169,148 / 383,285 = 44.13%, 170,782 / 394,328 = 43.31%")
q(A24, "judgement", "Is Apple a high-growth company as of FY2024? Base the answer on the year-over-year change in total net sales in FY2023 and FY2024.",
  "No. Total net sales fell 2.8% in FY2023 ($394,328 million to $383,285 million) and grew only 2.0% in FY2024 (to $391,035 million).",
  [(31, "Total net sales 391,035 383,285 394,328")],
  "383,285 / 394,328 - 1 = -2.80%; 391,035 / 383,285 - 1 = 2.02%")
q(A24, "narrative", "What are the main legal proceedings Apple describes in Item 3 of its FY2024 10-K?",
  "The European Commission's noncompliance investigations under the Digital Markets Act, the U.S. Department of Justice's civil antitrust lawsuit alleging monopolization of smartphone markets, and the Epic Games lawsuit over its App Store rules.",
  [(20, "On March 25, 2024, the Commission announced that it had opened two formal noncompliance investigations against the Company under the DMA."),
   (20, "the U.S. Department of Justice (the “DOJ”) and a number of state and district attorneys general filed a civil antitrust lawsuit in the U.S. District Court for the District of New Jersey against the Company alleging monopolization or attempted monopolization"),
   (20, "Epic Games, Inc. (“Epic”) filed a lawsuit in the U.S. District Court for the Northern District of California (the “California District Court”) against the Company alleging violations of federal and state antitrust laws")])
q(A24, "narrative", "Why did Apple's Greater China net sales decrease in FY2024?",
  "Lower net sales of iPhone and iPad, and the weakness in the renminbi relative to the U.S. dollar had an unfavorable impact (down 8% to $66,952 million).",
  [(24, "Greater China net sales decreased during 2024 compared to 2023 due primarily to lower net sales of iPhone and iPad. The weakness in the renminbi relative to the U.S. dollar had an unfavorable year-over-year impact on Greater China net sales during 2024.")])
q(A24, "narrative", "What explains the increase in Apple's Products gross margin percentage in FY2024?",
  "Cost savings, partially offset by a different Products mix and the weakness in foreign currencies relative to the U.S. dollar (37.2% vs 36.5%).",
  [(26, "Products gross margin and Products gross margin percentage increased during 2024 compared to 2023 due to cost savings, partially offset by a different Products mix and the weakness in foreign currencies relative to the U.S. dollar.")])
q(A24, "lookup", "How much SBC (share-based compensation expense) did Apple record in FY2024?", "$11,688 million",
  [(35, "Share-based compensation expense 11,688 10,833 9,038")])

# ---------------- Microsoft FY2022 (PDF): income statement p57, balance sheet p59, cash flows p60
M22 = "MICROSOFT_2022_10K"
q(M22, "metric", "By what percentage did Microsoft's diluted EPS grow in FY2022 compared with FY2021? Round to one decimal place.",
  "19.9%", [(57, "Diluted $ 9.65 $ 8.05 $ 5.76")],
  "9.65 / 8.05 - 1 = 19.88%")
q(M22, "metric", "Based on the balance sheet, what was Microsoft's total debt at June 30, 2022, defined as the current portion of long-term debt plus long-term debt? Answer in USD millions.",
  "$49,781 million", [(59, "Current portion of long-term debt 2,749 8,072"), (59, "Long-term debt 47,032 50,074")],
  "2,749 + 47,032 = 49,781")
q(M22, "metric", "What is Microsoft's FY2022 unadjusted EBITDA less capex? Define unadjusted EBITDA as operating income plus depreciation and amortization (the cash flow statement's 'depreciation, amortization, and other'), and capex as additions to property and equipment. Answer in USD millions.",
  "$73,957 million", [(57, "Operating income 83,383 69,916 52,959"), (60, "Depreciation, amortization, and other 14,460 11,686 12,796"), (60, "Additions to property and equipment (23,886) (20,622) (15,441)")],
  "EBITDA = 83,383 + 14,460 = 97,843; 97,843 - 23,886 = 73,957")
q(M22, "metric", "Dividend payout ratio is defined as cash dividends paid divided by net income. What was Microsoft's FY2022 dividend payout ratio, using the cash flow statement? Answer as a percentage rounded to one decimal place.",
  "24.9%", [(60, "Common stock cash dividends paid (18,135) (16,521) (15,137)"), (60, "Net income $ 72,738 $ 61,271 $ 44,281")],
  "18,135 / 72,738 = 24.93%")
q(M22, "judgement", "Does Microsoft have an improving operating margin profile as of FY2022? If operating margin is not a useful metric for a company like this, state that and explain why.",
  "Yes. Operating margin is a useful metric here and it improved from 37.0% in FY2020 to 41.6% in FY2021 and 42.1% in FY2022.",
  [(57, "Operating income 83,383 69,916 52,959"), (57, "Total revenue 198,270 168,088 143,015")],
  "52,959 / 143,015 = 37.03%; 69,916 / 168,088 = 41.59%; 83,383 / 198,270 = 42.06%")
q(M22, "judgement", "Does Microsoft have a healthy liquidity profile based on its quick ratio at the end of FY2022? Define the quick ratio as (cash and cash equivalents + short-term investments + accounts receivable, net) / total current liabilities.",
  "Yes. The quick ratio was 1.57 at June 30, 2022, well above 1.0.",
  [(59, "Cash and cash equivalents $ 13,931 $ 14,224"), (59, "Short-term investments 90,826 116,110"), (59, "Accounts receivable, net of allowance for doubtful accounts of $633 and $751 44,261 38,043"), (59, "Total current liabilities 95,082 88,657")],
  "(13,931 + 90,826 + 44,261) / 95,082 = 149,018 / 95,082 = 1.57")
q(M22, "narrative", "What drove LinkedIn's revenue growth at Microsoft in FY2022?",
  "A strong job market in its Talent Solutions business and advertising demand in its Marketing Solutions business (LinkedIn revenue up $3.5 billion or 34%).",
  [(44, "LinkedIn revenue increased $3.5 billion or 34% driven by a strong job market in our Talent Solutions business and advertising demand in our Marketing Solutions business.")])
q(M22, "narrative", "What drove the growth of Microsoft's Azure and other cloud services revenue in FY2022?",
  "Growth in its consumption-based services: Azure and other cloud services revenue grew 45%.",
  [(45, "Azure and other cloud services revenue grew 45% driven by growth in our consumption-based services.")])
q(M22, "narrative", "Why did Microsoft's search and news advertising revenue excluding TAC increase in FY2022?",
  "Higher revenue per search and search volume (up 27% excluding traffic acquisition costs).",
  [(45, "Search and news advertising revenue excluding traffic acquisition costs increased 27% driven by higher revenue per search and search volume.")])
q(M22, "lookup", "How much did Microsoft spend on share buybacks in FY2022 according to the cash flow statement?", "$32,696 million",
  [(60, "Common stock repurchased (32,696) (27,385) (22,968)")])

# ---------------- Amazon FY2022 (PDF): cash flows p36, income statement p37, balance sheet p39 (columns oldest first)
Z22 = "AMAZON_2022_10K"
q(Z22, "metric", "DPO is defined as 365 * (average accounts payable between FY2021 and FY2022) / (FY2022 COGS + change in inventory between FY2021 and FY2022). What is Amazon's FY2022 DPO? Round to two decimal places.",
  "99.39", [(39, "Accounts payable $ 78,664 $ 79,600"), (39, "Inventories 32,640 34,405"), (37, "Cost of sales 233,307 272,344 288,831")],
  "average AP = (78,664 + 79,600) / 2 = 79,132; change in inventory = 34,405 - 32,640 = 1,765; 365 * 79,132 / (288,831 + 1,765) = 99.39")
q(Z22, "metric", "Using the cash flow statement, what was Amazon's 2022 free cash flow less principal repayments of finance leases and financing obligations, defined as operating cash flow - purchases of property and equipment + proceeds from property and equipment sales and incentives - principal repayments of finance leases - principal repayments of financing obligations? Answer in USD millions.",
  "-$19,758 million", [(36, "Net cash provided by (used in) operating activities 66,064 46,327 46,752"), (36, "Purchases of property and equipment (40,140) (61,053) (63,645)"), (36, "Proceeds from property and equipment sales and incentives 5,096 5,657 5,324"), (36, "Principal repayments of finance leases (10,642) (11,163) (7,941)"), (36, "Principal repayments of financing obligations (53) (162) (248)")],
  "46,752 - 63,645 + 5,324 - 7,941 - 248 = -19,758 (Amazon's own reconciliation on page 28 prints $(19,758))")
q(Z22, "metric", "What was Amazon's technology and content expense as a % of total net sales in 2022? Round to one decimal place.",
  "14.2%", [(37, "Technology and content 42,740 56,052 73,213"), (37, "Total net sales 386,064 469,822 513,983")],
  "73,213 / 513,983 = 14.24%")
q(Z22, "judgement", "Does Amazon have an improving gross margin profile as of FY2022? If gross margin is not a useful metric for a company like this, state that and explain why, using what the company itself says.",
  "Gross margin is not a useful metric for Amazon: the company says operating income is a more meaningful measure than gross profit and gross margin due to the diversity of its product categories and services. (Mechanically, net sales less cost of sales rose from 42.0% to 43.8% of net sales, while operating margin fell from 5.3% to 2.4%.)",
  [(24, "We believe that operating income is a more meaningful measure than gross profit and gross margin due to the diversity of our product categories and services."), (37, "Cost of sales 233,307 272,344 288,831"), (37, "Total net sales 386,064 469,822 513,983"), (37, "Operating income 22,899 24,879 12,248")],
  "(469,822 - 272,344) / 469,822 = 42.03%; (513,983 - 288,831) / 513,983 = 43.81%; operating margin 24,879 / 469,822 = 5.30%, 12,248 / 513,983 = 2.38%")
q(Z22, "judgement", "Is Amazon's operating margin improving as of FY2022? Use operating income over total net sales for 2020 to 2022.",
  "No. Operating margin declined from 5.9% in 2020 to 5.3% in 2021 and 2.4% in 2022.",
  [(37, "Operating income 22,899 24,879 12,248"), (37, "Total net sales 386,064 469,822 513,983")],
  "22,899 / 386,064 = 5.93%; 24,879 / 469,822 = 5.30%; 12,248 / 513,983 = 2.38%")
q(Z22, "judgement", "Is Amazon a capital-intensive business based on FY2022 data? Support the answer with capex as a % of revenue and net property and equipment as a % of total assets.",
  "Yes. Capex (purchases of property and equipment) was 12.4% of net sales ($63,645 million of $513,983 million) and net property and equipment was 40.4% of total assets ($186,715 million of $462,675 million).",
  [(36, "Purchases of property and equipment (40,140) (61,053) (63,645)"), (37, "Total net sales 386,064 469,822 513,983"), (39, "Property and equipment, net 160,281 186,715"), (39, "Total assets $ 420,549 $ 462,675")],
  "63,645 / 513,983 = 12.38%; 186,715 / 462,675 = 40.36%")
q(Z22, "narrative", "Why did Amazon's International segment sales decline in 2022?",
  "Primarily changes in foreign currency exchange rates, which reduced International net sales by $15.0 billion, partially offset by increased unit sales (including by third-party sellers), advertising sales and subscription services; sales fell 8%.",
  [(24, "International sales decreased 8% in 2022, compared to the prior year, primarily due to the impact of changes in foreign currency exchange rates, partially offset by increased unit sales, including sales by third-party sellers, advertising sales, and subscription services.")])
q(Z22, "narrative", "What was the main driver of Amazon's other income (expense), net of $(16.8) billion in 2022?",
  "A $12.7 billion marketable equity securities valuation loss on its equity investment in Rivian (the line also reflects equity securities valuations, equity warrant valuations and foreign currency).",
  [(27, "Included in other income (expense), net in 2021 and 2022 is a marketable equity securities valuation gain (loss) of $11.8 billion and $(12.7) billion from our equity investment in Rivian.")])
q(Z22, "lookup", "How much stock-based compensation did Amazon record in 2022?", "$19,621 million",
  [(36, "Stock-based compensation 9,208 12,757 19,621")])

# ---------------- Amazon FY2024 (HTML): cash flows p36, income statement p37, balance sheet p39 (columns oldest first)
Z24 = "amzn-10-k-2025-02-07"
q(Z24, "metric", "What was the operating margin of Amazon's AWS segment in 2024, i.e. AWS operating income divided by AWS net sales? Round to one decimal place.",
  "37.0%", [(24, "AWS 90,757 107,556"), (27, "AWS 24,631 39,834")],
  "39,834 / 107,556 = 37.04%")
q(Z24, "metric", "Net debt is defined as long-term debt minus cash and cash equivalents and marketable securities, all from the balance sheet. What was Amazon's net debt at December 31, 2024? Answer in USD millions.",
  "-$48,579 million", [(39, "Long-term debt 58,314 52,623"), (39, "Cash and cash equivalents 73,387 78,779"), (39, "Marketable securities 13,393 22,423")],
  "52,623 - 78,779 - 22,423 = -48,579 (a net cash position)")
q(Z24, "metric", "By what percentage did Amazon's net income grow in 2024 compared with 2023? Round to one decimal place.",
  "94.7%", [(37, "Net income (loss) (2,722) 30,425 59,248")],
  "(59,248 - 30,425) / 30,425 = 94.73%")
q(Z24, "metric", "What is Amazon's 3 year average of capex as a % of revenue for 2022 to 2024? Take capex as purchases of property and equipment in the cash flow statement. Round to one decimal place.",
  "11.5%", [(36, "Purchases of property and equipment (63,645) (52,729) (82,999)"), (37, "Total net sales 513,983 574,785 637,959")],
  "2022 63,645 / 513,983 = 12.38%; 2023 52,729 / 574,785 = 9.17%; 2024 82,999 / 637,959 = 13.01%; mean = 11.52% (pooled 199,373 / 1,726,727 = 11.55%: 11.5% either way)")
q(Z24, "judgement", "Does Amazon have an improving operating margin profile as of FY2024? Use operating income over total net sales for 2022 to 2024.",
  "Yes. Operating margin rose from 2.4% in 2022 to 6.4% in 2023 and 10.8% in 2024.",
  [(37, "Operating income 12,248 36,852 68,593"), (37, "Total net sales 513,983 574,785 637,959")],
  "12,248 / 513,983 = 2.38%; 36,852 / 574,785 = 6.41%; 68,593 / 637,959 = 10.75%")
q(Z24, "judgement", "Did Amazon's International segment become profitable in 2024?",
  "Yes. International had operating income of $3,792 million in 2024 after an operating loss of $2,656 million in 2023.",
  [(27, "International (2,656) 3,792")])
q(Z24, "narrative", "What drove the increase in AWS operating income in 2024?",
  "Increased sales, decreased payroll and related expenses, and lower depreciation and amortization from the change in the estimated useful lives of its servers, partially offset by spending on technology infrastructure to support AWS growth.",
  [(27, "The increase in AWS operating income in 2024, compared to the prior year, is primarily due to increased sales, decreased payroll and related expenses, and a reduction in depreciation and amortization expense from our change in the estimated useful lives of our servers")])
q(Z24, "narrative", "Why did Amazon's sales and marketing costs decrease in 2024?",
  "Primarily decreased payroll and related expenses for personnel engaged in marketing and selling activities, partially offset by increased advertising expenses.",
  [(26, "The decrease in sales and marketing costs in 2024, compared to the prior year, is primarily due to decreased payroll and related expenses for personnel engaged in marketing and selling activities, partially offset by increased advertising expenses.")])
q(Z24, "lookup", "What was Amazon's interest income in 2024?", "$4,677 million",
  [(37, "Interest income 989 2,949 4,677")])

# ---------------- NVIDIA FY2025 (HTML): income statement p52, balance sheet p54, cash flows p56
N25 = "nvda-10-k-2025-02-26"
q(N25, "metric", "DIO is defined as 365 * (average inventory between FY2024 and FY2025 year-ends) / FY2025 cost of revenue. What was NVIDIA's FY2025 DIO? Round to one decimal place.",
  "85.9", [(54, "Inventories 10,080 5,282"), (52, "Cost of revenue 32,639 16,621 11,618")],
  "average inventory = (10,080 + 5,282) / 2 = 7,681; 365 * 7,681 / 32,639 = 85.90")
q(N25, "metric", "Using the cash flow statement, how much did NVIDIA return to shareholders in FY2025 through share repurchases and dividends? Answer in USD billions, rounded to one decimal place.",
  "$34.5 billion", [(56, "Payments related to repurchases of common stock (33,706) (9,533) (10,039)"), (56, "Dividends paid (834) (395) (398)")],
  "33,706 + 834 = 34,540 million = $34.5 billion")
q(N25, "metric", "ROA is defined as net income divided by average total assets (FY2024 and FY2025 year-ends). What was NVIDIA's FY2025 ROA? Answer as a percentage rounded to one decimal place.",
  "82.2%", [(52, "Net income 72,880 29,760 4,368"), (54, "Total assets 111,601 65,728")],
  "average total assets = (111,601 + 65,728) / 2 = 88,664.5; 72,880 / 88,664.5 = 82.20%")
q(N25, "metric", "What was NVIDIA's operating cash flow ratio at the end of FY2025, defined as net cash provided by operating activities divided by total current liabilities? Round to two decimal places.",
  "3.55", [(56, "Net cash provided by operating activities 64,089 28,090 5,641"), (54, "Total current liabilities 18,047 10,631")],
  "64,089 / 18,047 = 3.55")
q(N25, "judgement", "Does NVIDIA have significant customer concentration as of FY2025?",
  "Yes. Three direct customers (A, B and C) represented 12%, 11% and 11% of total revenue in FY2025 (34% together), all mainly in Compute & Networking, and one indirect customer is estimated at 10% or more of revenue.",
  [(41, "Direct Customer A 12 % *"), (41, "Direct Customer B 11 % 13 %"), (41, "Direct Customer C 11 % *"), (42, "is estimated to represent 10% or more of total revenue")],
  "12% + 11% + 11% = 34%")
q(N25, "judgement", "Is NVIDIA a high-growth company as of FY2025? Base the answer on the year-over-year change in revenue in FY2024 and FY2025.",
  "Yes. Revenue grew 126% in FY2024 ($26,974 million to $60,922 million) and 114% in FY2025 (to $130,497 million).",
  [(52, "Revenue 130,497 60,922 26,974")],
  "60,922 / 26,974 - 1 = 125.85%; 130,497 / 60,922 - 1 = 114.20%")
q(N25, "narrative", "What drove the increase in NVIDIA's research and development expenses in fiscal 2025?",
  "A 32% increase in compensation and benefits (including stock-based compensation) from employee growth and compensation increases, a 100% increase in compute and infrastructure, and a 234% increase in engineering development costs for new product introductions (R&D up 49%).",
  [(42, "The increases in research and development expenses for fiscal year 2025 were driven by a 32% increase in compensation and benefits, including stock-based compensation, reflecting employee growth and compensation increases, a 100% increase in compute and infrastructure, and a 234% increase in engineering development costs for new product introductions.")])
q(N25, "narrative", "Why did NVIDIA's Graphics segment operating income decrease in fiscal 2025 even though its revenue grew?",
  "A 44% increase in segment operating expenses, partially offset by revenue growth (operating income fell 13% to $5,085 million).",
  [(41, "The year over year decrease in Graphics segment operating income was driven by an increase of 44% in segment operating expenses, partially offset by growth in revenue.")])
q(N25, "narrative", "What drove the growth of NVIDIA's Data Center computing revenue in fiscal 2025?",
  "Demand for its Hopper computing platform used for large language models, recommendation engines and generative AI applications (Data Center computing revenue grew 162%).",
  [(41, "Revenue from Data Center computing grew 162% driven primarily by demand for our Hopper computing platform used for large language models, recommendation engines, and generative AI applications.")])
q(N25, "narrative", "How have U.S. export controls affected NVIDIA's business, according to its FY2025 10-K?",
  "U.S. licensing requirements since 2022 restrict exports of its data center products (A100, H100 and later Blackwell systems) to China and other countries, and it has not received licenses to ship them to China; NVIDIA says the export controls have harmed its competitive position and further changes, such as the January 2025 AI Diffusion rule with a worldwide licensing requirement, may harm it further.",
  [(10, "To date, we have not received licenses to ship these restricted products to China."),
   (10, "Our competitive position has been harmed by the existing export controls, and our competitive position and future results may be further harmed, over the long term, if there are further changes in the USG’s export controls.")])
q(N25, "lookup", "What were NVIDIA's SG&A expenses in fiscal 2025?", "$3,491 million",
  [(52, "Sales, general and administrative 3,491 2,654 2,440")])

# ---------------- Boeing FY2021 (PDF): income statement p60, balance sheet p62, cash flows p63
B21 = "BOEING_2021_10K"
q(B21, "metric", "Using the balance sheet, what was Boeing's total debt at December 31, 2021, defined as short-term debt and current portion of long-term debt plus long-term debt? Answer in USD millions.",
  "$58,102 million", [(62, "Short-term debt and current portion of long-term debt 1,296 1,693"), (62, "Long-term debt 56,806 61,890")],
  "1,296 + 56,806 = 58,102")
q(B21, "metric", "What was Boeing's 2021 free cash flow, defined as net cash from operating activities minus capex (payments to acquire property, plant and equipment)? Answer in USD millions.",
  "-$4,396 million", [(63, "Net cash used by operating activities (3,416) (18,410) (2,446)"), (63, "Payments to acquire property, plant and equipment (980) (1,303) (1,834)")],
  "-3,416 - 980 = -4,396")
q(B21, "metric", "What share of Boeing's total backlog at the end of 2021 was in Commercial Airplanes? Answer as a percentage rounded to one decimal place.",
  "78.6%", [(33, "Commercial Airplanes $296,882 $281,588"), (33, "Total Backlog $377,499 $363,404")],
  "296,882 / 377,499 = 78.64%")
q(B21, "metric", "What was Boeing's R&D expense as a % of total revenues in 2021? Round to one decimal place.",
  "3.6%", [(60, "Research and development expense, net (2,249) (2,476) (3,219)"), (60, "Total revenues 62,286 58,158 76,559")],
  "2,249 / 62,286 = 3.61%")
q(B21, "judgement", "Does Boeing have a healthy liquidity profile based on its quick ratio at the end of 2021? Define the quick ratio as (cash and cash equivalents + short-term and other investments + accounts receivable, net) / total current liabilities. If the quick ratio is not the right measure, explain why.",
  "No. The quick ratio was 0.23: most of Boeing's current assets are inventories ($78,823 million of $108,666 million), so the current ratio of 1.33 overstates its liquidity.",
  [(62, "Cash and cash equivalents $8,052 $7,752"), (62, "Short-term and other investments 8,192 17,838"), (62, "Accounts receivable, net 2,641 1,955"), (62, "Total current liabilities 81,992 87,280"), (62, "Inventories 78,823 81,715"), (62, "Total current assets 108,666 121,642")],
  "(8,052 + 8,192 + 2,641) / 81,992 = 18,885 / 81,992 = 0.23; 108,666 / 81,992 = 1.33")
q(B21, "judgement", "Did Boeing have positive shareholders' equity at the end of 2021? Is debt-to-equity a meaningful leverage metric for Boeing at that date?",
  "No. Boeing had a total shareholders' deficit of $14,999 million (total equity of -$14,846 million), so debt-to-equity is not meaningful: with negative equity the ratio is negative and cannot be read as leverage.",
  [(62, "Total shareholders’ deficit (14,999) (18,316)"), (62, "Total equity (14,846) (18,075)")])
q(B21, "judgement", "Does Boeing have a significant customer concentration in the U.S. government as of 2021?",
  "Yes. 49% of Boeing's 2021 revenues were earned under U.S. government contracts (including foreign military sales through the U.S. government).",
  [(17, "In 2021, 49% of our revenues were earned pursuant to U.S. government contracts, which include FMS through the U.S. government.")])
q(B21, "narrative", "What are the main legal matters related to the 737 MAX that Boeing discloses in its 2021 10-K?",
  "Multiple legal actions filed over the Lion Air Flight 610 and Ethiopian Airlines Flight 302 accidents (including a shareholder derivative lawsuit with a proposed settlement), ongoing government and regulatory investigations including one by the SEC, and the January 6, 2021 Deferred Prosecution Agreement with the U.S. Department of Justice (one count of conspiracy to defraud the United States; payments totaling $2.51 billion).",
  [(121, "Multiple legal actions have been filed against us as a result of the October 29, 2018 accident of Lion Air Flight 610 and the March 10, 2019 accident of Ethiopian Airlines Flight 302."),
   (121, "On January 6, 2021, we entered into a Deferred Prosecution Agreement with the U.S. Department of Justice")])
q(B21, "narrative", "What drove the increase in Boeing's revenues in 2021?",
  "Higher revenues at BCA, BDS and BGS (up $4,128 million): BCA mainly from higher 737 MAX deliveries after recertification and return to service and the absence of 2020's 737 MAX customer considerations, partially offset by lower 787 deliveries; BDS from the KC-46A Tanker program and lower charges; BGS from higher commercial and government services volume.",
  [(28, "Revenues increased by $4,128 million in 2021 compared with 2020 driven by higher revenues at BCA, BDS and BGS. BCA revenues increased by $3,331 million primarily driven by higher 737 MAX deliveries due to recertification and return to service in most jurisdictions")])
q(B21, "narrative", "What production risk affected Boeing's 787 program in 2021?",
  "Production quality issues, including in its supply chain, lowered 787 deliveries and led to a pause in 787 deliveries since May 2021 while Boeing performs inspections and rework on undelivered aircraft.",
  [(13, "we experienced production quality issues, including in our supply chain, which have contributed to lower 787 deliveries, including a pause in 787 deliveries since May 2021.")])
q(B21, "lookup", "What was Boeing's total backlog at the end of 2021?", "$377,499 million",
  [(33, "Total Backlog $377,499 $363,404")])


# ---------------------------------------------------------------- checks, split, output
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _arithmetic(part: str) -> str | None:
    """The arithmetic of one side of '=' with its label dropped ("FY2020 7,309 / 274,515"), else None."""
    expr = re.sub(r"^[^\d(\-]*?:\s*", "", part.strip())
    expr = re.sub(r"^(?:FY)?\d{4}\s+(?=[\d(])", "", expr)
    expr = re.sub(r"^[A-Za-z][A-Za-z ]*?\s+(?=[\d(\-])", "", expr)    # "operating margin 24,879 / ..."
    return expr if re.fullmatch(r"[\d,.\s()+\-*/]+", expr) and re.search(r"[+\-*/]", expr.strip()[1:]) else None


def _evaluate(expr: str) -> float:
    return float(eval(expr.replace(",", "")))     # digits, dots, spaces, parentheses and operators only


def check_arithmetic(just: str) -> tuple[int, list[str]]:
    """(clauses checked, problems): every 'arithmetic = value' step of a justification is re-evaluated
    ("(26,251 - 21,914) / 21,914 = 19.79%"); the value must match to the decimals it shows (x100 when
    it is a percent). A step whose next side is arithmetic too must give the same value."""
    checked, problems = 0, []
    for clause in re.split(r";|,\s|:\s", just):
        parts = clause.split("=")
        for left, right in zip(parts, parts[1:], strict=False):
            expr = _arithmetic(left)
            if expr is None:
                continue
            value = _evaluate(expr)
            right_expr = _arithmetic(right)
            if right_expr is not None:
                ok = abs(_evaluate(right_expr) - value) < 1e-6 * max(1.0, abs(value))
                stated = right.strip()
            else:
                m = _NUM.match(right.strip().lstrip("$"))
                if not m:
                    continue
                stated = m.group()
                if right.strip().lstrip("$")[m.end():m.end() + 1] == "%":
                    value *= 100
                decimals = len(stated.split(".")[1]) if "." in stated else 0
                ok = abs(round(value, decimals) - float(stated.replace(",", ""))) <= 10 ** -decimals / 2 + 1e-9
            checked += 1
            if not ok:
                problems.append(f"{expr} = {value:.4f}, stated {stated}")
    return checked, problems


def split_by_category(rows: list[dict]) -> dict[str, str]:
    """financebench_id -> dev | heldout: each category shuffled with SEED, alternately dealt; a
    category of odd size gives its extra question to dev and heldout in turn (categories in name order)."""
    rng = random.Random(SEED)
    by_cat = defaultdict(list)
    for r in rows:
        by_cat[r["question_category"]].append(r["financebench_id"])
    out, extra_to = {}, "dev"
    for cat in sorted(by_cat):
        ids = sorted(by_cat[cat])
        rng.shuffle(ids)
        half = len(ids) // 2
        n_dev = half + (len(ids) % 2 if extra_to == "dev" else 0)
        if len(ids) % 2:
            extra_to = "heldout" if extra_to == "dev" else "dev"
        for i, fid in enumerate(ids):
            out[fid] = "dev" if i < n_dev else "heldout"
    return out


def records() -> list[dict]:
    """The questions as FinanceBench records, with their split (no filing is parsed here)."""
    rows = [record(i, entry, FB_TYPE) for i, entry in enumerate(Q, FIRST_ID)]
    split = split_by_category(rows)
    for r in rows:
        r["split"] = split[r["financebench_id"]]
    return rows


def main() -> None:
    rows = records()
    problems = evidence_not_on_page(rows)
    for r in rows:
        n_checked, wrong = check_arithmetic(r.get("justification", ""))
        problems += [f"ARITHMETIC {r['financebench_id']} {problem}" for problem in wrong]
        if r["question_category"] == "metric" and not n_checked:
            problems.append(f"UNCHECKED {r['financebench_id']} a metric without an arithmetic step in its justification")
    for problem in problems:
        print(problem)
    if problems:
        raise SystemExit(f"{len(problems)} problem(s): nothing written")
    for name, path in OUT.items():
        write_jsonl(path, [r for r in rows if r["split"] == name])
    write_evidence_pages(PAGES_OUT, rows)
    print(len(rows), Counter(r["question_category"] for r in rows), Counter(r["doc_name"] for r in rows))
    print(Counter((r["split"], r["question_category"]) for r in rows))


if __name__ == "__main__":
    main()
