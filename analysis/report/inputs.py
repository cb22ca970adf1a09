"""What the report's tables are built from, loaded once per report: `ReportInputs` (analysis/report/build.py loads
it; each table's `build` reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from analysis.cells import CELL, cell_of
from analysis.gifi.selectors import gifi_pool_models
from analysis.report.types import AccuracyRow
from analysis.selectors import automatic, explorer
from analysis.selectors import verdict as verdict_selectors
from annotation.models import Pool
from common.frames import pd
from judging.models import JudgeRun


@dataclass(frozen=True)
class ReportInputs:
    """What the tables read, loaded once per report: the human frame (annotated study items, one row each), the
    automatic frame (one row per job x instance x setting), the pool's jobs and the examples' seed."""

    pool: Pool
    labels: list[str]
    frame: pd.DataFrame
    job_ids: list[int]
    instances: pd.DataFrame
    examples_seed: int
    tango: pd.DataFrame | None = None  # one row per TANGO generation with its Prob-TANGO verdict (selectors/tango.py)
    aggregates: list[dict] | None = None  # per item: majority, Dawid-Skene, MACE (annotation/selectors/aggregate.py)
    judges: pd.DataFrame | None = None  # one row per judge x judged study item (selectors/judges.py)
    judge_runs: list[JudgeRun] | None = None  # the finished runs that cover the pool (judging.selectors.covering_runs)
    verdict: verdict_selectors.VerdictParameters = verdict_selectors.VerdictParameters()  # epsilon, alpha, delta

    @cached_property
    def accuracy(self) -> list[AccuracyRow]:
        """The `accuracy` rows, built once: the rankings across benchmarks read them too."""
        return _accuracy(self)

    @cached_property
    def gifi_reports(self) -> list[dict]:
        """The GIFI reports (stored scores) of the pool's models, read once for GIFI's two tables of them."""
        return gifi_pool_models(model_names=set(self.pool.items.values_list("model_name", flat=True)))


def _accuracy(r: ReportInputs) -> list[AccuracyRow]:
    """Accuracy per cell, whose `n` counts a cell's instances as the cell explorer does: a cell with no job
    instances (an imported pool) counts one instance per template of its study items."""
    rows = automatic.accuracy(frame=r.instances, human_frame=r.frame, tango=r.tango)
    if any(row["n"] == 0 for row in rows):
        counted = {tuple(cell[c] for c in CELL): cell["instances"] for cell in explorer.pool_cells(pool=r.pool)}
        for row in rows:
            if row["n"] == 0:
                row["n"] = counted.get(tuple(cell_of(row).values()), 0)
    return rows
