"""A GIFI report as CSV (one row per model: the comparison) and LaTeX (the comparison table)."""

from __future__ import annotations

import io

from analysis.gifi.selectors import DIMENSIONS
from common.safe_csv import SafeDictWriter

CSV_COLUMNS = ("rank", "model", *DIMENSIONS, "GIFI", "scored")


def _cell(value: float | None, *, scale: float = 1.0) -> str:
    return "" if value is None else f"{value * scale:.4f}"


def gifi_csv(report: dict) -> str:
    handle = io.StringIO()
    writer = SafeDictWriter(handle, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in report["comparison"]:
        writer.writerow(
            {
                "rank": row["rank"] if row["rank"] is not None else "",
                "model": row["model"],
                **{name: _cell(row[name]) for name in DIMENSIONS},
                "GIFI": _cell(row["GIFI"]),
                "scored": " ".join(row["scored"]),
            }
        )
    return handle.getvalue()


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
        text = text.replace(char, escaped)
    return text


def gifi_latex(report: dict) -> str:
    """GIFI's ranking table: each dimension x 100 as the paper prints it; a dash where not scored."""
    lines = [
        r"\begin{tabular}{rl" + "r" * (len(DIMENSIONS) + 1) + "}",
        r"\toprule",
        "Rank & Model & " + " & ".join(DIMENSIONS) + r" & GIFI \\",
        r"\midrule",
    ]
    for row in report["comparison"]:
        cells = ["--" if row[name] is None else f"{100 * row[name]:.1f}" for name in DIMENSIONS]
        gifi = "--" if row["GIFI"] is None else f"{row['GIFI']:.1f}"
        rank = "" if row["rank"] is None else str(row["rank"])
        lines.append(f"{rank} & {_latex_escape(row['model'])} & " + " & ".join(cells) + f" & {gifi} " + r"\\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)
