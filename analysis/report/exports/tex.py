"""LaTeX for the report's tables: escaping (every piece of text that reaches LaTeX goes through `latex_escape`),
numbers with their spread or interval, and one booktabs table (`latex_table`). The tables themselves are in
latex_tables.py and latex_judges.py, each named by its table's declaration (analysis/report/tables/)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from analysis.cells import CELL

LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "%": r"\%",
}


class Latex(str):
    """Markup written by this module (math, bold, underline): passed through `latex_escape` unchanged."""


def latex_escape(text: object) -> str:
    """Text as LaTeX prints it: every special character (\\ { } $ & # ^ _ ~ %) escaped, in one pass so that an
    escape is never escaped again. `Latex` markup is left as it is."""
    if isinstance(text, Latex):
        return str(text)
    return "".join(LATEX_SPECIALS.get(character, character) for character in str(text))


def latex_join(*parts: object) -> Latex:
    """Markup from pieces: `Latex` pieces verbatim, anything else escaped."""
    return Latex("".join(latex_escape(part) for part in parts))


PM = Latex(r"$\pm$")


def _fmt(value, digits: int = 3) -> str:
    return "--" if value is None else f"{value:.{digits}f}"


def _interval(value, ci) -> str:
    """A coefficient and its 95% CI as `0.123 [0.045, 0.201]`; an undefined interval reads `[undefined]`."""
    if value is None:
        return "--"
    if not ci:
        return f"{value:.3f} [undefined]"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _ci(ci) -> str:
    """A bootstrap interval as `[0.812, 0.934]`; `--` where there is none."""
    return "--" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _mean_sem(value, sem) -> Latex:
    r"""`0.500 $\pm$ 0.100`; a missing value reads `--` alone (never `-- $\pm$ --`), a missing spread the value alone."""
    if value is None:
        return Latex("--")
    if sem is None:
        return Latex(_fmt(value))
    return latex_join(_fmt(value), " ", PM, " ", _fmt(sem))


# A body cell that is a number: `12`, `0.500`, `0.500 $\pm$ 0.1`, `0.123 [0.045, 0.201]`, `[0.8, 0.9]`, `0.5 (3)`, `--`.
NUMERIC_CELL = re.compile(r"(--|-?\d+(\.\d+)?(\s.*)?|\[.*\])")


def _column_spec(body: list[list]) -> str:
    """Right-aligned columns for numbers, left-aligned for words: a column is numeric when every cell is a number
    (or `--`) and one at least is not `--`."""
    spec = ""
    for column in zip(*body, strict=True):
        cells = [str(cell) for cell in column]
        numeric = all(NUMERIC_CELL.fullmatch(cell) for cell in cells) and any(cell != "--" for cell in cells)
        spec += "r" if numeric else "l"
    return spec


def latex_label(*parts: str) -> str:
    r"""`\label{tab:...}` for a table: its name (and, for the examples, its kind, dataset and setting)."""
    return "tab:" + "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


def latex_table(
    caption: str,
    header: list[str],
    body: Iterable[list],
    *,
    label: str | None = None,
    spec: str | None = None,
    fit: bool = False,
) -> str:
    """A booktabs table; every header cell, body cell and the caption pass through `latex_escape`. No rows: nothing
    (report_latex says what would fill it). Numbers sit in right-aligned columns unless `spec` says otherwise;
    `label` is the table's `\\label`. `fit`: scaled to the text width (graphicx's \\resizebox), for tables whose
    last column would otherwise run off the page."""
    body = list(body)
    if not body:
        return ""
    # A column with no value in any row (an imported pool has no probability side) is left out, and said so once.
    empty = [k for k, column in enumerate(zip(*body, strict=True)) if all(str(cell) == "--" for cell in column)]
    if empty and spec is None:
        names = [part for k in empty for part in (", ", header[k])][1:]
        caption = latex_join(caption, " No values in this pool, left out: ", *names, ".")
        header = [h for k, h in enumerate(header) if k not in empty]
        body = [[cell for k, cell in enumerate(row) if k not in empty] for row in body]
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + (spec or _column_spec(body)) + "}", r"\toprule"]
    lines.append(" & ".join(latex_escape(h) for h in header) + r" \\")
    rows = [" & ".join(latex_escape(cell) for cell in row) for row in body]
    # `\\` and `\midrule` both take an optional argument in brackets: a row that starts with `[` (an interval, say)
    # would be read as that argument, so the command before it is closed with `{}`.
    lines.append(r"\midrule{}" if rows and rows[0].startswith("[") else r"\midrule")
    lines += [
        row + (r" \\{}" if following.startswith("[") else r" \\")
        for row, following in zip(rows, [*rows[1:], ""], strict=True)
    ]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if fit:
        begin = lines.index(next(line for line in lines if line.startswith(r"\begin{tabular}")))
        lines.insert(begin, r"\resizebox{\linewidth}{!}{%")
        lines.append("}")
    lines.append(r"\caption{" + latex_escape(caption) + "}" + (r"\label{" + label + "}" if label else ""))
    lines += [r"\end{table}", ""]
    return "\n".join(lines)


def _cell(row: dict) -> list[str]:
    return [str(row[c]) for c in CELL]


# The LaTeX tables' headings are words (the CSV keeps the keys).

CELL_HEADINGS = ["Model", "Dataset", "Setting", "Pronoun"]


# A prob-vs-gen kappa interval outside [-1, 1] is statsmodels' (its normal approximation on very few instances,
# n = 2 say) and kept as the paper computes it (docs/domain.md, 'Metrics'); it is marked wherever it is shown.
KAPPA_BEYOND_NOTE = (
    "wider than [-1, 1]: statsmodels' interval on so few instances (n = 2, say), kept as the paper computes it."
)
KAPPA_BEYOND_MARK = "†"


def kappa_ci_beyond_bounds(ci) -> bool:
    """Whether a kappa interval reaches past [-1, 1]."""
    return bool(ci) and (ci[0] < -1 or ci[1] > 1)
