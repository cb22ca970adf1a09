"""Each report table is declared once (analysis/report/tables/), and its declaration says what the report really
holds: a built report's rows have exactly the keys of the declared row type, every declared table has a title, a
sentence for when it is empty and a title for every column it shows, and the report's type, the CSV files, the
LaTeX tables, the figures and the API schema all follow the declarations."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from accounts.roles import ANNOTATOR
from analysis.apis import REPORT_SCHEMA
from analysis.plots import FIGURES
from analysis.report.exports.csv import CSV_TABLES
from analysis.report.exports.html import report_tables_for_display
from analysis.report.exports.latex import LATEX_TABLES
from analysis.report.shape import Report, ReportHeader
from analysis.report.tables import TABLES, TABLES_BY_KEY
from analysis.services import report_build
from annotation.schema import DEFAULT_LABELS
from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel
from judging.services.judges import judge_add
from tests.analysis.factories import study_build
from tests.analysis.test_aggregation import build_pool
from tests.analysis.test_tango_report import built_tango_pool, tango_pool  # noqa: F401 (fixtures)
from tests.conftest import _person
from tests.judging.verdict_study import build_study

pytestmark = pytest.mark.filterwarnings("ignore")


def _keys(typed: type) -> set[str]:
    return set(get_type_hints(typed))


@pytest.fixture
def reports(annotator, second_annotator):
    """Two real reports: the hand-built study (a generation job, two annotators) and a pool rated by three people."""
    study = study_build(ana=annotator, bo=second_annotator)
    rated = build_pool(raters={"ana": annotator, "bo": second_annotator, "cy": _person("cy", ANNOTATOR)})
    return [report_build(pool=study), report_build(pool=rated)]


def _rows_checked(report: dict) -> set[str]:
    """Check every table's rows of `report` against its row type; the tables that had rows."""
    filled = set()
    for table in TABLES:
        rows = table.typed_rows(report)
        filled |= {table.key} if rows else set()
        # a per-label table has a count column per label of the pool beside its row type's keys
        labels = set(report["labels"]) if table.per_label and table.typed is None else set()
        for row in rows:
            assert set(row) == _keys(table.row) | labels, table.key
    return filled


def test_every_tables_rows_have_exactly_the_keys_of_its_row_type(reports):
    filled = set().union(*(_rows_checked(report) for report in reports))
    # the reports fill most tables, so that the check above reads real rows
    assert {"inter_annotator", "pairwise", "human_vs_heuristic", "accuracy", "aggregates", "examples"} <= filled


def test_the_judges_and_tango_tables_rows_have_exactly_the_keys_of_their_row_types(tango_pool):  # noqa: F811
    model, _ = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)
    study = build_study(judge=judge_add(name="smol-judge", model=model)[0])
    filled = _rows_checked(report_build(pool=study.pool)) | _rows_checked(report_build(pool=tango_pool))
    judged = {"human_vs_judge", "judge_vs_heuristic", "judge_calibration", "judge_reliability", "judge_verdict"}
    assert judged | {"judge_verdict_agreement", "prediction_powered", "tango_failure_rate", "tango_variation"} <= filled


def test_every_table_has_a_title_an_empty_sentence_and_a_title_for_every_column_it_shows(reports):
    for table in TABLES:
        assert table.title and table.empty and table.header, table.key
        for column in table.header:  # the columns of its CSV file while it is empty
            named = table.column_title(column.removesuffix("_low").removesuffix("_high"))
            assert named or table.column_title(column) or (table.per_label and column in DEFAULT_LABELS), table.key
    for report in reports:
        for shown in report_tables_for_display(report=report):
            table = TABLES_BY_KEY[shown["name"]]
            for column in shown["columns"]:
                name = column.removesuffix("_low").removesuffix("_high")
                named = table.column_title(name) or table.column_title(column)
                assert named or (table.per_label and column in report["labels"]), (table.key, column)


def test_the_report_holds_the_header_and_each_built_table_in_the_declared_order(reports):
    built = [table.key for table in TABLES if table.built]
    for report in reports:
        assert list(report) == [*get_type_hints(ReportHeader), *built]
    assert list(get_type_hints(Report)) == [*get_type_hints(ReportHeader), *built]
    assert Report.__optional_keys__ == {table.key for table in TABLES if table.optional}


def test_the_exports_figures_and_schema_read_the_declarations():
    assert CSV_TABLES == [table.key for table in TABLES]
    assert list(LATEX_TABLES) == [table.latex.name for table in TABLES if table.latex is not None]
    tables = {table.key for table in TABLES}
    assert {figure.table for figure in FIGURES.values()} <= tables  # every figure names a declared table it draws
    assert all(set(figure.also_reads) <= tables | {"labels"} for figure in FIGURES.values())
    schema = REPORT_SCHEMA
    assert list(schema["properties"]) == [*get_type_hints(ReportHeader), *(t.key for t in TABLES if t.built)]
    assert set(schema["required"]) == set(Report.__required_keys__)
