"""What a report table is: one `Table` declaration (analysis/report/tables/ holds them all, in the report's order),
and the column titles that many tables share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from analysis.report.inputs import ReportInputs

# Column titles shared by several tables; a declaration's `columns` adds its own (and may differ from these).
COLUMN_TITLES: dict[str, str] = {
    "model": "model",
    "dataset": "dataset",
    "setting": "setting",
    "pronoun": "pronoun",
    "n": "n",
    "n_items": "items",
    "measure": "measure",
    "mean": "mean",
    "sem": "SEM",
    "std": "std",
    "rate": "rate",
    "accuracy": "accuracy",
    "agreement": "agreement",
    "agreement_boot_ci": "bootstrap 95% CI",
    "raw_agreement": "raw agreement",
    "raw_agreement_sem": "SEM",
    "raw_agreement_boot_ci": "bootstrap 95% CI",
    "cohen_kappa": "Cohen's κ",
    "kappa_ci": "κ 95% CI",
    "kappa_method": "κ of",
    "n_pairs": "pairs",
    "weighted_kappa_linear": "weighted κ (linear)",
    "weighted_kappa_quadratic": "weighted κ (quadratic)",
    "mae": "MAE",
    "rmse": "RMSE",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac1_ci": "AC1 95% CI",
    "annotator": "annotator",
    "annotator_1": "annotator 1",
    "annotator_2": "annotator 2",
    "judge": "judge",
    "origin": "origin",
    "run": "run",
    "human_agreement": "human agreement",
    "p_value": "p value",
    "rho": "rho",
    "note": "note",
    "public_id": "item",
    "context": "context",
    "continuation": "continuation",
    "first_pronoun": "first pronoun",
    "human_label": "human label",
    "heuristic_correct": "heuristic correct",
}

# Columns named from the data (one per key of a nested figure): their titles by the prefix.
PREFIX_TITLES: dict[str, Callable[[str], str]] = {
    "shares_": lambda rest: f"σ = {rest}",
    "sigma_gen_shares_": lambda rest: f"sigma gen shares {rest}",
    "sigma_prob_shares_": lambda rest: f"sigma prob shares {rest}",
    "per_class_kappa_": lambda rest: f"per class kappa {rest.replace('_', ' ')}",
    "omega_": lambda rest: f"omega {rest}",
    "by_position_": lambda rest: f"chosen at position {rest} minus 1/m",
    "by_family_": lambda rest: f"swapped to {rest.replace('_', ' ')}",
    "p_cf_": lambda rest: f"content-free P({rest.replace('_', ' ')})",
    "verdict_": lambda rest: f"calibrated verdict: {rest.replace('_', ' ')}",
}


RowT = TypeVar("RowT")


@dataclass(frozen=True)
class LatexTable:
    """A table of the LaTeX export: its name (`--table NAME`) and what writes it from the report ("" when it has no
    rows: the export then says what would fill it, the declaring table's `empty`)."""

    name: str
    render: Callable[[dict], str]


@dataclass(frozen=True)
class TablePart:
    """A part of a wide table that the page shows as a table of its own: `columns` (after the table's first column)
    are the part's, None for every column no other part takes. The CSV file stays whole."""

    key: str
    title: str
    columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table(Generic[RowT]):
    """One table of the report, declared once: everything else (the JSON report and its type, the CSV files, the
    LaTeX and HTML exports, the page, the API schema, the sentence shown while it is empty) reads these fields.

    key: the report's key (JSON) and the CSV file's name. title: its heading on the page.
    row: the type of one of its rows as the report holds them (a TypedDict).
    empty: what would fill it, for the sentence shown while it has no rows ("filled by ...").
    header: its CSV header while it has no rows.
    build: makes its rows from the pool's `ReportInputs`; mypy checks it returns a list of `row`.
    build_one: instead of `build`, for a table the report holds as one object of type `section` (the inter-annotator
        figures). A table with neither is drawn from a part of another: `typed` gives those rows.
    flat: its CSV rows, where they are not each row flattened (analysis/report/parts.py).
    per_label: a count column per label of the pool beside the row's keys.
    columns: column titles beyond the shared COLUMN_TITLES.
    latex: its LaTeX table. (A figure drawn from it names it in its own declaration, analysis/plots.)
    parts: the tables the page splits it into, once a column of a part with its own columns is there.
    part_keys: the columns every part repeats after the first (a cell's dataset, setting and pronoun), so that each
        part's rows say what they are about.
    shown: a plain table on the page (False: a section of its own, or a CSV link).
    optional: a report saved before the table was added lacks it (NotRequired in `Report`).
    rates: its rows are rates of the positive label (docs/domain.md, "Scales").
    note: the report's reason the table is empty, shown instead of `empty` (None: no reason given).
    """

    def fills(self, report: dict) -> str:
        """What would fill it, for the sentence shown while it is empty: a rates table of a pool without a positive
        label says how to get one."""
        note = report.get("rates_note") if self.rates else None
        if self.note is not None:
            note = note or self.note(report)
        return note or self.empty

    key: str
    title: str
    row: type[RowT]
    empty: str
    header: tuple[str, ...]
    build: Callable[[ReportInputs], list[RowT]] | None = None
    build_one: Callable[[ReportInputs], Mapping[str, Any]] | None = None
    typed: Callable[[dict], list[RowT]] | None = None
    flat: Callable[[dict], list[dict]] | None = None
    section: object = None
    per_label: bool = False
    columns: Mapping[str, str] = field(default_factory=dict)
    latex: LatexTable | None = None
    parts: tuple[TablePart, ...] = ()
    part_keys: tuple[str, ...] = ()
    shown: bool = True
    optional: bool = False
    # A table of rates of the positive label: empty on a pool with neither a positive label nor a threshold, it says
    # how to get them (the report's `rates_note`) rather than what fills it.
    rates: bool = False
    # Why the table is empty where the report says so (a pool of too many raters for the pairs' rows), else None.
    note: Callable[[dict], str | None] | None = None

    def column_title(self, name: str) -> str | None:
        """The declared title of a column (an interval's `<key>_low`/`<key>_high` are shown as `<key>`), or None."""
        if name in self.columns:
            return self.columns[name]
        if name in COLUMN_TITLES:
            return COLUMN_TITLES[name]
        for prefix, title in PREFIX_TITLES.items():
            if name.startswith(prefix):
                return title(name.removeprefix(prefix))
        return None

    @property
    def built(self) -> bool:
        """Whether the report holds the table under its key (else it is drawn from a part of another)."""
        return self.build is not None or self.build_one is not None

    def value(self, inputs: ReportInputs) -> object:
        """What the report holds under the table's key."""
        if self.build is not None:
            return self.build(inputs)
        assert self.build_one is not None, f"{self.key} is drawn from another table"
        return self.build_one(inputs)

    def typed_rows(self, report: dict) -> list:
        """Its rows as the report holds them, each of type `row`."""
        return self.typed(report) if self.typed else list(report.get(self.key) or [])
