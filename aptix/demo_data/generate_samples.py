"""Regenerate the sample files of the README's files tour in this directory: quarterly_sales.csv (a
small sales table by region and quarter) and travel_policy.pdf (a three-page document, drawn with
matplotlib's PDF backend). Both are committed; this script documents how they were made. Run it from
anywhere: `python aptix/demo_data/generate_samples.py`.

West grows fastest from 2025-Q1 to 2025-Q4 both in revenue (+33,000) and in percent (+55%), so
"which region grew fastest?" has one right answer however it is measured.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
QUARTERS = ["2025-Q1", "2025-Q2", "2025-Q3", "2025-Q4"]
REVENUE = {  # region → revenue per quarter
    "North": [120000, 126000, 131000, 138000],
    "South": [95000, 97000, 99500, 101000],
    "East": [80000, 88000, 97000, 104000],
    "West": [60000, 70000, 82000, 93000],
}
AVERAGE_ORDER = {"North": 250, "South": 230, "East": 200, "West": 186}
POLICY_PAGES = [
    [
        "Travel policy",
        "",
        "Purpose",
        "This policy says how we book and pay for business travel.",
        "It applies to every employee and contractor travelling for the company.",
        "Book through the travel desk at least 14 days ahead when you can.",
    ],
    [
        "Budgets",
        "",
        "Hotels: up to 180 euros a night in capital cities, 140 euros elsewhere.",
        "Meals: up to 60 euros a day, receipts required above 25 euros.",
        "Trains are preferred for journeys under five hours; fly economy otherwise.",
        "Taxis only when no public transport runs, or late at night.",
    ],
    [
        "Approval",
        "",
        "Your manager approves trips within budget before you book.",
        "Trips over budget, or outside Europe, also need the finance lead's approval.",
        "Claim expenses within 30 days of your return, with the receipts attached.",
    ],
]


def write_sales(path: Path) -> None:
    lines = ["region,quarter,revenue,orders"]
    for region, values in REVENUE.items():
        for quarter, revenue in zip(QUARTERS, values, strict=True):
            lines.append(f"{region},{quarter},{revenue},{round(revenue / AVERAGE_ORDER[region])}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_policy(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["pdf.compression"] = 9
    matplotlib.rcParams["svg.hashsalt"] = "aptix"
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    with PdfPages(path, metadata={"Title": "Travel policy", "CreationDate": None}) as pdf:
        for lines in POLICY_PAGES:
            figure = Figure(figsize=(8.27, 11.69))
            for n, line in enumerate(lines):
                figure.text(0.1, 0.9 - n * 0.035, line, fontsize=16 if n == 0 else 11)
            pdf.savefig(figure)


if __name__ == "__main__":
    write_sales(HERE / "quarterly_sales.csv")
    write_policy(HERE / "travel_policy.pdf")
