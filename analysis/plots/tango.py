"""TANGO's own plots (docs/domain.md, 'TANGO and Prob-TANGO'): the template failure rate (the paper's figure 11) and
sigma_gen beside sigma_prob (figure 5). TANGO's p_o (figure 12), its beta landscape (figure 13) and its sigma_gen
shares appear as the TANGO panels of the `prob_vs_gen`, `beta_landscape` and `instance_variation` plots."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.plots.declaration import FigureDeclaration

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SIGMA_SERIES = {"sigma_gen": "generation-based σ_gen", "sigma_prob": "probability-based σ_prob"}


def tango_failure_rate(report: dict) -> Figure:
    """Figure 11: the mean share of an instance's templates that failed, with SEM bars; 0 (no failure) dashed."""
    from analysis.plots.layout import _model_pronoun_bars

    return _model_pronoun_bars(
        report, "tango_failure_rate", "mean", ylabel="template failure rate", reference=(0.0, "lower bound")
    )


def tango_variation(report: dict) -> Figure:
    """Figure 5: sigma_gen and sigma_prob per model and pronoun, mean with the population std as bars."""
    from analysis.plots.layout import _model_pronoun_bars

    # Each measure is drawn as its own panel: the panel title is the "setting" (TANGO's only one is open).
    rows = [
        {**row, "setting": title, "mean": row[f"{measure}_mean"], "sem": row[f"{measure}_std"]}
        for row in report.get("tango_variation") or []
        for measure, title in SIGMA_SERIES.items()
    ]
    return _model_pronoun_bars({"tango_variation": rows}, "tango_variation", "mean", ylabel="σ (mean ± std)")


FIGURES = (
    FigureDeclaration(
        name="tango_failure_rate",
        draw=tango_failure_rate,
        table="tango_failure_rate",
        title="TANGO template failures",
        caption=(
            "Mean share of an instance's Prob-TANGO templates that failed (the generation had no pronoun to make a slot "
            "of), per model and pronoun, with standard-error bars over instances (the paper's figure 11)."
        ),
    ),
    FigureDeclaration(
        name="tango_variation",
        draw=tango_variation,
        table="tango_variation",
        title="TANGO variation",
        caption=(
            "Instance-level variation on TANGO: σ_gen over an instance's generations and σ_prob over its successful "
            "templates, mean with the standard deviation over instances as bars (the paper's figure 5)."
        ),
    ),
)
