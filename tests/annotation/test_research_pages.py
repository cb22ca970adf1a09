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

        assert [row.item for row, _ in response.context["rows"]] == [items[0]]
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

        response = client.post("/pools/new/", {"name": "web", "jobs": str(job.pk), "instances": 1, "seed": 1})

        assert response.status_code == 302 and response.url == "/pools/web/"
        assert PoolItem.objects.filter(pool__name="web").count() == 5

    def test_it_shows_the_short_cells_on_the_page(self, client, admin_user):
        job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))
        client.force_login(admin_user)

        response = client.post("/pools/new/", {"name": "web", "jobs": str(job.pk), "instances": 2, "seed": 1})

        assert response.status_code == 200
        assert "too few instances with all their samples" in response.content.decode()
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


@pytest.mark.django_db
class TestTimePerItem:
    def test_it_shows_the_median_and_total_seconds_per_annotator(self, client, researcher, annotator, second_annotator):
        pool, items = pool_for(annotator, second_annotator, items=3)
        for item, seconds in zip(items, [4.0, 10.0, 1.0], strict=True):
            AnnotationFactory(item=item, annotator=annotator, seconds=seconds)
        AnnotationFactory(item=items[0], annotator=second_annotator, seconds=7.5)
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/")

        times = {row.username: (row.median_seconds, row.total_seconds) for row in response.context["annotators"]}
        assert times == {"ana": (4.0, 15.0), "bo": (7.5, 7.5)}
        html = response.content.decode()
        assert "Median seconds per item" in html and ">4.0<" in html and ">15<" in html

    def test_it_shows_a_dash_for_an_annotator_without_annotations(self, client, researcher, annotator):
        pool, _ = pool_for(annotator, items=1)
        client.force_login(researcher)

        response = client.get(f"/pools/{pool.name}/")

        [row] = response.context["annotators"]
        assert (row.median_seconds, row.total_seconds) == (None, 0)


@pytest.mark.django_db
class TestFormsPickFromLists:
    def test_the_pool_form_lists_finished_jobs_as_checkboxes(self, client, admin_user):
        done = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("he",), settings=("pre",))
        running = job_with_generations(model="other", instances_per_pronoun=1, samples=1, status="running")
        client.force_login(admin_user)

        html = client.get("/pools/new/").content.decode()

        assert f'type="checkbox" name="jobs" value="{done.pk}"' in html
        assert f'name="jobs" value="{running.pk}"' not in html
        assert 'type="radio" name="draw" value="instances"' in html

    def test_the_pool_form_takes_several_jobs_and_the_per_sample_index_draw(self, client, admin_user):
        first = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))
        second = job_with_generations(
            model="m2", instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",)
        )
        client.force_login(admin_user)

        response = client.post(
            "/pools/new/",
            {"name": "web", "jobs": [first.pk, second.pk], "draw": "per-sample-index", "per_cell": 5, "seed": 0},
        )

        assert response.status_code == 302
        assert set(Pool.objects.get(name="web").jobs.all()) == {first, second}
        assert PoolItem.objects.filter(pool__name="web").count() == 10

    def test_the_assignment_form_lists_annotators_as_checkboxes(self, client, admin_user, annotator, second_annotator):
        pool, _ = pool_for(items=4)
        client.force_login(admin_user)

        html = client.get(f"/pools/{pool.name}/assign/").content.decode()
        response = client.post(f"/pools/{pool.name}/assign/", {"annotators": ["ana", "bo"], "overlap": 1, "seed": 0})

        assert 'type="checkbox" name="annotators" value="ana"' in html and 'value="bo"' in html
        assert 'value="ada_admin"' not in html
        assert response.status_code == 302
        assert Assignment.objects.filter(pool=pool).count() == 5


MIS = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
MIS_PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "


def upload(name: str, rows: list[list[str]], header=("template", "random_pre_gen", "correct", "pronoun", "model")):
    import csv
    import io

    from django.core.files.uploadedfile import SimpleUploadedFile

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return SimpleUploadedFile(name, buffer.getvalue().encode("utf-8"), content_type="text/csv")


def imports_finish() -> None:
    """Imports from the page run in the background (a thread under the embedded default): wait for them."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("concord-job-"):
            thread.join(timeout=60)


@pytest.mark.django_db(transaction=True)  # the import runs after its request commits, in a thread of its own
class TestImportFromThePoolPage:
    def test_it_imports_an_uploaded_file_into_the_pool(self, client, researcher):
        pool, _ = pool_for(items=0)
        client.force_login(researcher)
        rows = [
            [MIS, MIS_PRE + "Xe smiled.", "1.0", "xe", "model-a"],
            [MIS, MIS_PRE + "He left.", "1.0", "xe", "model-a"],
        ]

        response = client.post(f"/pools/{pool.name}/import/", {"csv_files": upload("gens.csv", rows), "kind": "study"})
        imports_finish()

        assert response.status_code == 302 and response.url.endswith(f"/pools/{pool.name}/#import")
        items = PoolItem.objects.filter(pool=pool).order_by("source_line")
        assert [(i.continuation, i.source_file, i.source_line) for i in items] == [
            ("Xe smiled.", "gens.csv", 2),
            ("He left.", "gens.csv", 3),
        ]
        page = client.get(response.url).content.decode()
        assert "2 rows read, 2 new items" in page and "differs from the file on 1 rows" in page

    def test_it_imports_gold_items_from_the_page(self, client, researcher):
        pool, _ = pool_for(items=0)
        client.force_login(researcher)
        header = ("template", "random_pre_gen", "correct", "pronoun", "model", "gold_label")
        rows = [[MIS, MIS_PRE + "He left.", "0.0", "xe", "m", "misgendering"]]

        client.post(f"/pools/{pool.name}/import/", {"csv_files": upload("gold.csv", rows, header), "kind": "gold"})
        imports_finish()

        item = PoolItem.objects.get(pool=pool)
        assert (item.kind, item.gold_label) == ("gold", "misgendering")

    def test_it_shows_every_error_on_the_page_and_writes_nothing(self, client, researcher):
        pool, _ = pool_for(items=0)
        client.force_login(researcher)
        rows = [[MIS, MIS_PRE + "Xe smiled.", "1.0", "xe", "m"], [MIS, "Elsewhere.", "1.0", "ze", "m", "extra"]]

        response = client.post(f"/pools/{pool.name}/import/", {"csv_files": upload("bad.csv", rows), "kind": "study"})
        imports_finish()

        assert response.status_code == 302  # queued; the page then shows how it ended
        html = client.get(response.url).content.decode()
        assert "Import failed, nothing was written." in html
        assert "bad.csv:3: 6 fields where the header has 5" in html
        assert not PoolItem.objects.filter(pool=pool).exists()

    def test_it_is_closed_to_annotators(self, client, annotator):
        pool, _ = pool_for(items=0)
        client.force_login(annotator)

        response = client.post(
            f"/pools/{pool.name}/import/",
            {"csv_files": upload("gens.csv", [[MIS, MIS_PRE + "Xe.", "1.0", "xe", "m"]]), "kind": "study"},
        )

        assert response.status_code == 403
        assert not PoolItem.objects.exists()
