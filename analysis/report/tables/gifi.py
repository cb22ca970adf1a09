"""GIFI's tables (docs/domain.md, 'GIFI'): the dimensions of the pool's models that have GIFI generations, ranked,
and their per-family accuracies in GDR and PE. They read stored scores only: `gifi_report` scores."""

from __future__ import annotations

from analysis.gifi.selectors import DIMENSIONS, gifi_family_rows, gifi_pool_models, gifi_ppi_rows, gifi_score_rows
from analysis.report.inputs import ReportInputs
from analysis.report.table import Table
from analysis.report.types import GifiFamilyRow, GifiPpiRow, GifiScoreRow
from analysis.selectors.verdict import human_side
from generation.datasets.gifi import GDR


def _reports(r: ReportInputs) -> list[dict]:
    return gifi_pool_models(model_names=set(r.pool.items.values_list("model_name", flat=True)))


def _ppi(r: ReportInputs) -> list[GifiPpiRow]:
    in_gdr = r.pool.items.filter(generation__instance__template__meta__part=GDR)
    items = in_gdr.values_list("pk", "generation_id", "model_name")
    return gifi_ppi_rows(pool_items=items, human=human_side(frame=r.frame).label)


GIFI = (
    Table(
        key="gifi_scores",
        title="GIFI: the dimensions by model (CF counts pairs with 1 - cosine < 0.3, as GIFI's released code does)",
        row=GifiScoreRow,
        empty="GIFI generations of the pool's models (import_generations --format gifi, generate --part)",
        header=("rank", "model", *DIMENSIONS, "GIFI", "scored"),
        build=lambda r: gifi_score_rows(reports=_reports(r)),
        columns={"rank": "rank", "GIFI": "GIFI (x 100)", "scored": "over", **{d: d for d in DIMENSIONS}},
        optional=True,
    ),
    Table(
        key="gifi_family_accuracy",
        title="GIFI: accuracy per pronoun family (GDR, PE)",
        row=GifiFamilyRow,
        empty="GIFI's GDR or PE generations of the pool's models",
        header=("model", "dimension", "pronoun", "accuracy"),
        build=lambda r: gifi_family_rows(reports=_reports(r)),
        columns={"dimension": "dimension"},
        optional=True,
    ),
    Table(
        key="gifi_ppi",
        title="GIFI: GDR corrected by people (prediction-powered accuracies per family; all: GDR)",
        row=GifiPpiRow,
        empty="human labels of a pool of GDR generations (gifi_pool --part gdr)",
        header=("model", "pronoun", "n", "N", "detector", "human", "ppi", "ppi_ci"),
        build=_ppi,
        columns={
            "N": "N (unlabelled)",
            "detector": "detector",
            "human": "people",
            "ppi": "PPI",
            "ppi_ci": "PPI 95% CI",
        },
        optional=True,
    ),
)
