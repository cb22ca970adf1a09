"""The audit trail (docs/operations.md, "The audit trail"): an entry for each recorded action, with who and when,
and never a password or a token key; admins browse it with filters and download it as CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest
from auditlog.models import LogEntry
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.roles import ANNOTATOR, RESEARCHER
from accounts.services import user_create_or_update
from annotation.services.adjudication import adjudication_save
from annotation.services.assignment import assignments_create
from annotation.services.guidelines import pool_guidelines_set
from annotation.services.imports import generations_import
from annotation.services.imports.jobs import import_job_create
from annotation.services.pool import pool_sample
from common.audit import AuditSecretError, audit_event, audit_record
from generation.jobs.services import job_cancel, job_create, job_resume
from generation.models import JobStatus
from judging.services.judges import judge_add
from tests.annotation.factories import job_with_generations, pool_for
from tests.conftest import PASSWORD
from tests.factories import GenerationJobFactory, InstanceFactory, LanguageModelFactory, PoolFactory, PoolItemFactory

SUBMIT = "/api/annotations/"
IMPORT_CSV = (
    "template,random_pre_gen,correct,pronoun,model\n"
    '"Robin/\'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it.",'
    '"Robin/\'s pronouns are xe/xem/xyrs. Robin baked bread. Xe smiled.",1.0,xe,model-a\n'
)


def events(**filters) -> list[str]:
    return [audit_event(entry) for entry in LogEntry.objects.filter(**filters).order_by("pk")]


def last(event: str) -> LogEntry:
    return LogEntry.objects.filter(additional_data__event=event).latest("pk")


@pytest.mark.django_db
class TestUsersAndTokens:
    def test_user_creation_role_change_and_deactivation_are_recorded_without_the_password(self):
        user, _ = user_create_or_update(username="neo", role=ANNOTATOR, password=PASSWORD)
        user_create_or_update(username="neo", role=RESEARCHER, password="another-secret-1")
        user.refresh_from_db()
        user.is_active = False
        user.save()

        entries = LogEntry.objects.filter(content_type__model="user", object_pk=str(user.pk)).order_by("pk")
        actions = [(entry.get_action_display(), sorted(entry.changes or {})) for entry in entries]
        assert ("create", ["is_active", "is_staff", "is_superuser", "username"]) in actions
        assert any("groups" in changes for _, changes in actions)  # the role, as group membership
        deactivated = [entry for entry in entries if "is_active" in (entry.changes or {})][-1]
        assert deactivated.changes["is_active"] == ["True", "False"]
        assert not any("password" in json.dumps(entry.changes) for entry in entries)

    def test_group_entries_name_only_the_roles_that_changed(self):
        user, _ = user_create_or_update(username="neo", role=ANNOTATOR, password=PASSWORD)
        user_create_or_update(username="neo", role=ANNOTATOR, password="another-secret-1")  # the same role again
        user_create_or_update(username="neo", role=RESEARCHER, password="another-secret-2")

        entries = LogEntry.objects.filter(content_type__model="user", object_pk=str(user.pk)).order_by("pk")
        groups = [entry.changes["groups"] for entry in entries if "groups" in (entry.changes or {})]
        assert groups == [
            {"type": "m2m", "operation": "add", "objects": [ANNOTATOR]},
            {"type": "m2m", "operation": "delete", "objects": [ANNOTATOR]},
            {"type": "m2m", "operation": "add", "objects": [RESEARCHER]},
        ]

    def test_a_token_issued_and_revoked_is_recorded_on_the_user_without_its_key(self, annotator):
        client = APIClient()
        response = client.post("/api/auth/token/", {"username": "ana", "password": PASSWORD}, format="json")
        key = response.json()["token"]
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.post("/api/auth/logout/").status_code in (200, 204)

        assert events(object_pk=str(annotator.pk), content_type__model="user")[-2:] == ["token.create", "token.revoke"]
        assert last("token.create").actor == annotator
        every = LogEntry.objects.all()
        assert not any(key in f"{e.object_pk}{e.object_repr}{e.changes}{e.additional_data}" for e in every)
        assert not Token.objects.exists()


@pytest.mark.django_db
class TestStudyActions:
    def test_pool_creation_guidelines_and_assignments_are_recorded_with_their_actor(
        self, admin_user, researcher, annotator
    ):
        job = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("xe",), settings=("pre",))
        pool = pool_sample(name="audited", job_ids=[job.pk], instances=1, per_cell=1, created_by=admin_user).pool
        pool_guidelines_set(pool=pool, text="Read carefully.", user=researcher)
        assignments_create(pool=pool, usernames=["ana"], user=admin_user)

        assert events(object_pk=str(pool.pk), content_type__model="pool") == [
            "pool.create",
            "pool.guidelines",
            "pool.assign",
        ]
        assert last("pool.create").actor == admin_user
        assert last("pool.guidelines").changes == {"guideline_version": [None, 1]}
        assert last("pool.assign").additional_data["annotators"] == ["ana"]

    def test_every_change_to_an_annotation_keeps_the_old_and_new_label_flag_and_words(self, annotator):
        _, items = pool_for(annotator, items=1, continuation="The man left.")
        client = APIClient()
        client.force_authenticate(annotator)
        item = items[0].public_id
        client.post(SUBMIT, {"item": item, "label": "correct"}, format="json")
        client.post(
            SUBMIT,
            {"item": item, "label": "misgendering", "extraneous": True, "extraneous_spans": [[4, 7]]},
            format="json",
        )

        first, second = LogEntry.objects.filter(additional_data__event="annotation.save").order_by("pk")
        assert first.changes == {"label": [None, "correct"], "extraneous": [None, False], "spans": [None, []]}
        assert second.changes == {
            "label": ["correct", "misgendering"],
            "extraneous": [False, True],
            "spans": [[], [[4, 7]]],
        }
        assert second.actor == annotator and second.get_action_display() == "update"

    def test_an_adjudication_is_recorded_with_the_verdict_before_and_after(self, researcher):
        pool = PoolFactory()
        item = PoolItemFactory(pool=pool)
        adjudication_save(item=item, label="correct", adjudicator=researcher)
        adjudication_save(item=item, label="misgendering", adjudicator=researcher)

        entry = last("adjudication.save")
        assert entry.changes["label"] == ["correct", "misgendering"] and entry.actor == researcher

    def test_jobs_created_cancelled_and_resumed_are_recorded(self, admin_user):
        model = LanguageModelFactory(name="audit-model")
        instance = InstanceFactory(pronoun="xe")
        job = job_create(
            model=model.name,
            dataset=instance.dataset.name,
            pronouns=["xe"],
            samples=1,
            max_new_tokens=1,
            queue=False,
            created_by=admin_user,
        )
        job_cancel(job=job, user=admin_user)
        failed = GenerationJobFactory(model=model, status=JobStatus.FAILED)
        job_resume(job_id=failed.pk, queue=False, user=admin_user)

        assert events(object_pk=str(job.pk), content_type__model="job") == ["job.create", "job.cancel"]
        assert last("job.cancel").changes == {"status": ["queued", "cancelled"]}
        assert events(object_pk=str(failed.pk), content_type__model="job") == ["job.resume"]
        assert {last(name).actor for name in ("job.create", "job.cancel", "job.resume")} == {admin_user}

    def test_a_judge_added_is_recorded(self, admin_user):
        judge, _ = judge_add(
            name="audited-judge", model=LanguageModelFactory(name="judge-model"), created_by=admin_user
        )
        entry = last("judge.add")
        assert entry.object_pk == str(judge.pk) and entry.additional_data["version"] == 1

    def test_imports_are_recorded(self, tmp_path, researcher):
        path = tmp_path / "pre.csv"
        path.write_text(IMPORT_CSV, encoding="utf-8")
        result = generations_import(paths=[path], pool_name="imported", created_by=researcher)
        import_job_create(
            pool=result.pool,
            kind="study",
            files=[SimpleUploadedFile("more.csv", IMPORT_CSV.encode())],
            created_by=researcher,
        )

        assert events(object_pk=str(result.pool.pk), content_type__model="pool") == ["pool.create", "import.run"]
        assert last("import.run").additional_data["items"] == 1
        assert last("import.create").additional_data["files"] == ["more.csv"]

    def test_an_entry_naming_a_secret_is_refused(self, annotator):
        with pytest.raises(AuditSecretError):
            audit_record(event="x", obj=annotator, changes={"password": ["a", "b"]})
        with pytest.raises(AuditSecretError):
            audit_record(event="x", obj=annotator, data={"token_key": "abc"})


@pytest.mark.django_db
class TestBrowsing:
    @pytest.fixture
    def trail(self, admin_user, researcher):
        first = PoolFactory(name="first")
        second = PoolFactory(name="second")
        pool_guidelines_set(pool=first, text="one", user=researcher)
        pool_guidelines_set(pool=second, text="=HYPERLINK(1)", user=admin_user)
        return first, second

    def test_admins_filter_by_object_user_and_date(self, client, admin_user, trail):
        first, _ = trail
        client.force_login(admin_user)

        by_object = client.get("/audit/", {"object_type": "pool", "object_id": first.pk}).content.decode()
        by_user = client.get("/audit/", {"user": admin_user.username}).content.decode()
        future = client.get("/audit/", {"since": "2999-01-01"}).content.decode()

        assert "<td>first</td>" in by_object and "<td>second</td>" not in by_object
        assert "<td>second</td>" in by_user and "<td>first</td>" not in by_user
        assert "No entries." in future
        assert client.get("/audit/", {"since": "soon"}).status_code == 400

    def test_the_csv_holds_every_match_in_spreadsheet_safe_cells(self, client, admin_user, trail):
        client.force_login(admin_user)
        response = client.get("/audit/", {"event": "pool.guidelines", "format": "csv"})

        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert response["Content-Type"].startswith("text/csv")
        assert {row["object"] for row in rows} == {"first", "second"}
        assert all(not row["changes"].startswith("=") for row in rows)

    def test_researchers_see_the_studys_entries_and_not_the_accounts(self, client, researcher, annotator, trail):
        Token.objects.create(user=annotator)  # not recorded here; a role change is, on the user
        user_create_or_update(username="neo", role=ANNOTATOR, password=PASSWORD)
        client.force_login(researcher)

        page = client.get("/audit/")
        rows = list(csv.DictReader(io.StringIO(client.get("/audit/", {"format": "csv"}).content.decode())))

        assert page.status_code == 200
        assert "<td>first</td>" in page.content.decode() and "<td>second</td>" in page.content.decode()
        assert {row["object_type"] for row in rows} == {"pool"}
        assert LogEntry.objects.filter(content_type__model="user").exists()
        assert 'href="/audit/"' in client.get("/pools/").content.decode()

    def test_admins_see_the_accounts_entries_too(self, client, admin_user, trail):
        user_create_or_update(username="neo", role=ANNOTATOR, password=PASSWORD)
        client.force_login(admin_user)

        rows = list(csv.DictReader(io.StringIO(client.get("/audit/", {"format": "csv"}).content.decode())))

        assert {"pool", "user"} <= {row["object_type"] for row in rows}

    def test_annotators_do_not_see_it(self, client, annotator):
        client.force_login(annotator)
        assert client.get("/audit/").status_code == 403

    def test_the_csv_takes_an_api_token_as_the_api_does(self, researcher, trail):
        key = Token.objects.create(user=researcher).key
        client = APIClient()

        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        response = client.get("/audit/", {"event": "pool.guidelines", "format": "csv"})
        client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
        refused = client.get("/audit/", {"format": "csv"})

        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        assert {row["object"] for row in csv.DictReader(io.StringIO(response.content.decode()))} == {"first", "second"}
        assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Token"

    def test_an_annotators_token_is_refused(self, annotator):
        key = Token.objects.create(user=annotator).key
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.get("/audit/", {"format": "csv"}).status_code == 403

    def test_the_page_shows_changes_and_data_as_lines_and_the_csv_as_json(self, client, admin_user, trail):
        first, _ = trail
        long_words = " ".join(f"word{i}" for i in range(60))
        audit_record(
            event="annotation.save",
            obj=first,
            actor=admin_user,
            changes={"label": ["correct", "misgendering"], "words": [None, long_words]},
            data={"items": 3},
        )
        user_create_or_update(username="neo", role=ANNOTATOR, password=PASSWORD)
        client.force_login(admin_user)

        page = client.get("/audit/", {"event": "annotation.save"}).content.decode()
        roles = client.get("/audit/", {"object_type": "user", "user": ""}).content.decode()
        rows = list(
            csv.DictReader(
                io.StringIO(client.get("/audit/", {"event": "annotation.save", "format": "csv"}).content.decode())
            )
        )

        assert "<div>label: correct → misgendering</div>" in page
        assert f"<div>words: none → {long_words}</div>" in page  # whole, not cut
        assert "<div>items: 3</div>" in page and "{&quot;" not in page
        assert f"groups: added {ANNOTATOR}" in roles
        assert json.loads(rows[0]["changes"]) == {"label": ["correct", "misgendering"], "words": [None, long_words]}


@pytest.mark.django_db
def test_no_entry_holds_a_password_hash_or_a_token_key(annotator, admin_user):
    Token.objects.create(user=annotator)
    user_create_or_update(username="zed", role=ANNOTATOR, password=PASSWORD)
    secrets = [
        *get_user_model().objects.values_list("password", flat=True),
        *Token.objects.values_list("key", flat=True),
    ]
    text = json.dumps([list(row) for row in LogEntry.objects.values_list("changes", "additional_data", "object_repr")])
    assert LogEntry.objects.exists()
    assert not any(secret in text for secret in secrets)
