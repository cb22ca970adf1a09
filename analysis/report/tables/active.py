"""Spending people's labels where they count (docs/domain.md, the section of that name): an active pool's rates,
stratified PPI, the budget planner and an active pool's inclusion probabilities. Composed in the report's order in
__init__.py, after the judge's verdict."""

from __future__ import annotations

from analysis.report.machine_types import ActiveInclusionRow, ActiveRateRow, LabelBudgetRow, StratifiedPpiRow
from analysis.report.table import C, Column, Table, spaced
from analysis.report.tables.machine import CI_CLIPPED, N_LABELLED
from analysis.selectors import active as active_selectors

JUDGED_JOB = "a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items"
ACTIVE_POOL = "an active pool (manage.py sample_pool --active) and annotated items"
# The leading columns of a rates table per context (the active and the stratified estimates).
RATE_HEAD = (
    C("judge"),
    C("run"),
    C("model"),
    C("dataset"),
    C("pronoun"),
    C("rate"),
    Column("ci", "95% CI", kind="interval"),
    Column("ci_clipped", CI_CLIPPED),
)


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
        columns=(
            *RATE_HEAD,
            Column("human_rate", "people only (1/pi)"),
            Column("human_ci", "people-only 95% CI", kind="interval"),
            Column("n_labelled", "labelled"),
            Column("n_incomplete", "drawn, not labelled"),
            Column("N", "N (every context of the stratum)"),
        ),
        build=lambda r: active_selectors.active_rates(pool=r.pool, frame=r.frame),
        flat=active_rates_rows,
        optional=True,
    ),
    Table(
        key="stratified_ppi",
        rates=True,
        title="Stratified prediction-powered rates (strata: pronoun families)",
        row=StratifiedPpiRow,
        empty=JUDGED_JOB,
        columns=(
            *RATE_HEAD,
            Column("ppi_rate", "unstratified PPI"),
            Column("ppi_ci", "unstratified 95% CI", kind="interval"),
            Column("ppi_ci_clipped", "unstratified interval clipped to [0, 1]"),
            Column("n", N_LABELLED),
            Column("N", "N (every context of the stratum)"),
            Column("weight", "weight"),
        ),
        build=lambda r: active_selectors.stratified_ppi_rows(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        flat=stratified_ppi_rows,
        optional=True,
    ),
    Table(
        key="label_budget",
        title="Label budget: contexts people must label for a 95% interval of a given half-width",
        row=LabelBudgetRow,
        empty=JUDGED_JOB,
        columns=(
            C("judge"),
            C("run"),
            C("model"),
            C("dataset"),
            C("pronoun"),
            Column("half_width", "half-width"),
            Column("n_people", "people alone"),
            Column("n_ppi", "with the judge (PPI)"),
            Column("n_active", "active draw"),
            Column("pilot_n", "pilot contexts"),
            Column("N", "N"),
        ),
        build=lambda r: active_selectors.label_budget(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        optional=True,
    ),
    Table(
        key="active_inclusion",
        title="Active pool: inclusion probability of each drawn context",
        row=ActiveInclusionRow,
        empty=ACTIVE_POOL,
        columns=(
            C("model"),
            C("dataset"),
            C("pronoun"),
            Column("yhat", "judge's P(misgendering)"),
            *spaced("inclusion_probability"),
        ),
        build=lambda r: active_selectors.active_inclusion(pool=r.pool),
        shown=False,
        optional=True,
    ),
)
