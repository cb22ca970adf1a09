"""The shape of a pool's report, as a type: `Report` is what `analysis.report.build.report_data` returns and what
`GET /api/reports/{pool}/?format=json` sends: its header (`ReportHeader`), then one key per declared table that the
report holds (analysis/report/tables/), typed by the declaration (a list of its row type, or its section's type;
NotRequired where the declaration says `optional`). It is made from the declarations, so a new table is in it
without another edit. The quality dashboard's shape is here too.
"""

from typing import Any, NotRequired, TypedDict, cast, get_type_hints

from analysis.report.tables import TABLES
from analysis.report.types import AnnotatorQualityRow, Interval


class ReportHeader(TypedDict):
    """What the report says before its tables."""

    pool: str
    labels: list[str]
    human_verdict: str  # "default", or the `--human` verdict: majority, dawid_skene, mace, first
    n_items: int
    n_annotated: int
    examples_seed: int
    scale: str  # nominal, ordinal or interval (docs/domain.md, "Scales")
    rates_note: str | None  # why the rates tables are empty and how to fill them; null when the pool has rates


# --- the report ----------------------------------------------------------------------------------------------------


def _report_type() -> Any:
    """`Report` from the declarations: the header's keys, then each table the report holds, in the report's order."""
    fields: dict[str, Any] = dict(get_type_hints(ReportHeader))
    for table in TABLES:
        if table.built:
            shape = table.section or list[table.row]  # type: ignore[name-defined]
            fields[table.key] = NotRequired[shape] if table.optional else shape
    return cast(Any, TypedDict)("Report", fields)


Report = _report_type()


# --- the quality dashboard (analysis/selectors/quality.py) ----------------------------------------------------------

ConfusionTable = dict[str, dict[str, int]]  # reference label -> the rater's label -> count


class QualityDashboard(TypedDict):
    pool: str
    pass_mark: float
    fast_seconds: float
    fast_share_warning: float
    window: int
    seconds_bins: list[int]
    n_annotations: int
    annotator_quality: list[AnnotatorQualityRow]
    kappa_matrix: dict[str, list]
    agreement_over_time: list[dict[str, str | int | float | None]]
    seconds: list[dict[str, str | int | float | list[int] | None]]
    warnings: list[dict[str, str]]
    gwet_ac1: float | None
    gwet_ac1_ci: Interval | None
    fleiss_kappa: float | None
    fleiss_n_items: int
    aggregate: str  # the aggregate the `confusion_aggregate` tables are against: dawid_skene
    confusion_gold: dict[str, ConfusionTable]  # per rater
    confusion_aggregate: dict[str, ConfusionTable]
    confusion_heuristic: dict[str, ConfusionTable]
