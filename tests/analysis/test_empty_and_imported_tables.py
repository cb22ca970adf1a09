"""An imported pool's accuracy and empty tables: "Accuracy per cell" counts an imported pool's
instances as the cell explorer does (one per template of its study items) and leaves out, once and saying why, the
columns an imported pool cannot have; a table with nothing to count (the quality page's "against gold" tables of a
pool without gold items) is a sentence, not a grid of zeros."""

from __future__ import annotations

import re

import pytest

from analysis.selectors.explorer import cell_instance_page, pool_cells
from analysis.services import report_build
from tests.analysis.factories import study_build
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

CELL = ("model", "dataset", "setting", "pronoun")


@pytest.fixture
def imported(annotator, second_annotator):
    """Two templates in the xe cell (one annotated twice), one in the he cell: no generation job."""
    pool = PoolFactory(name="imported")
    for pronoun, template in (("xe", "A {mask}."), ("xe", "B {mask}."), ("he", "C {mask}.")):
        for sample in range(2):
            item = PoolItemFactory(
                pool=pool, model_name="their-model", pronoun=pronoun, template=template, sample_index=sample
            )
            if sample == 0:
                AnnotationFactory(item=item, annotator=annotator, label="correct")
    return pool


@pytest.mark.django_db
def test_accuracy_counts_an_imported_pools_instances_as_the_explorer_does(imported):
    report = report_build(pool=imported)

    explorer = {tuple(c[k] for k in CELL): c["instances"] for c in pool_cells(pool=imported)}
    accuracy = {tuple(r[k] for k in CELL): r["n"] for r in report["accuracy"]}

    assert (
        accuracy
        == explorer
        == {
            ("their-model", "misgendered", "pre", "xe"): 2,
            ("their-model", "misgendered", "pre", "he"): 1,
        }
    )
    cell = dict(zip(CELL, ("their-model", "misgendered", "pre", "xe"), strict=True))
    assert cell_instance_page(pool=imported, cell=cell).total == 2


@pytest.mark.django_db
def test_the_report_page_leaves_out_what_an_imported_pool_cannot_have_and_says_why_once(imported, client, researcher):
    client.force_login(researcher)

    page = client.get("/reports/imported/?wait=1").content.decode()
    accuracy = page[page.index('<section id="accuracy"') :]
    accuracy = accuracy[: accuracy.index("</section>")]

    assert "Probability-based" not in accuracy and "Generation-based" not in accuracy
    assert accuracy.count("no generation job") == 1
    assert "Human" in accuracy
    assert not re.search(r"<td>0</td>", accuracy)


@pytest.mark.django_db
def test_a_pool_without_gold_items_says_so_instead_of_a_grid_of_zeros(client, researcher, annotator, second_annotator):
    study_build(ana=annotator, bo=second_annotator)
    client.force_login(researcher)

    page = client.get("/pools/study/quality/").content.decode()

    assert "<caption>against gold</caption>" not in page
    assert "Against gold: no gold items labelled by ana yet." in page
    assert "<caption>against the heuristic</caption>" in page  # a table with counts stays


@pytest.mark.django_db
def test_the_accuracy_table_leaves_out_a_column_no_row_has_a_figure_for(
    client, researcher, annotator, second_annotator
):
    """A job without probability scores and a pool nobody annotated yet: their columns would be all "—"."""
    from annotation.models import Adjudication, Annotation
    from generation.models import ProbResult

    study = study_build(ana=annotator, bo=second_annotator)
    ProbResult.objects.filter(job__in=study.jobs.all()).delete()
    Adjudication.objects.filter(item__pool=study).delete()
    Annotation.objects.filter(item__pool=study).delete()
    client.force_login(researcher)

    report = report_build(pool=study)
    page = client.get(f"/reports/{study.name}/?wait=1").content.decode()
    accuracy = page[page.index('<section id="accuracy"') :]
    accuracy = accuracy[: accuracy.index("</section>")]
    header = accuracy[accuracy.index("<thead>") : accuracy.index("</thead>")]
    first_row = accuracy[accuracy.index("<tbody>") :].split("</tr>")[0]

    assert all(row["prob"] is None and row["human"] is None for row in report["accuracy"])
    assert any(row["gen"] is not None for row in report["accuracy"])
    assert "Probability-based" not in header and "Human" not in header
    assert "Generation-based" in header and "First sample" in header
    assert header.count("<th ") == first_row.count("<td")
