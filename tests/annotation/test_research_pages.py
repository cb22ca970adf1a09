"""Researchers' progress and adjudication pages, and the admins' pool and assignment pages."""

import pytest

from annotation.models import Adjudication, Annotation, Assignment, Pool, PoolItem
from tests.annotation.factories import job_with_generations, pool_for
from tests.factories import AnnotationFactory


@pytest.fixture
def overlap(annotator, second_annotator):
    pool, items = pool_for(annotator, second_annotator, items=3)
    AnnotationFactory(item=items[0], annotator=annotator, label="correct", notes="looks fine")
    AnnotationFactory(item=items[0], annotator=second_annotator, label="misgendering")
    AnnotationFactory(item=items[1], annotator=annotator, label="correct")
    AnnotationFactory(item=items[1], annotator=second_annotator, label="correct")
    return pool, items


@pytest.mark.django_db
class TestProgress:
    def test_it_shows_progress_per_annotator_and_per_cell(self, client, researcher, overlap):
        pool, _ = overlap
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/")

        annotators = {row.username: (row.assigned, row.done) for row in response.context["annotators"]}
        assert annotators == {"ana": (3, 2), "bo": (3, 2)}
        [cell] = response.context["cells"]
        assert (cell.model, cell.items, cell.assignments, cell.done) == ("test-model", 3, 6, 4)


@pytest.mark.django_db
class TestAdjudication:
    def test_it_lists_only_items_labelled_differently(self, client, researcher, overlap):
        pool, items = overlap
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/adjudicate/")

        assert [row[0] for row in response.context["rows"]] == [items[0]]
        html = response.content.decode()
        assert "looks fine" in html and "test-model" in html

    def test_it_stores_the_verdict_beside_the_original_labels(self, client, researcher, overlap):
        pool, items = overlap
        client.force_login(researcher)

        response = client.post(
            f"/pools/{pool.name}/adjudicate/",
            {"item": items[0].public_id, "label": "misgendering", "extraneous": "no", "notes": "she in line 2"},
        )

        assert response.status_code == 302
        verdict = Adjudication.objects.get(item=items[0])
        assert (verdict.label, verdict.extraneous, verdict.adjudicator) == ("misgendering", False, researcher)
        assert sorted(Annotation.objects.filter(item=items[0]).values_list("label", flat=True)) == [
            "correct",
            "misgendering",
        ]

    def test_it_updates_an_earlier_verdict(self, client, researcher, overlap):
        pool, items = overlap
        client.force_login(researcher)
        url = f"/pools/{pool.name}/adjudicate/"
        client.post(url, {"item": items[0].public_id, "label": "misgendering", "extraneous": ""})

        client.post(url, {"item": items[0].public_id, "label": "correct", "extraneous": "yes"})

        verdict = Adjudication.objects.get()
        assert (verdict.label, verdict.extraneous) == ("correct", True)

    def test_it_rejects_a_label_outside_the_pools_set(self, client, researcher, overlap):
        pool, items = overlap
        client.force_login(researcher)

        client.post(f"/pools/{pool.name}/adjudicate/", {"item": items[0].public_id, "label": "plural_they"})

        assert not Adjudication.objects.exists()


@pytest.mark.django_db
class TestAdminPages:
    def test_it_samples_a_pool_from_the_page(self, client, admin_user):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))
        client.force_login(admin_user)

        response = client.post("/pools/new/", {"name": "web", "jobs": str(job.pk), "per_cell": 5, "seed": 1})

        assert response.status_code == 302 and response.url == "/pools/web/"
        assert PoolItem.objects.filter(pool__name="web").count() == 5

    def test_it_shows_the_short_cells_on_the_page(self, client, admin_user):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))
        client.force_login(admin_user)

        response = client.post("/pools/new/", {"name": "web", "jobs": str(job.pk), "per_cell": 10, "seed": 1})

        assert response.status_code == 200
        assert "too few generations" in response.content.decode()
        assert not Pool.objects.exists()

    def test_it_assigns_from_the_page(self, client, admin_user, annotator, second_annotator):
        pool, _ = pool_for(items=6)
        client.force_login(admin_user)

        response = client.post(f"/pools/{pool.name}/assign/", {"annotators": "ana,bo", "overlap": 2, "seed": 0})

        assert response.status_code == 302
        assert Assignment.objects.filter(pool=pool).count() == 8

    def test_it_shows_assignment_errors_on_the_page(self, client, admin_user, annotator):
        pool, _ = pool_for(items=2)
        client.force_login(admin_user)

        response = client.post(f"/pools/{pool.name}/assign/", {"annotators": "ana,ghost", "overlap": 0, "seed": 0})

        assert "no such user: ghost" in response.content.decode()
        assert not Assignment.objects.exists()
