"""How analyst_questions_heldout6_outside.jsonl and analyst_questions_heldout6_narrative.jsonl were written
(README.md here, "Seventh set").

THIS FILE HOLDS HELD-OUT QUESTIONS: whoever builds, tunes or debugs an answerer, a retriever, a router, a
vocabulary or a scorer must not read it (nor the two JSONL files nor evidence_pages_heldout6.json).

Four 10-Ks from /work/shared/corpus/robustness2/ that no earlier question set used (the companies appear elsewhere
in other years): eBay FY2015 and FY2017 (calendar years; PayPal and Enterprise are discontinued operations from
2015 on, so every eBay question names continuing operations or a line that is continuing only), Apple FY2015 (52
weeks ended September 26, 2015) and Oracle FY2015 (ended May 31, 2015). Every operand was read by hand on its page
(`page` = the project's 1-based page, i.e. the PDF's physical page, as `core.ingest.parse.parse_filing` numbers it)
and every derived figure computed by hand; this script only checks what was written, with the fourth set's checks
(build_analyst_questions_heldout3.py, imported; its questions are not read):
- every "arithmetic = value" step of `checked` is right and a metric/lookup answer is one figure equal to the last
  step to the decimals it shows (`check_records`);
- every operand's row label and printed figure are on its page in the project's parser text (a row label the parser
  wrapped onto the line before its figures counts) and the figure is on the same physical page of pypdfium2's own
  text (`--verify`; needs the corpus).
The narrative questions (NARRATIVE, FinanceBench format, split "heldout6") restate the causes, entities and figures
the filing states (MD&A, notes' legal proceedings); every evidence text is a verbatim snippet (whitespace aside) of
its page as parse_filing prints it. Writing them checks every snippet on its page and writes the evidence pages'
text to evidence_pages_heldout6.json, so the fast tests run without the corpus (needs the corpus or the cache).

    PYTHONPATH=$PWD python finrag_pipeline_tests/data/external/build_analyst_questions_heldout6.py [--verify]
"""
from __future__ import annotations

import functools
import importlib.util
import json
import pickle
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "analyst_questions_heldout6_outside.jsonl"
NARRATIVE_OUT = HERE / "analyst_questions_heldout6_narrative.jsonl"
PAGES_OUT = HERE / "evidence_pages_heldout6.json"
SPLIT = "heldout6"
COMPANY = {"EBAY": "eBay", "APPLE": "Apple", "ORACLE": "Oracle"}
CORPUS = Path("/work/shared/corpus")
CACHE = Path("/tmp/q6_pages")        # parsed filings ({filing_id, n_pages, pages}), pickled once per filing

QUESTIONS: list[dict] = []


def q(filing: str, kind: str, question: str, answer: str, steps: str, sources: list[tuple[int, str, str, str]]):
    """sources: (page, row label as printed, figure as printed, period) for every operand."""
    tag = Path(filing).stem.split("_")[0]
    where = "; ".join(f"{tag} p.{page} {label} {figure} ({period})" for page, label, figure, period in sources)
    QUESTIONS.append({"id": f"h6_{len(QUESTIONS) + 1:02d}", "filing": filing, "kind": kind, "question": question,
                      "answer": answer, "checked": f"{steps} | {where}", "_sources": sources})


