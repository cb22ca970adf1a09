"""Label files through the API (`POST /api/pools/{name}/imports/` with `kind` labels or judge_labels) and the pool
page: a preview writes nothing, an import writes everything or nothing, errors name the uploaded file by its own
name and line, and only researchers may upload."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation
from judging.models import JudgeRun
from tests.annotation.imported_study import build_pool, write_judge, write_long

pytestmark = pytest.mark.django_db


def as_user(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def study():
    return build_pool()


def _upload(path, name=None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes(), content_type="text/csv")


def test_a_preview_shows_the_first_rows_and_writes_nothing(study, researcher, tmp_path):
    path = write_long(study, tmp_path / "people.csv")
    response = as_user(researcher).post(
        f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(path)], "kind": "labels", "preview": "true"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] and len(body["rows"]) == 5 and body["new"] == sum(len(g) for g in study.people.values())
    assert not Annotation.objects.exists()


def test_people_labels_import_and_a_second_upload_changes_nothing(study, researcher, tmp_path):
    path = write_long(study, tmp_path / "people.csv")
    client = as_user(researcher)
    first = client.post(f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(path)], "kind": "labels"})
    assert first.status_code == 201, first.content
    assert first.json()["new"] == Annotation.objects.count() > 0
    again = client.post(f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(path)], "kind": "labels"})
    assert again.status_code == 201 and again.json()["new"] == 0 and again.json()["unchanged"] == first.json()["new"]


def test_a_refused_upload_names_the_uploaded_file_and_writes_nothing(study, researcher, tmp_path):
    item = next(iter(study.people))
    bad = tmp_path / "local-name.csv"
    bad.write_text(f"item,annotator,label\n{item},a,correct\n{item},b,unsure\n", encoding="utf-8")
    response = as_user(researcher).post(
        f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(bad, "My labels.csv")], "kind": "labels"}
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        f"My labels.csv:3: item '{item}', annotator 'b': label 'unsure' is not one of the pool's labels "
        "(misgendering, correct)"
    ]
    assert not Annotation.objects.exists()


def test_judge_labels_make_one_imported_run(study, researcher, tmp_path):
    path = write_judge(study, tmp_path / "judge.csv")
    response = as_user(researcher).post(
        f"/api/pools/{study.pool.name}/imports/",
        {"files": [_upload(path)], "kind": "judge_labels", "judge": "api-judge", "model_id": "gpt-4o",
         "prompt": "Is the person misgendered?"},
    )  # fmt: skip
    assert response.status_code == 201, response.content
    run = JudgeRun.objects.get(pk=response.json()["run"])
    assert response.json()["labels"] == run.labels.count() == len(study.judge)
    assert run.origin == "imported" and run.judge.template == "Is the person misgendered?"


def test_an_annotator_may_not_upload(study, annotator, tmp_path):
    path = write_long(study, tmp_path / "people.csv")
    response = as_user(annotator).post(
        f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(path)], "kind": "labels"}
    )
    assert response.status_code == 403
    assert not Annotation.objects.exists()


def test_the_api_refuses_a_session_post_without_csrf(study, researcher, tmp_path):
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    path = write_long(study, tmp_path / "people.csv")
    response = client.post(f"/api/pools/{study.pool.name}/imports/", {"files": [_upload(path)], "kind": "labels"})
    assert response.status_code == 403
    assert not Annotation.objects.exists()


class TestPoolPage:
    def _client(self, user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    def test_the_page_offers_the_label_upload(self, study, researcher):
        page = self._client(researcher).get(f"/pools/{study.pool.name}/")
        assert page.status_code == 200
        assert b'action="/pools/byo/labels/"' in page.content and b"js/label-upload.js" in page.content

    def test_a_preview_without_a_script_shows_the_first_rows_and_writes_nothing(self, study, researcher, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        page = self._client(researcher).post(
            f"/pools/{study.pool.name}/labels/", {"files": _upload(path), "kind": "labels", "preview": "true"}
        )
        assert page.status_code == 200
        first = next(iter(study.people))
        assert b"Nothing written yet." in page.content and first.encode() in page.content
        assert not Annotation.objects.exists()

    def test_an_import_from_the_page_writes_and_says_so(self, study, researcher, tmp_path):
        path = write_judge(study, tmp_path / "judge.csv")
        client = self._client(researcher)
        response = client.post(
            f"/pools/{study.pool.name}/labels/",
            {"files": _upload(path), "kind": "judge_labels", "judge": "api-judge", "model_id": "gpt-4o"},
        )
        assert response.status_code == 302
        assert JudgeRun.objects.get().labels.count() == len(study.judge)
        assert f"{len(study.judge)} labels imported".encode() in client.get(response.url).content

    def test_a_refused_file_is_named_on_the_page(self, study, researcher, tmp_path):
        bad = tmp_path / "x.csv"
        bad.write_text("item,annotator,label\nnowhere,a,correct\n", encoding="utf-8")
        page = self._client(researcher).post(
            f"/pools/{study.pool.name}/labels/", {"files": _upload(bad, "Their file.csv"), "kind": "labels"}
        )
        assert page.status_code == 400
        assert b"Their file.csv:2: item &#x27;nowhere&#x27;" in page.content
        assert not Annotation.objects.exists()

    def test_an_annotator_cannot_upload_from_the_page(self, study, annotator, tmp_path):
        path = write_long(study, tmp_path / "people.csv")
        response = self._client(annotator).post(
            f"/pools/{study.pool.name}/labels/", {"files": _upload(path), "kind": "labels"}
        )
        assert response.status_code in (302, 403)
        assert not Annotation.objects.exists()

    def test_free_text_generations_are_previewed_with_their_codebook(self, study, researcher):
        from annotation.models import PoolItem
        from tests.conftest import DEMO

        byos = DEMO / "byos"
        page = self._client(researcher).post(
            f"/pools/{study.pool.name}/import/",
            {
                "csv_files": SimpleUploadedFile("gens.csv", (byos / "generations.csv").read_bytes()),
                "codebook": SimpleUploadedFile("families.csv", (byos / "codebook.csv").read_bytes()),
                "labels": "misgendering,correct",
                "kind": "study",
                "preview": "true",
            },
        )
        assert page.status_code == 200, page.content.decode()[-3000:]
        assert b"Nothing written yet: 12 rows read" in page.content and b"Ey&#x27;ll pick them" in page.content
        assert not PoolItem.objects.filter(external_id="n04").exists()

    def test_generations_are_previewed_before_they_are_written(self, study, researcher):
        from annotation.models import PoolItem

        before = PoolItem.objects.count()
        content = (
            "template,random_pre_gen,correct,pronoun,model\n"
            "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it.,"
            "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. Xe smiled.,1.0,xe,model-a\n"
        )
        upload = SimpleUploadedFile("gens.csv", content.encode(), content_type="text/csv")
        page = self._client(researcher).post(
            f"/pools/{study.pool.name}/import/", {"csv_files": upload, "kind": "study", "preview": "true"}
        )
        assert page.status_code == 200, page.content.decode()[-2000:]
        assert b"Nothing written yet: 1 rows read" in page.content and b"Xe smiled." in page.content
        assert PoolItem.objects.count() == before


@pytest.mark.django_db(transaction=True)  # the import runs after its request commits, in a thread of its own
def test_free_text_generations_with_their_codebook_and_labels_import_through_the_api(researcher):
    import threading

    from annotation.models import Pool, PoolItem
    from tests.conftest import DEMO
    from tests.factories import PoolFactory

    pool = PoolFactory(name="byos-api")
    byos = DEMO / "byos"

    def files():
        return {
            "files": [SimpleUploadedFile("gens.csv", (byos / "generations.csv").read_bytes(), content_type="text/csv")],
            "codebook": SimpleUploadedFile("families.csv", (byos / "codebook.csv").read_bytes()),
            "labels": "misgendering,correct",
            "kind": "generations",
        }

    client = as_user(researcher)
    preview = client.post(f"/api/pools/{pool.name}/imports/", {**files(), "preview": "true"}).json()
    assert preview["ok"], preview["errors"]
    assert preview["rows_read"] == 12 and not PoolItem.objects.filter(pool=pool).exists()
    queued = client.post(f"/api/pools/{pool.name}/imports/", files())
    assert queued.status_code == 202, queued.content
    for thread in threading.enumerate():
        if thread.name.startswith("concord-job-"):
            thread.join(timeout=60)
    state = client.get(f"/api/pools/{pool.name}/imports/{queued.json()['id']}/").json()
    assert state["status"] == "done", state
    assert PoolItem.objects.filter(pool=pool).count() == 12
    assert Pool.objects.get(pk=pool.pk).labels == ["misgendering", "correct"]
    bad = client.post(
        f"/api/pools/{pool.name}/imports/",
        {**files(), "codebook": SimpleUploadedFile("families.csv", b"base,nom\nzz1,zz\n")},
    )
    assert bad.status_code == 400 and bad.json()["detail"].startswith("codebook: ")


def test_free_text_generations_are_previewed_through_the_api(researcher):
    from annotation.models import PoolItem
    from tests.conftest import DEMO
    from tests.factories import PoolFactory

    pool = PoolFactory(name="byos-preview", labels=["misgendering", "correct"])
    # MISGENDERED's families only: the page's and the API's generations upload take no codebook of their own yet
    lines = (DEMO / "byos" / "generations.csv").read_text(encoding="utf-8").splitlines()
    content = "\n".join(line for line in lines if ",ey," not in line and ",e," not in line).encode()
    upload = SimpleUploadedFile("my generations.csv", content, content_type="text/csv")
    response = as_user(researcher).post(
        f"/api/pools/{pool.name}/imports/", {"files": [upload], "kind": "generations", "preview": "true"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"], body["errors"]
    assert body["rows_read"] == len(content.splitlines()) - 1 == 7 and len(body["rows"]) == 5
    assert body["rows"][0]["file"] == "my generations.csv" and body["rows"][0]["item"] == "n01"
    assert not PoolItem.objects.filter(pool=pool).exists()
