"""What a report table is: one `Table` declaration (analysis/report/tables/ holds them all, in the report's order)
whose `Column`s say, once, each column's key, title, kind and its HTML, CSV and LaTeX forms; and the columns that
many tables share (`COLUMNS`, named in a declaration with `C(key)`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from analysis.cells import CELL
from analysis.report.exports.tex import _fmt, latex_label, latex_table

if TYPE_CHECKING:
    from analysis.report.inputs import ReportInputs

# What a column holds: its default HTML and LaTeX forms follow from it (docs/development.md, "Adding a metric column").
# number: a figure (3 decimals); count: a whole number; text: words as they are; label: a label of the pool (shown
# "no pronoun", never "no_pronoun"); flag: true or false; interval: a [low, high] pair, `<key>_low` and `<key>_high`
# in the CSV.
Kind = Literal["number", "count", "text", "label", "flag", "interval"]


def html_text(value: object) -> str:
    """A cell of the page and the standalone HTML: numbers to 3 decimals, a missing or undefined one as a dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.3f}"
    return str(value)


def label_html(value: object) -> str:
    """A label as people read it: `no_pronoun` is "no pronoun" (the stored value keeps its underscore)."""
    return str(value).replace("_", " ") if isinstance(value, str) else html_text(value)


def millis(value: object) -> object:
    """A duration in seconds to the millisecond (2.3456789 is 2.346); anything else as it is."""
    return round(value, 3) if isinstance(value, float) and math.isfinite(value) else value


@dataclass(frozen=True)
class Tex:
    """A column in its table's LaTeX table (a `LatexTable` with `columns`): its heading, and its cell from the whole
    row (a figure may carry its spread or interval: `_mean_sem(row["mean"], row["std"])`); without `cell`, the
    column's value in the form of its kind."""

    heading: str
    cell: Callable[[dict], object] | None = None


@dataclass(frozen=True)
class Column:
    """One column of a report table, declared once: its `key` (JSON and CSV), its `title` (the page's and the
    standalone HTML's heading), its `kind`, and where its form differs from its kind's: `html` (the value to the text
    of a cell), `csv` (the value to what the CSV writes), `latex` (its heading and cell in the table's LaTeX table;
    None: not in it). `header`: in the CSV header of the table while it has no rows."""

    key: str
    title: str
    kind: Kind = "number"
    html: Callable[[object], str] | None = None
    csv: Callable[[object], object] | None = None
    latex: Tex | None = None
    header: bool = True

    def html_cell(self, value: object) -> str:
        if self.html is not None:
            return self.html(value)
        return label_html(value) if self.kind == "label" else html_text(value)

    def csv_value(self, value: object) -> object:
        return value if self.csv is None else self.csv(value)

    def latex_cell(self, row: dict) -> object:
        if self.latex is not None and self.latex.cell is not None:
            return self.latex.cell(row)
        value = row.get(self.key)
        if self.kind == "number":
            return _fmt(value)
        if self.kind == "label":
            return label_html(value)
        return "" if value is None else str(value)

    @property
    def csv_keys(self) -> tuple[str, ...]:
        """Its keys in the CSV: an interval's low and high."""
        return (f"{self.key}_low", f"{self.key}_high") if self.kind == "interval" else (self.key,)


