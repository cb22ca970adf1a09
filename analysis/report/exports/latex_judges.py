"""The LaTeX of the machine raters' tables (analysis/report/tables/machine.py): the judge's verdict's table, and
the prediction-powered rates' caption and joined cell."""

from __future__ import annotations

from analysis.report.exports.tex import _fmt, _interval, latex_label, latex_table


def latex_judge_verdict(report: dict) -> str:
    body = []
    for row in report.get("judge_verdict") or []:
        test, selective = row["alt_test"], row["selective"]
        human: dict = next((a for a in row["agreement"] if a["against"] == "human"), {})
        ceiling: dict = next((a for a in row["agreement"] if a["against"] == "human_ceiling"), {})
        verdict = "--" if test["passed"] is None else ("passes" if test["passed"] else "fails")
        body.append(
            [
                f"{row['judge']} v{row['version']} (run {row['run']})",
                verdict,
                _fmt(test["omega"], 2),
                str(test["tested"]),
                _fmt(test["rho"]),
                _interval(human.get("cohen_kappa"), human.get("cohen_kappa_boot_ci")),
                _fmt(ceiling.get("cohen_kappa")),
                _fmt(selective["threshold"]),
                _fmt(selective["coverage"]),
            ]
        )
    first = (report.get("judge_verdict") or [{}])[0]
    epsilon = first.get("epsilon", 0.15)
    alpha = first.get("selective", {}).get("alpha", 0.1)
    delta = first.get("selective", {}).get("delta", 0.1)
    return latex_table(
        f"The judge's verdict: the Alternative Annotator Test at epsilon {epsilon:.2f} (q = 0.05; omega the winning "
        "rate over the tested annotators, rho the advantage probability), Cohen's kappa with the human label "
        f"[bootstrap 95% CI] beside the human ceiling (mean over annotator pairs), and the selective threshold for a "
        f"disagreement of at most {alpha:g} with probability {1 - delta:g} and its coverage. A judge is a model: "
        "its verdict holds for this pool, these annotators and this epsilon.",
        ["Judge", "Alt-Test", "Omega", "Annotators", "Rho", "Kappa vs human [95% CI]", "Human ceiling", "Threshold",
         "Coverage"],
        body,
        label=latex_label("judge-verdict"),
        fit=True,
    )  # fmt: skip


PREDICTION_POWERED_CAPTION = (
    "Misgendering rate per model, dataset and pronoun (unit: a context): prediction-powered (PPI++) with its 95% "
    "interval (clipped to [0, 1] where it left it, marked clipped), beside people only and the judge only "
    "(biased); n labelled and N unlabelled contexts, and n_eff the labelled contexts people alone would need for "
    "the same width."
)


def ppi_marked(row: dict) -> str:
    """The prediction-powered rate with its interval, marked where the interval was clipped to [0, 1]."""
    return _interval(row["ppi_rate"], row["ppi_ci"]) + (" clipped" if row.get("ci_clipped") else "")
