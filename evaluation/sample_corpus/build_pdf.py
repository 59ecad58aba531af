"""
Builds ``acme/fy2025-budget-restricted.pdf``, the sample corpus's one PDF.

The PDF is committed; run this only to change its text:
``.venv/bin/python evaluation/sample_corpus/build_pdf.py``. The text lives here so
the document stays reviewable in diffs. Each ``PAGES`` entry becomes one PDF page,
so questions can check ``page_number`` on citations.
"""

from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

OUTPUT = Path(__file__).resolve().parent / "acme" / "fy2025-budget-restricted.pdf"

TITLE = "Acme Robotics FY2025 Budget and Compensation Plan (RESTRICTED: Finance only)"

PAGES = [
    [
        (
            "Purpose and distribution",
            (
                "This document sets out the approved budget of Acme Robotics B.V. for the financial year 2025 "
                "and the compensation bands that apply from 1 April 2025. It was approved by the Supervisory "
                "Board on 12 December 2024. Distribution is restricted to the Finance team and the executive "
                "team. Do not forward it, print it, or quote figures from it in other documents. Questions go "
                "to the Chief Financial Officer, Hanna Verhoeven."
            ),
        ),
        (
            "Revenue plan",
            (
                "Planned revenue for FY2025 is EUR 48.6 million, an increase of 22 percent over FY2024. Of this, "
                "EUR 31.2 million comes from robot hardware sales and EUR 17.4 million from Fleet Cloud "
                "subscriptions. Subscription revenue is expected to pass hardware revenue in FY2027. The largest "
                "single customer, Nordlog, accounts for 14 percent of planned revenue."
            ),
        ),
        (
            "Operating budget by department",
            (
                "Research and Development receives EUR 14.8 million, the largest departmental budget. Sales and "
                "Marketing receives EUR 7.9 million, Operations and Manufacturing EUR 9.6 million, and General "
                "and Administrative EUR 4.1 million. The R&D budget includes EUR 2.3 million reserved for "
                "Project Atlas, the fleet-wide route planner. Unspent departmental budget does not carry over "
                "into FY2026."
            ),
        ),
        (
            "Headcount",
            (
                "The plan allows 46 new hires in FY2025, bringing total headcount to 312 at year end. Of the new "
                "positions, 28 are in R&D, 9 in Sales and Marketing, 6 in Operations and 3 in General and "
                "Administrative. Hiring beyond the plan needs approval from the CFO and the CEO together."
            ),
        ),
    ],
    [
        (
            "Compensation bands",
            (
                "Salary bands are reviewed every year in March. From 1 April 2025 the bands for engineering "
                "roles are: Engineer I EUR 52,000 to 64,000; Engineer II EUR 62,000 to 78,000; Senior Engineer "
                "EUR 76,000 to 95,000; Staff Engineer EUR 92,000 to 115,000. The general salary increase for "
                "FY2025 is 3.5 percent, applied on 1 April, with an additional merit budget of 2 percent of "
                "payroll distributed by department heads."
            ),
        ),
        (
            "Bonus pool",
            (
                "The company bonus pool is 6 percent of total payroll and is paid in March 2026 if the company "
                "reaches at least 90 percent of its revenue target and a positive operating result. "
                "Individual bonuses depend on the two performance reviews of the year."
            ),
        ),
        (
            "Capital expenditure",
            (
                "Capital expenditure is capped at EUR 3.7 million, of which EUR 1.9 million is for the "
                "expansion of the Eindhoven test warehouse and EUR 0.8 million for production tooling. Any "
                "single capital purchase above EUR 250,000 needs Supervisory Board approval."
            ),
        ),
        (
            "Cash and financing",
            (
                "The company expects to end FY2025 with a cash balance of EUR 11.4 million. A revolving credit "
                "facility of EUR 5 million with Rabobank remains undrawn and serves as a buffer. The next "
                "budget review with the Supervisory Board is scheduled for 18 June 2025."
            ),
        ),
    ],
]


def build(output: Path = OUTPUT) -> Path:
    """Write the PDF and return its path. Fixed metadata keeps the file byte-stable across runs."""
    pdf = FPDF(format="A4")
    # A fixed date (and fpdf2's fixed file id) keeps rebuilds byte-identical.
    pdf.set_creation_date(datetime(2024, 12, 12, tzinfo=UTC))
    pdf.set_title(TITLE)
    pdf.set_author("Acme Robotics Finance")
    pdf.set_auto_page_break(auto=True, margin=20)
    for page_number, sections in enumerate(PAGES, start=1):
        pdf.add_page()
        if page_number == 1:
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, TITLE, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        for heading, text in sections:
            pdf.set_font("Helvetica", "B", 12)
            pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    output.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(output))
    return output


if __name__ == "__main__":
    print(build())
