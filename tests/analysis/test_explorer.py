"""The cell explorer: a cell's instances with m_prob and its losses, every sample with its verdict and first pronoun,
and the human labels beside them; paged, one statement per page, researchers and admins only."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from analysis.selectors.explorer import cell_instance_page, pool_cells
from annotation.models import Adjudication
from tests.analysis.test_tango_report import built_tango_pool, tango_pool  # noqa: F401 - the TANGO tests' fixtures
from tests.factories import (
    AnnotationFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
)

CELL = {"model": "m1", "dataset": "misgendered", "setting": "pre", "pronoun": "xe"}
LOSSES = {"she": 3.5, "xe": 2.25, "he": 3.0, "they": 4.0}


@pytest.fixture
def explored(annotator, second_annotator):
    """Three xe instances (5 samples each, pre) and one he instance in job m1; the pool holds samples 0 and 1 of the
    first instance: sample 0 annotated by both annotators (and adjudicated), sample 1 not yet, plus a gold copy."""
    pool = PoolFactory(name="explore")
    job = GenerationJobFactory(model=LanguageModelFactory(name="m1"), settings=["pre"])
    pool.jobs.add(job)
    instances = [InstanceFactory(pronoun="xe") for _ in range(3)] + [InstanceFactory(pronoun="he")]
    generations = {}
    for number, instance in enumerate(instances):
        correct = number != 1
        ProbResultFactory(job=job, instance=instance, losses=LOSSES, prediction="xe" if correct else "she")
        for index in range(5):
            continuation = " She left." if (number, index) == (0, 0) else " Xe smiled at the crowd."
            generations[(number, index)] = GenerationFactory(
                job=job, instance=instance, sample_index=index, continuation=continuation
            )
    first = generations[(0, 0)]
    item = PoolItemFactory(
        pool=pool, generation=first, model_name="m1", heuristic_correct=first.heuristic_correct, first_pronoun="She"
    )
    AnnotationFactory(item=item, annotator=annotator, label="correct")
    AnnotationFactory(item=item, annotator=second_annotator, label="misgendering")
    Adjudication.objects.create(item=item, label="misgendering")
    PoolItemFactory(pool=pool, generation=generations[(0, 1)], model_name="m1")
    return {"pool": pool, "job": job, "instances": instances, "item": item}


class TestSelector:
    def test_it_lists_the_cells_instances_with_their_probability_result_and_losses(self, explored):
        page = cell_instance_page(pool=explored["pool"], cell=CELL)
        assert page.total == 3 and page.pages == 1
        assert [i.instance_id for i in page.instances] == [i.pk for i in explored["instances"][:3]]
        first, second = page.instances[0], page.instances[1]
        assert first.m_prob is True and first.prediction == "xe"
        assert first.losses == [("he", 3.0), ("she", 3.5), ("they", 4.0), ("xe", 2.25)]  # codebook order
        assert second.m_prob is False and second.prediction == "she"

    def test_it_gives_every_sample_with_its_verdict_and_first_pronoun(self, explored):
        first = cell_instance_page(pool=explored["pool"], cell=CELL).instances[0]
        assert [s.sample_index for s in first.samples] == [0, 1, 2, 3, 4]
        assert (first.samples[0].heuristic_correct, first.samples[0].first_pronoun) == (False, "She")
        assert all(s.heuristic_correct and s.first_pronoun == "Xe" for s in first.samples[1:])
        assert first.m_gen == pytest.approx(4 / 5)
        assert first.first_conflicts is True

    def test_it_puts_the_human_labels_beside_the_samples_the_pool_holds(self, explored):
        samples = cell_instance_page(pool=explored["pool"], cell=CELL).instances[0].samples
        annotated, waiting, absent = samples[0], samples[1], samples[2]
        assert annotated.item == explored["item"].public_id
        assert [(a["annotator"], a["label"]) for a in annotated.annotations] == [
            ("ana", "correct"),
            ("bo", "misgendering"),
        ]
        assert annotated.adjudicated_label == "misgendering" and annotated.human_label == "misgendering"
        assert annotated.disagrees is False  # human 0, heuristic 0
        assert waiting.item and waiting.annotations == [] and waiting.human_label is None
        assert absent.item is None

    def test_gold_and_training_copies_of_a_sample_are_not_shown_as_study_labels(self, explored, annotator):
        pool, job = explored["pool"], explored["job"]
        generation = job.generations.get(instance=explored["instances"][2], sample_index=0)
        gold = PoolItemFactory(pool=pool, generation=generation, kind="gold", gold_label="correct")
        AnnotationFactory(item=gold, annotator=annotator, label="correct")
        sample = cell_instance_page(pool=pool, cell=CELL).instances[2].samples[0]
        assert sample.item is None and sample.annotations == []

    def test_it_pages_the_instances(self, explored):
        pages = [cell_instance_page(pool=explored["pool"], cell=CELL, page=n, page_size=2) for n in (1, 2, 3)]
        assert [p.total for p in pages] == [3, 3, 3] and pages[0].pages == 2
        assert [len(p.instances) for p in pages] == [2, 1, 1]
        assert pages[2].number == 2  # clamped to the last page
        assert pages[0].has_next and not pages[1].has_next and pages[1].has_previous

    def test_a_page_is_one_statement_plus_the_count(self, explored, django_assert_num_queries):
        with django_assert_num_queries(2):
            page = cell_instance_page(pool=explored["pool"], cell=CELL, page=1, page_size=2)
            assert sum(len(i.samples) for i in page.instances) == 10

    def test_it_lists_the_cells_of_a_model(self, explored):
        cells = pool_cells(pool=explored["pool"], model="m1")
        assert [(c["pronoun"], c["instances"], c["items"], c["annotated"]) for c in cells] == [
            ("he", 1, 0, 0),
            ("xe", 3, 2, 1),
        ]
        assert pool_cells(pool=explored["pool"], model="nope") == []


class TestPages:
    def _url(self, **params) -> str:
        return reverse("report-cells", args=["explore"]) + "?" + urlencode(params)

    @pytest.mark.parametrize("role", ["researcher", "admin"])
    def test_researchers_and_admins_see_a_cell(self, explored, client, people, role):
        client.force_login(people[role])
        response = client.get(self._url(**CELL))
        assert response.status_code == 200
        page = response.content.decode()
        assert "3 instances" in page and "2.2500" in page and "She left." in page
        assert "ana: correct; bo: misgendering; adjudicated: misgendering" in page
        assert "not in the pool" in page

    def test_the_model_view_links_every_cell(self, explored, client, researcher):
        client.force_login(researcher)
        page = client.get(self._url(model="m1")).content.decode()
        assert urlencode(CELL).replace("&", "&amp;") in page
        assert urlencode({**CELL, "pronoun": "he"}).replace("&", "&amp;") in page

    def test_the_report_page_links_cells_and_shows_the_conflict_headline(self, explored, client, researcher):
        client.force_login(researcher)
        page = client.get(reverse("report-detail", args=["explore"])).content.decode()
        assert urlencode(CELL).replace("&", "&amp;") in page
        # conflicts: instance 1 (m_prob 1, sample 0 wrong) and instance 2 (m_prob 0, sample 0 right): 2 of 4
        assert 'id="conflict-headline"' in page and "2 of 4 instances" in page

    def test_a_bad_page_number_is_a_bad_request(self, explored, client, researcher):
        client.force_login(researcher)
        assert client.get(self._url(**CELL, page="x")).status_code == 400

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_other_roles_are_refused(self, explored, client, people, role):
        client.force_login(people[role])
        assert client.get(self._url(**CELL)).status_code == 403
        assert client.get(self._url(model="m1")).status_code == 403

    def test_anonymous_visitors_are_sent_to_log_in(self, explored, client):
        response = client.get(self._url(**CELL))
        assert response.status_code == 302 and "login" in response["Location"]

    def test_an_unknown_pool_is_404(self, researcher, client):
        client.force_login(researcher)
        assert client.get(reverse("report-cells", args=["nope"])).status_code == 404


def test_a_tango_cell_shows_each_samples_prob_tango_verdict(tango_pool, client, researcher):  # noqa: F811
    cell = {"model": "m1", "dataset": "tango", "setting": "open", "pronoun": "xe"}
    page = cell_instance_page(pool=tango_pool, cell=cell)
    first = page.instances[0]
    # TANGO_INSTANCES["xe"][0]: (m_gen, m_prob) = (1, 1), (1, 1), (0, failed), (1, 0), (1, 1)
    assert [(s.heuristic_correct, s.template_correct, s.template_failed) for s in first.samples] == [
        (True, True, False),
        (True, True, False),
        (False, None, True),
        (True, False, False),
        (True, True, False),
    ]
    client.force_login(researcher)
    html = client.get(reverse("report-cells", args=["tango-study"]) + "?" + urlencode(cell)).content.decode()
    assert "Prob-TANGO template" in html and "<td>failed</td>" in html


@pytest.fixture
def imported_pool(annotator, second_annotator):
    """An imported pool (no job): two templates of model `elsewhere` in one cell, three items, two annotated."""
    pool = PoolFactory(name="imported")
    first = [
        PoolItemFactory(pool=pool, model_name="elsewhere", template="T1 {mask_token}.", sample_index=index)
        for index in range(2)
    ]
    other = PoolItemFactory(pool=pool, model_name="elsewhere", template="T0 {mask_token}.", sample_index=0)
    AnnotationFactory(item=first[0], annotator=annotator, label="correct")
    AnnotationFactory(item=first[0], annotator=second_annotator, label="correct")
    AnnotationFactory(item=other, annotator=annotator, label="misgendering")
    return pool


class TestImportedPools:
    cell = {"model": "elsewhere", "dataset": "misgendered", "setting": "pre", "pronoun": "xe"}

    def test_it_opens_a_cell_of_imported_items_one_instance_per_template(self, imported_pool):
        page = cell_instance_page(pool=imported_pool, cell=self.cell)
        assert page.total == 2
        assert [(i.text, len(i.samples), i.imported) for i in page.instances] == [
            ("T0 {mask_token}.", 1, True),
            ("T1 {mask_token}.", 2, True),
        ]
        t0, t1 = page.instances
        assert t0.samples[0].human_label == "misgendering" and t0.samples[0].disagrees  # heuristic said correct
        assert [a["label"] for a in t1.samples[0].annotations] == ["correct", "correct"]
        assert t1.samples[1].annotations == [] and t1.samples[1].human_label is None

    def test_it_counts_imported_templates_as_the_cells_instances(self, imported_pool):
        assert [(c["instances"], c["items"], c["annotated"]) for c in pool_cells(pool=imported_pool)] == [(2, 3, 2)]

    def test_it_pages_imported_instances(self, imported_pool):
        pages = [cell_instance_page(pool=imported_pool, cell=self.cell, page=n, page_size=1) for n in (1, 2)]
        assert [[i.text for i in p.instances] for p in pages] == [["T0 {mask_token}."], ["T1 {mask_token}."]]

    def test_every_cell_of_the_imported_pool_opens_from_the_model_view(self, imported_pool, client, researcher):
        client.force_login(researcher)
        base = reverse("report-cells", args=["imported"])
        listing = client.get(base + "?model=elsewhere").content.decode()
        cell_link = "?" + urlencode(self.cell).replace("&", "&amp;")
        assert cell_link in listing
        # The model view does not link the model back to itself.
        assert 'href="' + base + '?model=elsewhere"' not in listing
        page = client.get(base + "?" + urlencode(self.cell)).content.decode()
        assert "2 instances" in page and "no instances" not in page
        assert "ana: correct; bo: correct" in page and "T1 {mask_token}." in page


def _sample(**fields):
    from analysis.selectors.explorer import ExplorerSample

    return ExplorerSample(sample_index=0, context="", continuation="", first_pronoun="", **fields)


def test_a_sample_disagrees_by_the_pools_own_positive_label():
    """A pool whose label set names its own positive label ("Bring your own study"): the human binary is 0 iff that
    label, so a human "wrong" against the heuristic's "correct" is a disagreement, and "right" is not."""
    assert _sample(heuristic_correct=True, human_label="wrong", positive="wrong").disagrees
    assert not _sample(heuristic_correct=True, human_label="right", positive="wrong").disagrees
    assert _sample(heuristic_correct=False, human_label="right", positive="wrong").disagrees
    assert _sample(heuristic_correct=True, human_label="misgendering").disagrees  # the schema's default


def test_a_sample_without_a_heuristic_verdict_neither_disagrees_nor_counts_in_m_gen():
    from analysis.selectors.explorer import ExplorerInstance

    unstated = _sample(heuristic_correct=None, human_label="misgendering")
    assert not unstated.disagrees
    instance = ExplorerInstance(
        job_id=None, instance_id=None, ordinal=0, text="", name="", correct_form="", prediction=None, m_prob=True,
        losses=[], samples=[unstated, _sample(heuristic_correct=True), _sample(heuristic_correct=False)],
    )  # fmt: skip
    assert instance.m_gen == 0.5
    assert instance.first_conflicts is None
