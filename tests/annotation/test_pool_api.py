"""The REST API for pools, imports and assignments (annotation/pool_apis.py): the pages' services and roles."""

import csv
import io
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Assignment, Pool, PoolImport, PoolItem
from generation.models import JobInput
from tests.annotation.factories import job_with_generations, pool_for

MIS = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
MIS_PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "


def as_user(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def csv_upload(name: str, rows: list[list[str]]) -> SimpleUploadedFile:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["template", "random_pre_gen", "correct", "pronoun", "model"])
    writer.writerows(rows)
    return SimpleUploadedFile(name, buffer.getvalue().encode(), content_type="text/csv")


def imports_finish() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith("concord-job-"):
            thread.join(timeout=60)


@pytest.mark.django_db
class TestPools:
    def test_it_draws_a_pool_from_a_finished_job_for_an_admin(self, admin_user):
        job = job_with_generations(instances_per_pronoun=3, samples=2, pronouns=("he",), settings=("pre",))

        response = as_user(admin_user).post(
            "/api/pools/", {"name": "drawn", "jobs": [job.pk], "instances": 2, "seed": 7}, format="json"
        )

        assert response.status_code == 201, response.content
        body = response.json()
        # 2 whole instances of the one cell, each with both its samples.
        assert body["pool"]["name"] == "drawn" and body["pool"]["items"] == 4
        assert PoolItem.objects.filter(pool__name="drawn").count() == 4

    def test_a_researcher_lists_pools_but_may_not_draw_one(self, researcher):
        pool, _ = pool_for(items=2)
        client = as_user(researcher)

        listed = client.get("/api/pools/")
        refused = client.post("/api/pools/", {"name": "mine"}, format="json")

        assert listed.status_code == 200
        assert [(p["name"], p["items"], p["assignments"]) for p in listed.json()] == [(pool.name, 2, 0)]
        assert refused.status_code == 403
        assert not Pool.objects.filter(name="mine").exists()

    def test_a_pool_that_cannot_be_drawn_is_400_and_writes_nothing(self, admin_user):
        response = as_user(admin_user).post("/api/pools/", {"name": "empty", "jobs": [999]}, format="json")
        assert response.status_code == 400
        assert not Pool.objects.filter(name="empty").exists()

    def test_it_shows_a_pools_progress_per_annotator_and_cell(self, researcher, annotator):
        pool, items = pool_for(annotator, items=3)
        from tests.factories import AnnotationFactory

        AnnotationFactory(item=items[0], annotator=annotator)

        response = as_user(researcher).get(f"/api/pools/{pool.name}/")

        assert response.status_code == 200
        body = response.json()
        assert [(a["username"], a["assigned"], a["done"], a["percent"]) for a in body["annotators"]] == [
            ("ana", 3, 1, 33)
        ]
        assert sum(cell["assignments"] for cell in body["cells"]) == 3
        assert (body["active"], body["active_judge_run"], body["active_budget"]) == (False, None, None)


@pytest.mark.django_db
class TestAssignments:
    def test_an_admin_shares_a_pool_out(self, admin_user, annotator, second_annotator):
        pool, _ = pool_for(items=4)

        response = as_user(admin_user).post(
            f"/api/pools/{pool.name}/assignments/", {"annotators": ["ana", "bo"], "overlap": 2}, format="json"
        )

        assert response.status_code == 201, response.content
        body = response.json()
        # 4 items, one annotator each, plus a second annotator on 2 overlap items.
        assert (body["created"], body["overlap_items"]) == (6, 2)
        assert Assignment.objects.filter(pool=pool).count() == 6

    def test_an_unknown_annotator_is_400_and_nothing_is_assigned(self, admin_user, annotator):
        pool, _ = pool_for(items=2)
        response = as_user(admin_user).post(
            f"/api/pools/{pool.name}/assignments/", {"annotators": ["ana", "nobody"]}, format="json"
        )
        assert response.status_code == 400
        assert "nobody" in response.json()["detail"]
        assert not Assignment.objects.exists()

    def test_a_researcher_may_not_assign(self, researcher, annotator):
        pool, _ = pool_for(items=2)
        response = as_user(researcher).post(
            f"/api/pools/{pool.name}/assignments/", {"annotators": ["ana"]}, format="json"
        )
        assert response.status_code == 403
        assert not Assignment.objects.exists()


