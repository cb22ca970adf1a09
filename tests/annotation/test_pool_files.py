"""A researcher's own study from the browser or the API (docs/guide-researcher.md, "Bring your own study"): an empty
pool with its label set in one of their projects ("New pool from files", `POST /api/pools/` with `labels`), then
its uploads; the researcher who made a pool assigns its annotators."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import DEFAULT_PROJECT
from accounts.projects import project_add
from accounts.roles import RESEARCHER
from accounts.services import user_create_or_update
from annotation.models import Assignment, Pool
from tests.conftest import PASSWORD
from tests.factories import PoolFactory, PoolItemFactory

pytestmark = pytest.mark.django_db

GENERATIONS = (
    "item,model,dataset,context,generation,pronoun\n"
    'n01,writer,notes,"Write about Alex, who uses xe/xem.",Alex fixed the bike. Xe rode it.,xe\n'
)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def colleague(db):
    """Another researcher of the default project."""
    user, _ = user_create_or_update(username="cleo_colleague", role=RESEARCHER, password=PASSWORD)
    return user


class TestTheApi:
    def test_a_researcher_makes_an_empty_pool_with_its_labels(self, api, researcher):
        from auditlog.models import LogEntry

        api.force_authenticate(researcher)

        response = api.post("/api/pools/", {"name": "byos", "labels": ["yes", "no"], "positive": "yes"}, format="json")

        assert response.status_code == 201, response.content
        body = response.json()
        assert body["short_cells"] == []
        assert body["pool"]["name"] == "byos" and body["pool"]["project"] == DEFAULT_PROJECT
        assert body["pool"]["labels"] == ["yes", "no"] and body["pool"]["positive_label"] == "yes"
        assert body["pool"]["items"] == 0
        pool = Pool.objects.get(name="byos")
        assert (pool.created_by, pool.project.name, pool.positive_label) == (researcher, DEFAULT_PROJECT, "yes")
        assert LogEntry.objects.get(additional_data__event="pool.create").additional_data["items"] == 0

    def test_its_pool_then_takes_the_generations_upload(self, api, researcher):
        from django.core.files.uploadedfile import SimpleUploadedFile

        api.force_authenticate(researcher)
        api.post("/api/pools/", {"name": "byos", "labels": ["misgendering", "correct"]}, format="json")
        upload = SimpleUploadedFile("generations.csv", GENERATIONS.encode(), content_type="text/csv")

        response = api.post("/api/pools/byos/imports/", {"files": [upload], "kind": "generations", "preview": "true"})

        assert response.status_code == 200 and response.json()["ok"] is True
        assert response.json()["rows"][0]["item"] == "n01"

    def test_a_researcher_of_another_project_makes_it_in_theirs(self, api, stranger):
        api.force_authenticate(stranger)

        response = api.post("/api/pools/", {"name": "byos", "labels": ["misgendering", "correct"]}, format="json")

        assert response.status_code == 201
        assert Pool.objects.get(name="byos").project.name == "elsewhere"

    def test_a_researcher_names_one_of_their_projects(self, api, researcher):
        project_add(name="lab-b", members=["rui_researcher"])
        api.force_authenticate(researcher)

        body = {"name": "byos", "labels": ["misgendering", "correct"], "project": "lab-b"}
        response = api.post("/api/pools/", body, format="json")

        assert response.status_code == 201 and response.json()["pool"]["project"] == "lab-b"

    @pytest.mark.parametrize(
        ("body", "field", "message"),
        [
            ({"labels": ["correct"]}, "labels", "Ensure this field has at least 2 elements."),
            ({"labels": ["yes", "no"], "positive": "maybe"}, "labels", "positive label 'maybe' is not in the set"),
            ({"labels": ["a", "b"], "scale": "interval"}, "labels", "an interval scale's labels are numbers"),
            ({"labels": ["1", "2"], "scale": "ratio"}, "scale", "is not a valid choice"),
            ({"labels": ["misgendering", "correct"], "project": "elsewhere"}, "project", "no project 'elsewhere' of"),
            ({"labels": ["misgendering", "correct"], "project": "nowhere"}, "project", "no project 'nowhere' of"),
        ],
    )
    def test_a_bad_request_is_400_naming_the_field_and_writes_nothing(
        self, api, researcher, stranger, body, field, message
    ):
        api.force_authenticate(researcher)

        response = api.post("/api/pools/", {"name": "byos", **body}, format="json")

        assert response.status_code == 400, response.content
        said = response.json()[field]
        assert message in (said if isinstance(said, str) else " ".join(said))
        assert not Pool.objects.exists()

    def test_labels_beside_a_draws_fields_are_a_draw_which_only_an_admin_makes(self, api, researcher):
        api.force_authenticate(researcher)

        for extra in ({"jobs": [1]}, {"seed": 3}):
            response = api.post("/api/pools/", {"name": "byos", "labels": ["yes", "no"], **extra}, format="json")
            assert response.status_code == 403 and "Only admins" in response.json()["detail"]
        assert not Pool.objects.exists()

    def test_it_makes_a_pool_on_a_rating_scale_with_labels_as_written(self, api, researcher):
        api.force_authenticate(researcher)

        body = {"name": "stars", "labels": ["1", "2", "3", "4", "5"], "scale": "ordinal"}
        response = api.post("/api/pools/", body, format="json")
        spelled = api.post("/api/pools/", {"name": "said", "labels": ["Not misgendering", "Yes"]}, format="json")

        assert response.status_code == 201 and response.json()["pool"]["scale"] == "ordinal"
        pool = Pool.objects.get(name="stars")
        assert (pool.scale, pool.labels, pool.created_by) == ("ordinal", ["1", "2", "3", "4", "5"], researcher)
        assert spelled.status_code == 201 and Pool.objects.get(name="said").labels == ["Not misgendering", "Yes"]

    def test_a_taken_name_is_400(self, api, researcher, stranger):
        PoolFactory(name="byos", project=stranger.projects.get())
        api.force_authenticate(researcher)

        response = api.post("/api/pools/", {"name": "byos", "labels": ["misgendering", "correct"]}, format="json")

        assert response.status_code == 400
        assert response.json() == {"name": ["a pool named 'byos' already exists; choose another name"]}

    def test_a_researcher_may_not_draw_a_pool_from_jobs(self, api, researcher):
        api.force_authenticate(researcher)

        response = api.post("/api/pools/", {"name": "drawn"}, format="json")

        assert response.status_code == 403
        assert response.json()["detail"].startswith("Only admins may do this. A researcher makes a pool for their own")
        assert not Pool.objects.exists()

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_no_one_without_the_researcher_role_makes_one(self, api, people, role):
        api.force_authenticate(people[role])

        response = api.post("/api/pools/", {"name": "byos", "labels": ["misgendering", "correct"]}, format="json")

        assert response.status_code == 403
        assert response.json()["detail"] == "Only researchers may do this."
        assert not Pool.objects.exists()

    def test_an_admin_draws_into_the_project_named(self, api, admin_user, stranger):
        from tests.annotation.factories import job_with_generations

        job = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("he",), settings=("pre",))
        api.force_authenticate(admin_user)

        body = {"name": "drawn", "jobs": [job.pk], "instances": 1, "project": "elsewhere"}
        response = api.post("/api/pools/", body, format="json")

        assert response.status_code == 201, response.content
        assert response.json()["pool"]["project"] == "elsewhere"
        assert Pool.objects.get(name="drawn").project.name == "elsewhere"


class TestThePage:
    def test_the_pool_list_offers_new_pool_from_files_to_researchers(self, researcher):
        html = logged_in(researcher).get("/pools/").content.decode()

        assert 'href="/pools/new/files/"' in html and "New pool from files" in html

    def test_the_page_makes_the_pool_and_sends_the_researcher_to_its_uploads(self, researcher):
        client = logged_in(researcher)
        form = client.get("/pools/new/files/")
        assert form.status_code == 200
        assert (
            'name="labels"' in form.content.decode() and f'value="{DEFAULT_PROJECT}" selected' in form.content.decode()
        )

        response = client.post(
            "/pools/new/files/", {"name": "byos", "labels": "misgendering, correct", "project": DEFAULT_PROJECT}
        )

        assert response.status_code == 302 and response.url == "/pools/byos/#import"
        pool = Pool.objects.get(name="byos")
        assert (pool.labels, pool.created_by, pool.project.name) == (["misgendering", "correct"], researcher, "default")
        page = client.get("/pools/byos/").content.decode()
        assert "Upload its generations below, then people&#x27;s labels and judges&#x27; labels." in page
        assert 'id="import"' in page and 'id="labels"' in page

    def test_the_page_makes_an_ordinal_pool_with_a_threshold(self, researcher):
        response = logged_in(researcher).post(
            "/pools/new/files/",
            {"name": "stars", "labels": "1,2,3,4,5", "scale": "ordinal", "positive_at_least": "4",
             "project": DEFAULT_PROJECT},
        )  # fmt: skip

        assert response.status_code == 302
        pool = Pool.objects.get(name="stars")
        assert (pool.labels, pool.scale, pool.positive_at_least) == (["1", "2", "3", "4", "5"], "ordinal", "4")

    def test_a_bad_label_set_is_shown_on_the_form_and_writes_nothing(self, researcher):
        response = logged_in(researcher).post(
            "/pools/new/files/", {"name": "byos", "labels": "yes,no", "positive": "maybe", "project": DEFAULT_PROJECT}
        )

        assert response.status_code == 400
        assert "positive label &#x27;maybe&#x27; is not in the set" in response.content.decode()
        assert 'value="byos"' in response.content.decode()  # what was typed stays
        assert not Pool.objects.exists()

    def test_a_project_not_theirs_is_not_offered_and_refused(self, researcher, stranger):
        client = logged_in(researcher)
        assert 'value="elsewhere"' not in client.get("/pools/new/files/").content.decode()

        response = client.post(
            "/pools/new/files/", {"name": "byos", "labels": "misgendering,correct", "project": "elsewhere"}
        )

        assert response.status_code == 400
        assert not Pool.objects.exists()


class TestWhoAssigns:
    @pytest.fixture
    def made(self, researcher):
        pool = PoolFactory(name="byos", created_by=researcher)
        PoolItemFactory(pool=pool)
        return pool

    def test_the_researcher_who_made_the_pool_assigns_it(self, api, researcher, annotator, made):
        api.force_authenticate(researcher)

        response = api.post("/api/pools/byos/assignments/", {"annotators": ["ana"]}, format="json")

        assert response.status_code == 201 and response.json()["created"] == 1
        assert Assignment.objects.get().annotator == annotator
        page = logged_in(researcher).get("/pools/byos/")
        assert 'href="/pools/byos/assign/">Assign annotators</a>' in page.content.decode()
        assert logged_in(researcher).get("/pools/byos/assign/").status_code == 200

    def test_another_researcher_of_the_project_may_not_and_is_told_who_may(self, api, colleague, annotator, made):
        api.force_authenticate(colleague)

        response = api.post("/api/pools/byos/assignments/", {"annotators": ["ana"]}, format="json")

        assert response.status_code == 403
        assert response.json()["detail"] == (
            "Only admins may do this. A researcher assigns the annotators of the pools they made."
        )
        assert logged_in(colleague).get("/pools/byos/assign/").status_code == 403
        page = logged_in(colleague).get("/pools/byos/").content.decode()
        assert "Assign annotators</a>" not in page
        assert "an admin, or the researcher who made the pool, assigns its annotators" in page
        assert not Assignment.objects.exists()

    def test_a_researcher_of_another_project_gets_404(self, api, stranger, annotator, made):
        api.force_authenticate(stranger)

        assert api.post("/api/pools/byos/assignments/", {"annotators": ["ana"]}, format="json").status_code == 404
        assert logged_in(stranger).get("/pools/byos/assign/").status_code == 404

    def test_an_admin_assigns_any_pool(self, api, admin_user, annotator, made):
        api.force_authenticate(admin_user)

        assert api.post("/api/pools/byos/assignments/", {"annotators": ["ana"]}, format="json").status_code == 201


class TestTheEscalationsMessage:
    MESSAGE = "Pool more: 3 generations of job 1 below the threshold 0.9000 (...), ready to assign."

    def test_it_tells_who_may_assign_to_assign_below(self):
        from analysis.views import _ready_to_assign

        assert _ready_to_assign(self.MESSAGE, may_assign=True).endswith("ready to assign: Assign annotators below.")

    def test_it_tells_others_who_assigns(self):
        from analysis.views import _ready_to_assign

        assert _ready_to_assign(self.MESSAGE, may_assign=False).endswith(
            "ready for an admin, or the researcher who made it, to assign."
        )
