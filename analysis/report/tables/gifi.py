"""GIFI's tables (docs/domain.md, 'GIFI'): the dimensions of the pool's models that have GIFI generations, ranked,
and their per-family accuracies in GDR and PE. They read stored scores only: `gifi_report` scores."""

from __future__ import annotations

from analysis.gifi.selectors import (
    DIMENSIONS,
    gifi_family_rows,
    gifi_pool_corrected_rows,
    gifi_score_rows,
)
from analysis.report.inputs import ReportInputs
from analysis.report.table import C, Column, Table, spaced
from analysis.report.types import GifiFamilyRow, GifiPpiRow, GifiScoreRow
from analysis.selectors.verdict import human_side


def _ppi(r: ReportInputs) -> list[GifiPpiRow]:
    return gifi_pool_corrected_rows(pool=r.pool, human=human_side(frame=r.frame).label)


GIFI = (
    Table(
        key="gifi_scores",
        title="GIFI: the dimensions by model (CF counts pairs with 1 - cosine < 0.3, as GIFI's released code does)",
        row=GifiScoreRow,
        empty="GIFI generations of the pool's models (import_generations --format gifi, generate --part)",
        columns=(
            Column("rank", "rank"),
            C("model"),
            *spaced(*DIMENSIONS),
            Column("GIFI", "GIFI (x 100)"),
            Column("scored", "over"),
        ),
        build=lambda r: gifi_score_rows(reports=r.gifi_reports),
        optional=True,
    ),
    Table(
        key="gifi_family_accuracy",
        title="GIFI: accuracy per pronoun family (GDR, PE)",
        row=GifiFamilyRow,
        empty="GIFI's GDR or PE generations of the pool's models",
        columns=(
            C("model"),
            Column("dimension", "dimension"),
            C("pronoun"),
            C("accuracy"),
        ),
        build=lambda r: gifi_family_rows(reports=r.gifi_reports),
        optional=True,
    ),
    Table(
        key="gifi_ppi",
        title=(
            "GIFI: dimensions corrected by people (GDR: prediction-powered accuracies per family, all: GDR; "
            "SA, OF, SN, NTS: from PPI++ per-template terms, a point estimate)"
        ),
        row=GifiPpiRow,
        empty="human labels of a GIFI pool (gifi_pool --part gdr|saof|counterfactual)",
        columns=(
            C("model"),
            Column("dimension", "dimension"),
            C("pronoun"),
            C("n"),
            Column("N", "N (unlabelled)"),
            Column("detector", "detector"),
            Column("human", "people"),
            Column("ppi", "PPI"),
            Column("ppi_ci", "PPI 95% CI"),
            Column("templates", "templates corrected"),
        ),
        build=_ppi,
        optional=True,
    ),
)