# ---------------- eBay FY2015 (calendar year; USD millions; continuing operations): balance sheet p.58,
# income statement p.59, cash flows p.62
EBAY15 = "robustness2/EBAY_2015_10K.pdf"
q(EBAY15, "metric",
  "What is eBay's FY2015 operating margin from continuing operations? Define operating margin as income from "
  "operations divided by net revenues, both as shown in the income statement (PayPal and Enterprise are reported as "
  "discontinued operations and excluded). Answer as a percentage rounded to two decimal places.",
  "25.57%", "2,197 / 8,592 = 25.57%",
  [(59, "Income from operations", "2,197", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "Using the cash flow statement, what was eBay's FY2015 free cash flow from continuing operations, defined as net "
  "cash provided by continuing operating activities less purchases of property and equipment? Answer in USD "
  "millions.",
  "$2,209 million", "2,877 - 668 = 2,209",
  [(62, "Net cash provided by continuing operating activities", "2,877", "FY2015"),
   (62, "Purchases of property and equipment", "668", "FY2015")])
q(EBAY15, "metric",
  "What share of its FY2015 net revenues did eBay spend on product development (its R&D line)? Use the income "
  "statement for continuing operations and answer as a percentage with one decimal.",
  "10.7%", "923 / 8,592 = 10.7%",
  [(59, "Product development", "923", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "What is the 2 year average of capex as a % of revenue for eBay over FY2014 and FY2015? Capex is purchases of "
  "property and equipment from the cash flow statement and revenue is net revenues from the income statement, both "
  "for continuing operations. Round to two decimal places.",
  "7.43%", "FY2014 622 / 8,790 = 7.08%; FY2015 668 / 8,592 = 7.77%; (622 / 8,790 + 668 / 8,592) / 2 = 7.43%",
  [(62, "Purchases of property and equipment", "622", "FY2014"), (59, "Net revenues", "8,790", "FY2014"),
   (62, "Purchases of property and equipment", "668", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "Based on eBay's FY2015 income statement, what was its gross margin, i.e. gross profit as a percentage of net "
  "revenues, for continuing operations? Round to one decimal place.",
  "79.4%", "6,821 / 8,592 = 79.4%",
  [(59, "Gross profit", "6,821", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "judgement",
  "Does eBay have a healthy liquidity profile at the end of FY2015 based on its quick ratio? Define the quick ratio "
  "as (cash and cash equivalents + short-term investments + accounts receivable, net) / total current liabilities, "
  "using the balance sheet.",
  "Yes. At December 31, 2015 eBay's quick ratio was 2.98: cash and cash equivalents, short-term investments and "
  "receivables of $6,750 million against total current liabilities of $2,263 million.",
  "1,832 + 4,299 + 619 = 6,750; 6,750 / 2,263 = 2.98",
  [(58, "Cash and cash equivalents", "1,832", "2015-12-31"), (58, "Short-term investments", "4,299", "2015-12-31"),
   (58, "Accounts receivable, net", "619", "2015-12-31"), (58, "Total current liabilities", "2,263", "2015-12-31")])
q(EBAY15, "judgement",
  "Is eBay a high-growth company based on the growth of its net revenues from continuing operations in FY2014 and "
  "FY2015?",
  "No. Net revenues from continuing operations fell 2.3% in FY2015, from $8,790 million to $8,592 million, after "
  "growing 6.5% in FY2014 (from $8,257 million).",
  "(8,592 - 8,790) / 8,790 = -2.25%; (8,790 - 8,257) / 8,257 = 6.46%",
  [(59, "Net revenues", "8,592", "FY2015"), (59, "Net revenues", "8,790", "FY2014"),
   (59, "Net revenues", "8,257", "FY2013")])
q(EBAY15, "lookup",
  "What was eBay's year-end FY2015 balance of cash and cash equivalents, as reported on its balance sheet? Answer "
  "in USD millions.",
  "$1,832 million", "1,832 from the balance sheet (no arithmetic)",
  [(58, "Cash and cash equivalents", "1,832", "2015-12-31")])


# ---------------- eBay FY2017 (calendar year; USD millions): balance sheet p.62, income statement p.63,
# cash flows p.66, MD&A interest and other, net table p.44
EBAY17 = "robustness2/EBAY_2017_10K.pdf"
q(EBAY17, "metric",
  "What was eBay's effective tax rate on continuing operations in FY2017? Define it as the income tax provision "
  "divided by income from continuing operations before income taxes, both from the income statement. Express it as "
  "a percentage with one decimal.",
  "144.5%", "3,288 / 2,276 = 144.5%",
  [(63, "Income tax benefit (provision)", "3,288", "FY2017"),
   (63, "Income from continuing operations before income taxes", "2,276", "FY2017")])
q(EBAY17, "metric",
  "What is eBay's FY2017 days sales outstanding (DSO)? DSO is defined as 365 * (average accounts receivable, net "
  "between FY2016 and FY2017) / FY2017 net revenues. Use the balance sheet and the income statement and round to "
  "two decimal places.",
  "24.55", "(695 + 592) / 2 = 643.5; 365 * 643.5 / 9,567 = 24.55",
  [(62, "Accounts receivable, net", "695", "2017-12-31"), (62, "Accounts receivable, net", "592", "2016-12-31"),
   (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "metric",
  "What was eBay's net working capital at the end of FY2017, defined as total current assets minus total current "
  "liabilities? Answer in USD millions using the balance sheet.",
  "$4,204 million", "7,743 - 3,539 = 4,204",
  [(62, "Total current assets", "7,743", "2017-12-31"), (62, "Total current liabilities", "3,539", "2017-12-31")])
q(EBAY17, "metric",
  "What is eBay's FY2017 unadjusted EBITDA margin? Define unadjusted EBITDA as income from operations (income "
  "statement) plus depreciation and amortization (cash flow statement), divided by net revenues. Give a percentage "
  "rounded to one decimal.",
  "30.7%", "2,265 + 676 = 2,941; 2,941 / 9,567 = 30.7%",
  [(63, "Income from operations", "2,265", "FY2017"), (66, "Depreciation and amortization", "676", "FY2017"),
   (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "metric",
  "By what percentage did eBay's net revenues grow in FY2017 compared with FY2016? Round to two decimal places.",
  "6.55%", "(9,567 - 8,979) / 8,979 = 6.55%",
  [(63, "Net revenues", "9,567", "FY2017"), (63, "Net revenues", "8,979", "FY2016")])
q(EBAY17, "judgement",
  "Does eBay have an improving operating margin profile as of FY2017? Take operating margin as income from "
  "operations divided by net revenues and compare FY2015, FY2016 and FY2017.",
  "No. Operating margin edged up from 25.6% in FY2015 to 25.9% in FY2016 but fell to 23.7% in FY2017 (income from "
  "operations of $2,265 million on net revenues of $9,567 million).",
  "FY2015 2,197 / 8,592 = 25.57%; FY2016 2,325 / 8,979 = 25.89%; FY2017 2,265 / 9,567 = 23.68%",
  [(63, "Income from operations", "2,197", "FY2015"), (63, "Net revenues", "8,592", "FY2015"),
   (63, "Income from operations", "2,325", "FY2016"), (63, "Net revenues", "8,979", "FY2016"),
   (63, "Income from operations", "2,265", "FY2017"), (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "judgement",
  "Based on FY2017 data, can eBay comfortably cover its interest expense from operating profit? Use interest "
  "coverage = income from operations / interest expense, with interest expense from the interest and other, net "
  "table in MD&A.",
  "Yes. Income from operations of $2,265 million covered interest expense of $292 million 7.76 times in FY2017 "
  "(10.33 times in FY2016).",
  "2,265 / 292 = 7.76; 2,325 / 225 = 10.33",
  [(63, "Income from operations", "2,265", "FY2017"), (44, "Interest expense", "292", "FY2017"),
   (63, "Income from operations", "2,325", "FY2016"), (44, "Interest expense", "225", "FY2016")])
q(EBAY17, "lookup",
  "How much cash did eBay put into its equity investment in Flipkart in FY2017, according to the cash flow "
  "statement? Answer in USD millions.",
  "$514 million", "514 from the cash flow statement (no arithmetic)",
  [(66, "Equity investment in Flipkart", "514", "FY2017")])


# ---------------- Apple FY2015 (52 weeks ended September 26, 2015; USD millions): statement of operations p.41,
# balance sheet p.43, cash flows p.45
AAPL15 = "robustness2/APPLE_2015_10K.pdf"
q(AAPL15, "metric",
  "What is Apple's FY2015 gross margin as a percentage of net sales? Use the statement of operations for the fiscal "
  "year ended September 26, 2015 and round to two decimal places.",
  "40.06%", "93,626 / 233,715 = 40.06%",
  [(41, "Gross margin", "93,626", "FY2015"), (41, "Net sales", "233,715", "FY2015")])
q(AAPL15, "metric",
  "What was Apple's effective tax rate for fiscal 2015? Compute it as the provision for income taxes divided by "
  "income before provision for income taxes, from the statement of operations, as a percentage with one decimal.",
  "26.4%", "19,121 / 72,515 = 26.4%",
  [(41, "Provision for income taxes", "19,121", "FY2015"),
   (41, "Income before provision for income taxes", "72,515", "FY2015")])
q(AAPL15, "metric",
  "What is Apple's FY2015 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
  "between FY2014 and FY2015) / (FY2015 COGS + change in inventory between FY2014 and FY2015). Round your answer to "
  "two decimal places. Address the question by using the line items and information shown within the balance "
  "sheet and the P&L statement.",
  "85.43", "(35,490 + 30,196) / 2 = 32,843; 140,089 + (2,349 - 2,111) = 140,327; 365 * 32,843 / 140,327 = 85.43",
  [(43, "Accounts payable", "35,490", "2015-09-26"), (43, "Accounts payable", "30,196", "2014-09-27"),
   (41, "Cost of sales", "140,089", "FY2015"), (43, "Inventories", "2,349", "2015-09-26"),
   (43, "Inventories", "2,111", "2014-09-27")])
q(AAPL15, "metric",
  "What is Apple's FY2015 free cash flow, defined as cash generated by operating activities minus payments for "
  "acquisition of property, plant and equipment? Answer in USD billions rounded to two decimals, using the cash "
  "flow statement.",
  "$70.02 billion", "81,266 - 11,247 = 70,019; 70,019 / 1,000 = 70.02",
  [(45, "Cash generated by operating activities", "81,266", "FY2015"),
   (45, "Payments for acquisition of property, plant and equipment", "11,247", "FY2015")])
q(AAPL15, "judgement",
  "Is Apple a high-growth company based on its net sales growth in fiscal 2015?",
  "Yes. Net sales grew 27.9% in fiscal 2015, from $182,795 million to $233,715 million, after 7.0% growth in fiscal "
  "2014.",
  "(233,715 - 182,795) / 182,795 = 27.86%; (182,795 - 170,910) / 170,910 = 6.95%",
  [(41, "Net sales", "233,715", "FY2015"), (41, "Net sales", "182,795", "FY2014"),
   (41, "Net sales", "170,910", "FY2013")])
q(AAPL15, "judgement",
  "Is Apple a capital-intensive business based on FY2015 data? Consider capex as a % of net sales and net PP&E as a "
  "share of total assets.",
  "No. Capex (payments for acquisition of property, plant and equipment of $11,247 million) was 4.8% of net sales "
  "of $233,715 million, and net PP&E of $22,471 million was 7.7% of total assets of $290,479 million.",
  "11,247 / 233,715 = 4.81%; 22,471 / 290,479 = 7.74%",
  [(45, "Payments for acquisition of property, plant and equipment", "11,247", "FY2015"),
   (41, "Net sales", "233,715", "FY2015"), (43, "Property, plant and equipment, net", "22,471", "2015-09-26"),
   (43, "Total assets", "290,479", "2015-09-26")])
q(AAPL15, "lookup",
  "How much did Apple spend on R&D in fiscal 2015? Answer in USD millions.",
  "$8,067 million", "8,067 from the statement of operations (no arithmetic)",
  [(41, "Research and development", "8,067", "FY2015")])


# ---------------- Oracle FY2015 (ended May 31, 2015; USD millions): balance sheet p.90, statement of operations
# p.91, cash flows p.94
ORCL15 = "robustness2/ORACLE_2015_10K.pdf"
q(ORCL15, "metric",
  "What was Oracle's FY2015 dividend payout ratio, defined as payments of dividends to stockholders (cash flow "
  "statement) divided by net income? Oracle's fiscal 2015 ended May 31, 2015. Answer as a percentage with two "
  "decimals.",
  "22.69%", "2,255 / 9,938 = 22.69%",
  [(94, "Payments of dividends to stockholders", "2,255", "FY2015"), (91, "Net income", "9,938", "FY2015")])
q(ORCL15, "metric",
  "What is Oracle's FY2015 interest coverage ratio, defined as operating income divided by interest expense? Use "
  "the statement of operations and round to two decimal places.",
  "12.14", "13,871 / 1,143 = 12.14",
  [(91, "Operating income", "13,871", "FY2015"), (91, "Interest expense", "1,143", "FY2015")])
q(ORCL15, "metric",
  "By what percentage did Oracle's total cloud revenues (cloud software as a service and platform as a service plus "
  "cloud infrastructure as a service) grow in FY2015 compared with FY2014? Answer as a percentage with one decimal.",
  "32.7%", "1,485 + 608 = 2,093; 1,121 + 456 = 1,577; (2,093 - 1,577) / 1,577 = 32.7%",
  [(91, "Cloud software as a service and platform as a service", "1,485", "FY2015"),
   (91, "Cloud infrastructure as a service", "608", "FY2015"),
   (91, "Cloud software as a service and platform as a service", "1,121", "FY2014"),
   (91, "Cloud infrastructure as a service", "456", "FY2014")])
q(ORCL15, "metric",
  "What was Oracle's R&D expense as a % of total revenues in FY2015? Round to one decimal place.",
  "14.5%", "5,524 / 38,226 = 14.5%",
  [(91, "Research and development", "5,524", "FY2015"), (91, "Total revenues", "38,226", "FY2015")])
q(ORCL15, "judgement",
  "Does Oracle have an improving operating margin profile as of FY2015? Take operating margin as operating income "
  "divided by total revenues and look at FY2013 to FY2015.",
  "No. Operating margin declined from 39.5% in FY2013 to 38.6% in FY2014 and 36.3% in FY2015 (operating income of "
  "$13,871 million on total revenues of $38,226 million).",
  "FY2013 14,684 / 37,180 = 39.49%; FY2014 14,759 / 38,275 = 38.56%; FY2015 13,871 / 38,226 = 36.29%",
  [(91, "Operating income", "14,684", "FY2013"), (91, "Total revenues", "37,180", "FY2013"),
   (91, "Operating income", "14,759", "FY2014"), (91, "Total revenues", "38,275", "FY2014"),
   (91, "Operating income", "13,871", "FY2015"), (91, "Total revenues", "38,226", "FY2015")])
q(ORCL15, "judgement",
  "Does Oracle have a healthy liquidity profile based on its quick ratio at May 31, 2015? Define the quick ratio as "
  "(cash and cash equivalents + marketable securities + trade receivables, net) / total current liabilities.",
  "Yes. The quick ratio was 3.92: $59,986 million of cash and cash equivalents, marketable securities and trade "
  "receivables against $15,291 million of total current liabilities.",
  "21,716 + 32,652 + 5,618 = 59,986; 59,986 / 15,291 = 3.92",
  [(90, "Cash and cash equivalents", "21,716", "2015-05-31"), (90, "Marketable securities", "32,652", "2015-05-31"),
   (90, "Trade receivables, net", "5,618", "2015-05-31"), (90, "Total current liabilities", "15,291", "2015-05-31")])
q(ORCL15, "lookup",
  "What were Oracle's new software licenses revenues in fiscal 2015 (the year ended May 31, 2015)? Answer in USD "
  "millions.",
  "$8,535 million", "8,535 from the statement of operations (no arithmetic)",
  [(91, "New software licenses", "8,535", "FY2015")])


# ---------------- narrative questions (FinanceBench format): (doc, 1-based page, question, answer, evidence texts,
# justification); an evidence text on another page is a (1-based page, text) pair
NARRATIVE: list[tuple] = [
    ("EBAY_2015_10K", 38,
     "What drove the decline in eBay's Marketplace net transaction revenues in 2015, and how did they do excluding "
     "currency effects?",
     "Marketplace net transaction revenues decreased $248 million, or 4%, in 2015, driven primarily by a negative "
     "impact from foreign currency movements relative to the U.S. dollar. On an FX-Neutral basis they increased 3% "
     "while FX-Neutral Marketplace GMV rose 5%, the gap reflecting a lower take rate from a shift in geographical "
     "and vertical mix and higher buyer and seller incentives.",
     ["Marketplace net transaction revenues decreased $248 million , or 4% , while Marketplace GMV decreased 2% , in "
      "2015 compared to 2014 .",
      "The decrease in Marketplace net transaction revenues and Marketplace GMV was driven primarily by a negative "
      "impact from foreign currency movements relative to the U.S. dollar.",
      "FX-Neutral Marketplace net transaction revenue and FX-Neutral Marketplace GMV increased 3% and 5% "
      "respectively, in 2015 compared to 2014.",
      "The Marketplace transaction take rate was lower in 2015 compared to 2014 due to a shift in geographical and "
      "vertical mix, as well as an increase in our buyer and seller incentives, which are accounted for as a "
      "reduction of revenue."],
     "MD&A, Marketplace net transaction revenues (p.38): the stated cause of the decline (currency), the FX-Neutral "
     "growth and the cause of the lower take rate."),
    ("EBAY_2015_10K", 41,
     "Why did eBay's general and administrative expenses rise in 2015?",
     "General and administrative expenses increased $233 million, or 26%, in 2015, due primarily to restructuring "
     "costs related to the global workforce reduction, costs related to the PayPal Distribution, expenses related "
     "to the craigslist, Inc. litigation and higher corporate costs from a reduction in synergies that existed "
     "before the Distribution. They rose to 13% of net revenues from 10% in 2014.",
     ["General and administrative expenses increased $233 million , or 26% , in 2015 compared to 2014 . The "
      "increase was due primarily to restructuring costs related to our global workforce reduction, costs related "
      "to the Distribution (as discussed in Overview above), expenses related to craigslist, Inc. litigation "
      "proceedings and an increase in corporate costs due to a reduction in synergies that existed prior to the "
      "Distribution.",
      "General and administrative expenses as a percentage of net revenues were 13% in 2015 and 10% in 2014 ."],
     "MD&A, General and administrative (p.41): the four stated causes and the share of net revenues."),
    ("EBAY_2015_10K", 42,
     "What explains the fall in eBay's effective tax rate from 134% in 2014 to 19% in 2015?",
     "The decrease was due primarily to the recognition in 2014 of deferred tax liabilities of approximately $3.0 "
     "billion of U.S. income and foreign withholding taxes on $9.0 billion of undistributed foreign earnings of "
     "certain foreign subsidiaries for 2013 and prior years. It was partially offset by the tax effect of gains on "
     "the sale of certain investments in 2015.",
     ["Our effective tax rate was 19% in 2015 compared to 134% in 2014 . The decrease in our effective tax rate "
      "during 2015 compared to 2014 was due primarily to the recognition in 2014 of deferred tax liabilities of "
      "approximately $3.0 billion of U.S. income and applicable foreign withholding taxes on $9.0 billion of "
      "undistributed foreign earnings of certain of our foreign subsidiaries for 2013 and prior years. This was "
      "partially offset by the tax effect of gains on sale of certain investments in 2015."],
     "MD&A, Provision for income taxes (p.42): the stated cause (2014's one-off deferred tax liabilities) and the "
     "offset."),
    ("EBAY_2017_10K", 42,
     "What drove the increase in eBay's cost of net revenues in 2017?",
     "Cost of net revenues rose 11% to $2,222 million (23.2% of net revenues, up from 22.4% in 2016), primarily due "
     "to higher costs of goods sold driven by eBay's first-party inventory program in Korea and its Brands4friends "
     "online shopping community, and to increased investments in site operations.",
     ["Cost of net revenues $ 2,222 11% $ 2,007 13% $ 1,771",
      "As a percentage of net revenues 23.2% 22.4% 20.6%",
      "The increase in cost of net revenues in 2017 compared to 2016 was primarily due to an increase in costs of "
      "goods sold driven by our firstparty inventory program in Korea and our Brands4friends online shopping "
      "community",
      (43, "and increased investments in site operations.")],
     "MD&A, Cost of net revenues (pp.42-43): the sentence runs over the page break; both causes are stated."),
    ("EBAY_2017_10K", 45,
     "Why did eBay's effective tax rate jump to 144.5% in 2017?",
     "Primarily because of a $3.1 billion tax charge for the impacts of the Tax Cuts and Jobs Act, enacted on "
     "December 22, 2017. The rate was also raised by a higher foreign tax rate, as eBay no longer benefits from "
     "certain tax rulings, and by a $376 million noncash charge from the foreign exchange remeasurement of deferred "
     "tax assets, partially offset by about $695 million of deferred tax assets recognized in the first quarter of "
     "2017.",
     ["Income tax provision (benefit) $ 3,288 $ (3,634) $ 459 Effective tax rate 144.5% (99.5)% 19.1%",
      "The increase in our effective tax rate in 2017 compared to 2016 was primarily due to a $3.1 billion tax "
      "charge for the impacts of the Tax Cuts and Jobs Act (the \u201cAct\u201d or \u201cU.S. tax reform\u201d), "
      "enacted on December 22, 2017.",
      "Additionally, the 2017 effective tax rate was impacted by the increase in our foreign tax rate as we no "
      "longer benefit from certain tax rulings and a noncash income tax charge of $376 million due to the foreign "
      "exchange remeasurement of our deferred tax assets, partially offset by the recognition in the first quarter "
      "of 2017 of deferred tax assets of approximately $695 million"],
     "MD&A, Income tax provision (p.45): the main cause (U.S. tax reform) and the other stated effects."),
    ("EBAY_2017_10K", 41,
     "What drove the growth in eBay's StubHub net transaction revenues in 2017, and what moved its take rate and "
     "GMV?",
     "StubHub net transaction revenues rose 8% to $1,010 million, primarily due to an increase in both the StubHub "
     "take rate and StubHub GMV. The take rate rose to 22.35% from 21.76% on pricing strategies and lower buyer "
     "incentives, and GMV grew 5% to $4,520 million, driven by Theater and Concerts, partially offset by Sports.",
     ["revenues 1,010 937 8% 8% 937 725 29% 29%",
      "StubHub GMV 4,520 4,310 5% 5% 4,310 3,575 21% 21%",
      "StubHub take rate 22.35% 21.76% 0.59% 21.76% 20.30% 1.46%",
      "The increase in StubHub net transaction revenues in 2017 compared to 2016 was primarily due to an increase "
      "in StubHub take rate and StubHub GMV. The increase in StubHub transaction take rate in 2017 compared to 2016 "
      "was primarily due to pricing strategies and a decrease in our buyer incentives, which are accounted for as a "
      "reduction of revenue. The increase in StubHub GMV in 2017 compared to 2016 was primarily driven by Theater "
      "and Concerts, partially offset by Sports."],
     "MD&A, StubHub net transaction revenues (p.41): the table and the three stated causes."),
    ("APPLE_2015_10K", 30,
     "What drove the increase in Apple's gross margin percentage in fiscal 2015, and what worked against it?",
     "Gross margin percentage rose to 40.1% from 38.6%, driven primarily by a favorable shift in mix to products "
     "with higher margins and, to a lesser extent, improved leverage on fixed costs from higher net sales. These "
     "were partially offset by higher product cost structures and weakness in most foreign currencies relative to "
     "the U.S. dollar.",
     ["Gross margin percentage 40.1% 38.6% 37.6%",
      "The year-over-year increase in the gross margin percentage in 2015 was driven primarily by a favorable shift "
      "in mix to products with higher margins and, to a lesser extent, by improved leverage on fixed costs from "
      "higher net sales. These positive factors were partially offset primarily by higher product cost structures "
      "and, to a lesser extent, by the effect of weakness in most foreign currencies relative to the U.S. dollar."],
     "MD&A, Gross margin (p.30): the two stated drivers and the two offsets."),
    ("APPLE_2015_10K", 27,
     "Why did Apple's iPad net sales decline in fiscal 2015?",
     "iPad net sales fell 23% to $23,227 million and unit sales fell 19%; Apple believes the decline is due in part "
     "to a longer repurchase cycle for iPads and some level of cannibalization from its other products. iPad ASPs "
     "also declined 5%, mainly because of weakness in most foreign currencies against the dollar and a shift in "
     "mix to lower-priced iPads.",
     ["Net sales $ 23,227 (23)% $ 30,283 (5)% $ 31,980",
      "Net sales and unit sales for iPad declined during 2015 compared to 2014. The Company believes the decline in "
      "iPad sales is due in part to a longer repurchase cycle for iPads and some level of cannibalization from the "
      "Company\u2019s other products. iPad ASPs declined by 5% during 2015 compared to 2014, primarily as a result "
      "of the effect of weakness in most foreign currencies relative to the U.S. dollar and a shift in mix to "
      "lower-priced iPads."],
     "MD&A, iPad (p.27): the stated causes of the decline and of the lower ASPs."),
    ("APPLE_2015_10K", 31,
     "Why does Apple's fiscal 2015 effective tax rate differ from the 35% federal statutory rate, and why was it "
     "higher than in 2014?",
     "Apple's effective tax rate was 26.4% in 2015 against 26.1% in 2014; it is below the 35% statutory rate due "
     "primarily to certain undistributed foreign earnings, a substantial portion generated by subsidiaries "
     "organized in Ireland, on which no U.S. taxes are provided because they are intended to be indefinitely "
     "reinvested abroad. The higher rate in 2015 was due primarily to higher foreign taxes.",
     ["Provision for income taxes $ 19,121 $ 13,973 $ 13,118 Effective tax rate 26.4% 26.1% 26.2%",
      "The Company\u2019s effective tax rates for 2015, 2014 and 2013 differ from the statutory federal income tax "
      "rate of 35% due primarily to certain undistributed foreign earnings, a substantial portion of which was "
      "generated by subsidiaries organized in Ireland, for which no U.S. taxes are provided when such earnings are "
      "intended to be indefinitely reinvested outside the U.S.",
      "The higher effective tax rate during 2015 compared to 2014 was due primarily to higher foreign taxes."],
     "MD&A, Provision for income taxes (p.31): both parts stated."),
    ("ORACLE_2015_10K", 59,
     "What explains the decline in Oracle's operating margin in fiscal 2015?",
     "Currency movements cut fiscal 2015 total revenues by 4 percentage points and total operating income by 6 "
     "percentage points; excluding them, operating income was flat. Operating margin as a percentage of revenues "
     "fell to 36% from 39% because total operating expenses, led by sales and marketing and R&D headcount, cloud "
     "SaaS and PaaS costs and acquisition related expenses, grew faster than total revenues.",
     ["movements in international currencies relative to the U.S. Dollar, which decreased our total revenues by 4 "
      "percentage points, total operating expenses by 3 percentage points and total operating income by 6 "
      "percentage points.",
      "the largest of which were due to increased sales and marketing and research and development expenses "
      "resulting primarily from increased headcount, increased cloud SaaS and PaaS expenses to support the "
      "increase in our cloud SaaS and PaaS revenues, and increased acquisition related and other expenses.",
      "Excluding the effects of unfavorable foreign currency rate fluctuations of 6 percentage points, our fiscal "
      "2015 operating margin was flat in comparison to the prior year, while our operating margin as a percentage "
      "of revenues decreased during fiscal 2015 as our total operating expenses increased at a faster rate than "
      "our total revenues.",
      "Total Operating Margin % 36% 39% 39%"],
     "MD&A, Total revenues and operating expenses (p.59): currency effect, the expense drivers and the margin "
     "table (Oracle calls operating income 'operating margin')."),
    ("ORACLE_2015_10K", 72,
     "Why did Oracle's interest expense increase in fiscal 2015?",
     "Interest expense rose 25% to $1,143 million, primarily due to higher average borrowings from the issuance of "
     "$10.0 billion of senior notes in May 2015 and $10.0 billion of senior notes in July 2014. This was partially "
     "offset by the maturity and repayment of $1.5 billion of senior notes, and the related interest rate swaps, "
     "in July 2014.",
     ["Fiscal 2015 Compared to Fiscal 2014: Interest expense increased in fiscal 2015 primarily due to higher "
      "average borrowings resulting from our issuance of $10.0 billion of senior notes in May 2015 and $10.0 "
      "billion of senior notes in July 2014. The increase in interest expense in fiscal 2015 was partially offset "
      "by a reduction in interest expense during fiscal 2015 resulting from the maturity and repayment of $1.5 "
      "billion of senior notes and the related fixed to variable interest rate swap agreements in July 2014.",
      "Interest expense $ 1,143 25% 25% $ 914"],
     "MD&A, Interest expense (p.72): the stated cause, the offset and the table."),
    ("ORACLE_2015_10K", 139,
     "How was Oracle's intellectual property lawsuit against SAP resolved, and how did it affect Oracle's fiscal "
     "2015 results?",
     "Final judgment was entered in Oracle's favor on November 14, 2014 for $356.7 million plus about $2.5 million "
     "of post-judgment interest, and the action is concluded. Oracle received about $359.2 million in the second "
     "quarter of fiscal 2015, of which $306 million was applied against the receivable recorded in fiscal 2013 "
     "and the excess of $53 million was recorded as a benefit to its results of operations.",
     ["After further proceedings, including an appeal, on November 14, 2014, final judgment was entered in "
      "Oracle\u2019s favor in the amount of $356.7 million plus post-judgment interest of approximately $2.5 million.",
      "During the second quarter of fiscal 2015, Oracle received the total payment of approximately $359.2 "
      "million, of which $306 million was applied against the receivable recorded in the first quarter of fiscal "
      "2013 and the excess of $53 million was recorded as a benefit to our results of operations. This action is "
      "now concluded."],
     "Note 18 Legal proceedings, SAP intellectual property litigation (p.139)."),
]


# ---------------- checks and output (the fourth set's, imported)

@functools.cache
def _heldout3():
    spec = importlib.util.spec_from_file_location("build_h3", HERE / "build_analyst_questions_heldout3.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_records() -> list[str]:
    """The fourth set's arithmetic and answer checks, run on this set's QUESTIONS."""
    h3 = _heldout3()
    h3.QUESTIONS = QUESTIONS
    return h3.check_records()


def _parsed(filing: str) -> dict:
    """{filing_id, n_pages, pages: {page_number: text}} of a corpus filing as parse_filing reads it (cached)."""
    cache = CACHE / f"{Path(filing).stem}.filing.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    from finrag_pipeline.core.ingest.parse import parse_filing

    parsed = parse_filing(CORPUS / filing)
    entry = {"filing_id": parsed.meta.filing_id, "n_pages": len(parsed.pages),
             "pages": {p.page_number: p.text for p in parsed.pages}}
    CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(entry))
    return entry


def _parsed_pages(filing: str) -> dict[int, str]:
    return _parsed(filing)["pages"]


def verify_pages() -> list[str]:
    """Every operand's label and printed figure on one line of its page in the parser text (or the label on the
    line before, where the parser wrapped a long row label), and the figure on the same physical page of
    pypdfium2's text."""
    import pypdfium2 as pdfium

    norm, problems, parsed, pdfs = _heldout3()._norm, [], {}, {}
    for row in QUESTIONS:
        filing = row["filing"]
        if filing not in parsed:
            parsed[filing] = _parsed_pages(filing)
            pdfs[filing] = pdfium.PdfDocument(CORPUS / filing)
        for page, label, figure, _period in row["_sources"]:
            lines = [norm(line) for line in parsed[filing].get(page, "").splitlines()]
            windows = [(f"{before} {line}", line) for before, line in zip([""] + lines, lines, strict=False)]
            if not any(norm(figure) in line and (norm(label) in line or norm(label) in window)
                       for window, line in windows):
                problems.append(f"{row['id']}: parser p.{page} has no line with {label!r} and {figure!r}")
            pdf_text = norm(pdfs[filing][page - 1].get_textpage().get_text_range())
            for token in norm(figure).split():
                if token.strip("()") not in pdf_text:
                    problems.append(f"{row['id']}: pypdfium2 p.{page} lacks {token!r}")
    return problems


def records() -> list[dict]:
    return [{k: v for k, v in row.items() if not k.startswith("_")} for row in QUESTIONS]


def narrative_records() -> list[dict]:
    """NARRATIVE in FinanceBench format (analyst_601 on; evidence_page_num 0-indexed = the parser's page - 1)."""
    out = []
    for n, (doc, page, question, answer, texts, just) in enumerate(NARRATIVE, start=601):
        out.append({"financebench_id": f"analyst_{n:03d}", "company": COMPANY[doc.split("_")[0]], "doc_name": doc,
                    "question_type": "novel-generated", "question_category": "narrative", "question": question,
                    "answer": answer,
                    "evidence": [{"evidence_text": t[1] if isinstance(t, tuple) else t, "doc_name": doc,
                                  "evidence_page_num": (t[0] if isinstance(t, tuple) else page) - 1} for t in texts],
                    "justification": just, "split": SPLIT})
    return out


def narrative_pages() -> tuple[dict, list[str]]:
    """(the evidence pages' fixture by doc_name, ids whose evidence text is not on its page of the parser text)."""
    norm = _heldout3()._norm
    fixture, missing = {}, []
    for r in narrative_records():
        parsed = _parsed(f"robustness2/{r['doc_name']}.pdf")
        entry = fixture.setdefault(r["doc_name"], {"filing_id": parsed["filing_id"], "n_pages": parsed["n_pages"],
                                                   "pages": {}})
        for e in r["evidence"]:
            number = e["evidence_page_num"] + 1
            text = parsed["pages"].get(number, "")
            if norm(e["evidence_text"]) not in norm(text):
                missing.append(f"{r['financebench_id']}: evidence not on p.{number}")
            entry["pages"][str(number)] = text
    return fixture, missing


def main() -> None:
    problems = check_records() + (verify_pages() if "--verify" in sys.argv else [])
    fixture, missing = narrative_pages()
    if problems or missing:
        sys.exit("\n".join(problems + missing))
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records()), encoding="utf-8")
    NARRATIVE_OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in narrative_records()),
                             encoding="utf-8")
    PAGES_OUT.write_text(json.dumps(fixture, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(QUESTIONS)} questions to {OUT.name}, {len(NARRATIVE)} to {NARRATIVE_OUT.name}")


if __name__ == "__main__":
    main()