@pytest.mark.django_db(transaction=True)  # the import runs after its request commits, in a thread of its own
class TestImports:
    def test_it_queues_an_upload_answers_202_and_the_import_ends_done(self, researcher):
        pool, _ = pool_for(items=0)
        client = as_user(researcher)
        rows = [[MIS, MIS_PRE + "Xe smiled.", "1.0", "xe", "m"], [MIS, MIS_PRE + "He left.", "1.0", "xe", "m"]]

        response = client.post(
            f"/api/pools/{pool.name}/imports/", {"files": [csv_upload("gens.csv", rows)], "kind": "study"}
        )
        imports_finish()
        state = client.get(f"/api/pools/{pool.name}/imports/{response.json()['id']}/").json()

        assert response.status_code == 202, response.content
        assert response.json()["status"] == "queued" and response.json()["files"] == ["gens.csv"]
        assert (state["status"], state["rows_read"], state["items_created"], state["heuristic_mismatches"]) == (
            "done",
            2,
            2,
            1,  # the file says correct; "He" misgenders Robin
        )
        assert PoolItem.objects.filter(pool=pool).count() == 2
        assert not JobInput.objects.exists()  # the stored upload is gone once the job ended

    def test_a_bad_file_ends_failed_with_its_errors_and_writes_nothing(self, researcher):
        pool, _ = pool_for(items=0)
        client = as_user(researcher)
        rows = [[MIS, MIS_PRE + "Xe smiled.", "1.0", "xe", "m"], [MIS, MIS_PRE + "x", "1.0", "ze", "m"]]

        response = client.post(f"/api/pools/{pool.name}/imports/", {"files": [csv_upload("bad.csv", rows)]})
        imports_finish()
        (state,) = client.get(f"/api/pools/{pool.name}/imports/").json()

        assert response.status_code == 202
        assert state["status"] == "failed"
        assert state["errors"] == ["bad.csv:3: unknown pronoun 'ze' (known: he, she, they, xe)"]
        assert not PoolItem.objects.exists()

    def test_an_upload_without_files_is_400(self, researcher):
        pool, _ = pool_for(items=0)
        response = as_user(researcher).post(f"/api/pools/{pool.name}/imports/", {"kind": "study"})
        assert response.status_code == 400
        assert not PoolImport.objects.exists()

    def test_an_annotator_may_not_import(self, annotator):
        pool, _ = pool_for(items=0)
        response = as_user(annotator).post(
            f"/api/pools/{pool.name}/imports/", {"files": [csv_upload("g.csv", [[MIS, MIS_PRE + "x", "1", "xe", "m"]])]}
        )
        assert response.status_code == 403
        assert not PoolImport.objects.exists()


@pytest.mark.django_db
class TestUploadLimit:
    def test_a_body_over_max_upload_mb_is_413_with_a_clear_message_and_writes_nothing(self, researcher, settings):
        settings.CONCORD_MAX_UPLOAD_MB = 1
        pool, _ = pool_for(items=0)
        big = SimpleUploadedFile("big.csv", b"x" * (1024 * 1024 + 1), content_type="text/csv")
        client = as_user(researcher)

        api = client.post(f"/api/pools/{pool.name}/imports/", {"files": [big]})
        big.seek(0)
        from django.test import Client

        page_client = Client()
        page_client.force_login(researcher)
        page = page_client.post(f"/pools/{pool.name}/import/", {"csv_files": big, "kind": "study"})

        assert api.status_code == 413
        assert "at most 1 MB" in api.json()["detail"] and "MAX_UPLOAD_MB" in api.json()["detail"]
        assert page.status_code == 413
        assert b"at most 1 MB" in page.content
        assert not PoolImport.objects.exists()


class TestTheOneCsvRenderer:
    def test_it_writes_rows_with_a_header_and_neutralises_formulas(self):
        from common.renderers import CsvRenderer

        body = CsvRenderer().render([{"name": "=HYPERLINK(1)", "n": -2}, {"name": "ok", "extra": "@x"}])

        assert body.decode() == "name,n,extra\n'=HYPERLINK(1),-2,\nok,,'@x\n"

    def test_it_passes_files_already_written_and_writes_errors_as_json(self):
        from common.renderers import CsvRenderer

        assert CsvRenderer().render(b"a,b\n1,2\n") == b"a,b\n1,2\n"
        assert CsvRenderer().render({"detail": "Not found."}) == b'{"detail": "Not found."}'

    @pytest.mark.django_db
    def test_the_pool_list_comes_as_csv(self, researcher):
        pool, _ = pool_for(items=2)
        response = as_user(researcher).get("/api/pools/", {"format": "csv"})
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert [(row["name"], row["items"]) for row in rows] == [(pool.name, "2")]
