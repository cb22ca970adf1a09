"""Spending people's labels where they count (docs/domain.md, the section of that name): an active pool's rates,
stratified PPI, the budget planner and an active pool's inclusion probabilities. Composed in the report's order in
__init__.py, after the judge's verdict."""

from __future__ import annotations

from analysis.report.machine_types import ActiveInclusionRow, ActiveRateRow, LabelBudgetRow, StratifiedPpiRow
from analysis.report.table import Table
from analysis.report.tables.machine import CI_CLIPPED
from analysis.selectors import active as active_selectors

JUDGED_JOB = "a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items"
ACTIVE_POOL = "an active pool (manage.py sample_pool --active) and annotated items"


def _interval(row: dict, key: str) -> dict:
    low, high = row.get(key) or (None, None)
    return {f"{key}_low": low, f"{key}_high": high}


def active_rates_rows(report: dict) -> list[dict]:
    fields = ("judge", "run", "model", "dataset", "pronoun", "rate")
    return [
        {**{k: row[k] for k in fields}, **_interval(row, "ci"), "ci_clipped": row.get("ci_clipped", False),
         "human_rate": row["human_rate"],
         **_interval(row, "human_ci"), **{k: row[k] for k in ("n_labelled", "n_incomplete", "N")}}
        for row in report.get("active_rates") or []
    ]  # fmt: skip


def stratified_ppi_rows(report: dict) -> list[dict]:
    """One row per stratum, then the combined row (pronoun "all") with the unstratified PPI++ beside it."""
    rows: list[dict] = []
    for row in report.get("stratified_ppi") or []:
        head = {k: row[k] for k in ("judge", "run", "model", "dataset")}
        for stratum in row["strata"]:
            rows.append({**head, "pronoun": stratum["pronoun"], "rate": stratum["rate"], **_interval(stratum, "ci"),
                         "ci_clipped": stratum.get("ci_clipped", False),
                         "ppi_rate": None, "ppi_ci_low": None, "ppi_ci_high": None, "ppi_ci_clipped": None,
                         "n": stratum["n"], "N": stratum["N"], "weight": stratum["weight"]})  # fmt: skip
        rows.append({**head, "pronoun": "all", "rate": row["rate"], **_interval(row, "ci"),
                     "ci_clipped": row.get("ci_clipped", False), "ppi_rate": row["ppi_rate"],
                     **_interval(row, "ppi_ci"), "ppi_ci_clipped": row.get("ppi_ci_clipped", False),
                     "n": row["n"], "N": row["N"], "weight": 1.0})  # fmt: skip
    return rows


BUDGET = (
    Table(
        key="active_rates",
        rates=True,
        title="Active pool: misgendering rates (active estimate, per context)",
        row=ActiveRateRow,
        empty=ACTIVE_POOL,
        header=(
            "judge",
            "run",
            "model",
            "dataset",
            "pronoun",
            "rate",
            "ci_low",
            "ci_high",
            "ci_clipped",
            "human_rate",
            "human_ci_low",
            "human_ci_high",
            "n_labelled",
            "n_incomplete",
            "N",
        ),  # fmt: skip
        build=lambda r: active_selectors.active_rates(pool=r.pool, frame=r.frame),
        flat=active_rates_rows,
        columns={
            "ci": "95% CI",
            "human_rate": "people only (1/pi)",
            "human_ci": "people-only 95% CI",
            "ci_clipped": CI_CLIPPED,
            "n_labelled": "labelled",
            "n_incomplete": "drawn, not labelled",
            "N": "N (every context of the stratum)",
        },  # fmt: skip
        optional=True,
    ),
    Table(
        key="stratified_ppi",
        rates=True,
        title="Stratified prediction-powered rates (strata: pronoun families)",
        row=StratifiedPpiRow,
        empty=JUDGED_JOB,
        header=(
            "judge",
            "run",
            "model",
            "dataset",
            "pronoun",
            "rate",
            "ci_low",
            "ci_high",
            "ci_clipped",
            "ppi_rate",
            "ppi_ci_low",
            "ppi_ci_high",
            "ppi_ci_clipped",
            "n",
            "N",
            "weight",
        ),  # fmt: skip
        build=lambda r: active_selectors.stratified_ppi_rows(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        flat=stratified_ppi_rows,
        columns={
            "ci": "95% CI",
            "ci_clipped": CI_CLIPPED,
            "ppi_rate": "unstratified PPI",
            "ppi_ci": "unstratified 95% CI",
            "ppi_ci_clipped": "unstratified interval clipped to [0, 1]",
            "n": "n (contexts people labelled)",
            "N": "N (every context of the stratum)",
            "weight": "weight",
        },  # fmt: skip
        optional=True,
    ),
    Table(
        key="label_budget",
        title="Label budget: contexts people must label for a 95% interval of a given half-width",
        row=LabelBudgetRow,
        empty=JUDGED_JOB,
        header=(
            "judge",
            "run",
            "model",
            "dataset",
            "pronoun",
            "half_width",
            "n_people",
            "n_ppi",
            "n_active",
            "pilot_n",
            "N",
        ),  # fmt: skip
        build=lambda r: active_selectors.label_budget(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        columns={
            "half_width": "half-width",
            "n_people": "people alone",
            "n_ppi": "with the judge (PPI)",
            "n_active": "active draw",
            "pilot_n": "pilot contexts",
            "N": "N",
        },  # fmt: skip
        optional=True,
    ),
    Table(
        key="active_inclusion",
        title="Active pool: inclusion probability of each drawn context",
        row=ActiveInclusionRow,
        empty=ACTIVE_POOL,
        header=("model", "dataset", "pronoun", "yhat", "inclusion_probability"),
        build=lambda r: active_selectors.active_inclusion(pool=r.pool),
        columns={"yhat": "judge's P(misgendering)", "inclusion_probability": "inclusion probability"},
        shown=False,
        optional=True,
    ),
)