# Columns shared by several tables: a declaration names one with `C(key)` (and may change its fields there).
COLUMNS: dict[str, Column] = {
    column.key: column
    for column in (
        Column("model", "model", kind="text", latex=Tex("Model")),
        Column("dataset", "dataset", kind="text", latex=Tex("Dataset")),
        Column("setting", "setting", kind="text", latex=Tex("Setting")),
        Column("pronoun", "pronoun", kind="text", latex=Tex("Pronoun")),
        Column("n", "n", kind="count"),
        Column("n_items", "items", kind="count"),
        Column("measure", "measure", kind="text"),
        Column("mean", "mean"),
        Column("sem", "SEM"),
        Column("std", "std"),
        Column("rate", "rate"),
        Column("accuracy", "accuracy"),
        Column("agreement", "agreement"),
        Column("agreement_boot_ci", "bootstrap 95% CI", kind="interval"),
        Column("raw_agreement", "raw agreement"),
        Column("raw_agreement_sem", "SEM"),
        Column("raw_agreement_boot_ci", "bootstrap 95% CI", kind="interval"),
        Column("cohen_kappa", "Cohen's κ"),
        Column("kappa_ci", "κ 95% CI", kind="interval"),
        Column("kappa_method", "κ of", kind="text"),
        Column("n_pairs", "pairs", kind="count"),
        Column("weighted_kappa_linear", "weighted κ (linear)"),
        Column("weighted_kappa_quadratic", "weighted κ (quadratic)"),
        Column("mae", "MAE"),
        Column("rmse", "RMSE"),
        Column("gwet_ac1", "Gwet's AC1"),
        Column("gwet_ac1_ci", "AC1 95% CI", kind="interval"),
        Column("annotator", "annotator", kind="text"),
        Column("annotator_1", "annotator 1", kind="text"),
        Column("annotator_2", "annotator 2", kind="text"),
        Column("judge", "judge", kind="text"),
        Column("origin", "origin", kind="text"),
        Column("run", "run", kind="count"),
        Column("human_agreement", "human agreement"),
        Column("p_value", "p value"),
        Column("rho", "rho"),
        Column("note", "note", kind="text"),
        Column("public_id", "item", kind="text"),
        Column("context", "context", kind="text"),
        Column("continuation", "continuation", kind="text"),
        Column("first_pronoun", "first pronoun", kind="text"),
        Column("human_label", "human label", kind="label"),
        Column("heuristic_correct", "heuristic correct", kind="flag"),
    )
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


def C(key: str, **changes: Any) -> Column:  # noqa: N802 (read as a column's name in the declarations)
    """The shared column `key` (COLUMNS, or one named by its prefix, PREFIX_TITLES), with `changes` to its fields
    for one table (its own title, LaTeX form or kind)."""
    column = COLUMNS.get(key)
    if column is None:
        prefix = next((p for p in PREFIX_TITLES if key.startswith(p)), None)
        if prefix is None:
            raise KeyError(f"no shared column {key!r}: declare it in COLUMNS, or as the table's own Column")
        column = Column(key, PREFIX_TITLES[prefix](key.removeprefix(prefix)))
    return dataclasses.replace(column, **changes) if changes else column


def spaced(*keys: str, **fields: Any) -> tuple[Column, ...]:
    """Columns titled by their keys, the underscores read as spaces (`n_ties`: "n ties")."""
    return tuple(Column(key, key.replace("_", " "), **fields) for key in keys)


CELL_COLUMNS: tuple[Column, ...] = tuple(COLUMNS[key] for key in CELL)


RowT = TypeVar("RowT")


@dataclass(frozen=True)
class LatexTable:
    """A table of the LaTeX export: its name (`--table NAME`, and its `\\label`) and either what writes it from the
    report (`render`), or its `caption` (text, or text from the report: a note on what its rows hold) and its
    columns: the declaring table's columns that have a `latex` form, in the declaration's order after those
    `columns` names first. Without rows it is "": the export then says what would fill it, the declaring table's
    `empty`. `fit`: scaled to the text width."""

    name: str
    render: Callable[[dict], str] | None = None
    caption: str | Callable[[dict], str] = ""
    columns: tuple[str, ...] = ()
    fit: bool = False


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
    columns: its columns (`Column`): their keys, titles, kinds and HTML, CSV and LaTeX forms; those with `header`
        make its CSV header while it has no rows. A column named from the data (a label of the pool, a prefix of
        PREFIX_TITLES) that it does not declare reads its shared title, or its name.
    build: makes its rows from the pool's `ReportInputs`; mypy checks it returns a list of `row`.
    build_one: instead of `build`, for a table the report holds as one object of type `section` (the inter-annotator
        figures). A table with neither is drawn from a part of another: `typed` gives those rows.
    flat: its CSV rows, where they are not each row flattened (analysis/report/parts.py).
    per_label: a count column per label of the pool beside the row's keys.
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
    columns: tuple[Column, ...]
    build: Callable[[ReportInputs], list[RowT]] | None = None
    build_one: Callable[[ReportInputs], Mapping[str, Any]] | None = None
    typed: Callable[[dict], list[RowT]] | None = None
    flat: Callable[[dict], list[dict]] | None = None
    section: object = None
    per_label: bool = False
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

    @property
    def header(self) -> tuple[str, ...]:
        """Its CSV header while it has no rows."""
        return tuple(key for column in self.columns if column.header for key in column.csv_keys)

    def column(self, name: str) -> Column | None:
        """The column `name`: its own, else a shared one (COLUMNS, PREFIX_TITLES), else None."""
        own = self._own.get(name)
        if own is not None:
            return own
        try:
            return C(name)
        except KeyError:
            return None

    @cached_property
    def _own(self) -> Mapping[str, Column]:
        return {column.key: column for column in self.columns}

    def column_title(self, name: str) -> str | None:
        """The declared title of a column (an interval's `<key>_low`/`<key>_high` are shown as `<key>`), or None."""
        column = self.column(name)
        return None if column is None else column.title

    def html_cell(self, name: str, value: object) -> str:
        """A cell's text on the page and in the standalone HTML."""
        column = self.column(name)
        return html_text(value) if column is None else column.html_cell(value)

    def csv_value(self, name: str, value: object) -> object:
        """A cell as the CSV writes it."""
        column = self.column(name)
        return value if column is None else column.csv_value(value)

    def latex_text(self, report: dict) -> str:
        """Its LaTeX table ("" without rows)."""
        assert self.latex is not None, f"{self.key} has no LaTeX table"
        if self.latex.render is not None:
            return self.latex.render(report)
        first = [self._own[key] for key in self.latex.columns]
        columns = first + [column for column in self.columns if column.latex is not None and column not in first]
        headings = [column.latex.heading if column.latex else column.title for column in columns]
        caption = self.latex.caption
        return latex_table(
            caption if isinstance(caption, str) else caption(report),
            headings,
            [[column.latex_cell(row) for column in columns] for row in self.typed_rows(report)],
            label=latex_label(self.latex.name),
            fit=self.latex.fit,
        )

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
