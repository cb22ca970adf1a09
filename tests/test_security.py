"""Who may call what: every URL pattern x role x method against the access table below, plus the hardening that
keeps malformed input a 400 and says nothing beyond the allowed methods.

ACCESS is the decision for each pattern. A new pattern without an entry fails `test_every_url_pattern_has_a_decision`
until someone adds one: the methods it serves, and for each the least role that may use it.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field

import pytest
from django.conf import settings
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER, IsAdmin, IsAnnotator, IsResearcher
from tests.conftest import PASSWORD

PUBLIC = "public"  # anyone, logged in or not
USER = "user"  # anyone logged in, whatever their roles
ROLES = ("anonymous", "outsider", ANNOTATOR, RESEARCHER, ADMIN)  # outsider: logged in, no role
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
ROLE_MESSAGES = {IsAnnotator.message, IsResearcher.message, IsAdmin.message}

# Route (as written in the urls.py files) -> method -> who may use it. Methods left out must be refused (405).
# DRF views answer OPTIONS themselves (with the same permissions as the view); function views do not.
ACCESS: dict[str, dict[str, str]] = {
    # accounts
    "": {"GET": USER},
    "login/": {"GET": PUBLIC, "POST": PUBLIC},
    "logout/": {"POST": PUBLIC},
    "audit/": {"GET": RESEARCHER},  # researchers see the study's entries, admins the accounts' too
    "api/auth/token/": {"POST": PUBLIC, "OPTIONS": PUBLIC},
    "api/auth/logout/": {"POST": USER, "OPTIONS": USER},
    # The schema describes researchers' fields (judge labels, is_gold, the heuristic): not for annotators.
    "api/schema/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/docs/": {"GET": RESEARCHER},
    # annotation: annotators
    "api/annotate/next/": {"GET": ANNOTATOR, "OPTIONS": ANNOTATOR},
    "api/annotate/items/<str:public_id>/": {"GET": ANNOTATOR, "OPTIONS": ANNOTATOR},
    "api/annotations/": {"POST": ANNOTATOR, "OPTIONS": ANNOTATOR},
    "annotate/": {"GET": ANNOTATOR},
    "annotate/<slug:pool>/": {"GET": ANNOTATOR},
    # annotation: researchers and admins
    "pools/": {"GET": RESEARCHER},
    "pools/new/": {"GET": ADMIN, "POST": ADMIN},
    "pools/<slug:name>/": {"GET": RESEARCHER},
    # Assigning: admins, and the researcher who made the pool (tests/annotation/test_pool_files.py).
    "pools/<slug:name>/assign/": {"GET": ADMIN, "POST": ADMIN},
    "pools/new/files/": {"GET": RESEARCHER, "POST": RESEARCHER},
    "pools/<slug:name>/adjudicate/": {"GET": RESEARCHER, "POST": RESEARCHER},
    "pools/<slug:name>/import/": {"GET": RESEARCHER, "POST": RESEARCHER},  # GET goes back to the pool page
    "pools/<slug:name>/imports/<int:job_id>/cancel/": {"POST": RESEARCHER},
    "pools/<slug:name>/labels/": {"GET": RESEARCHER, "POST": RESEARCHER},  # GET goes back to the pool page
    "pools/<slug:name>/qualification/": {"GET": RESEARCHER, "POST": RESEARCHER},  # GET goes back to the pool page
    "pools/<slug:name>/guidelines/": {"GET": RESEARCHER, "POST": RESEARCHER},
    "pools/<slug:name>/items.csv": {"GET": RESEARCHER},
    # A pool's study on a crowd platform: the form and the participants (the platform's ids) for researchers; the
    # study link and its finish page for anyone (the link signs a participant in; finish refuses any other session).
    "pools/<slug:name>/recruit/": {"GET": RESEARCHER, "POST": RESEARCHER},  # GET goes back to the pool page
    "pools/<slug:name>/participants.csv": {"GET": RESEARCHER},
    "study/finish/": {"GET": PUBLIC},
    "study/<str:token>/": {"GET": PUBLIC},
    "api/pools/<slug:name>/annotations/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    # POST: a draw from jobs for admins; with `labels`, a pool for a researcher's own files
    # (tests/annotation/test_pool_files.py).
    "api/pools/": {"GET": RESEARCHER, "POST": ADMIN, "OPTIONS": RESEARCHER},
    "api/pools/<slug:name>/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/pools/<slug:name>/imports/": {"GET": RESEARCHER, "POST": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/pools/<slug:name>/imports/<int:job_id>/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/pools/<slug:name>/assignments/": {"POST": ADMIN, "OPTIONS": ADMIN},
    "pools/<slug:name>/quality/": {"GET": RESEARCHER},
    "api/pools/<slug:name>/quality/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    # generation
    "generation/jobs/": {"GET": RESEARCHER},
    "generation/jobs/new/": {"GET": ADMIN, "POST": ADMIN},
    "generation/datasets/": {"GET": RESEARCHER, "POST": ADMIN},
    "generation/datasets/imports/<int:job_id>/cancel/": {"POST": ADMIN},
    "generation/jobs/<int:job_id>/": {"GET": RESEARCHER},
    "generation/jobs/<int:job_id>/cancel/": {"POST": ADMIN},
    "generation/jobs/<int:job_id>/resume/": {"POST": ADMIN},
    "generation/jobs/<int:job_id>/export.csv": {"GET": RESEARCHER},
    "api/generation-jobs/": {"GET": RESEARCHER, "POST": ADMIN, "OPTIONS": RESEARCHER},
    "api/generation-jobs/<int:job_id>/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/generation-jobs/<int:job_id>/cancel/": {"POST": ADMIN, "OPTIONS": ADMIN},
    "api/generation-jobs/<int:job_id>/resume/": {"POST": ADMIN, "OPTIONS": ADMIN},
    "api/models/": {"GET": RESEARCHER, "POST": ADMIN, "OPTIONS": RESEARCHER},
    # analysis
    "reports/": {"GET": RESEARCHER},
    "pair-reports/": {"GET": RESEARCHER},
    "reports/<slug:pool>/": {"GET": RESEARCHER},
    "reports/<slug:pool>/export/<str:fmt>/": {"GET": RESEARCHER},
    "reports/<slug:pool>/study.zip": {"GET": RESEARCHER},
    "reports/<slug:pool>/plots/<slug:name>.<str:fmt>": {"GET": RESEARCHER},
    "reports/<slug:pool>/cells/": {"GET": RESEARCHER},
    "reports/<slug:pool>/escalate/": {"POST": RESEARCHER},  # the verdict section's escalation
    "api/reports/<slug:pool>/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "judge-runs/<int:run>/card/": {"GET": RESEARCHER},  # a judge run's card
    "judge-runs/<int:run>/card.<str:fmt>": {"GET": RESEARCHER},
    # judging (machine raters): researchers only; annotators never see a judge run or label
    "api/pools/<slug:name>/judges/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/pools/<slug:name>/judges/<int:run>/labels/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/generation-jobs/<int:job_id>/judges/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "api/judge-runs/<int:run>/labels/": {"GET": RESEARCHER, "OPTIONS": RESEARCHER},
    "generation/jobs/<int:job_id>/judge/": {"POST": ADMIN},  # a judge run over the job, from the jobs page
    "pools/<slug:name>/panel/": {"POST": RESEARCHER},  # a panel of judge runs, from the pool page
}

# Where a route's parameters cannot be filled by name alone (see `concrete_path`).
SAMPLE_PATHS: dict[str, str] = {
    "reports/<slug:pool>/plots/<slug:name>.<str:fmt>": "reports/{pool}/plots/label_distribution.svg",
    "study/<str:token>/": "study/no-such-token/",
    "judge-runs/<int:run>/card.<str:fmt>": "judge-runs/1/card.json",
}


def _permitted(who: str, role: str) -> bool:
    if who == PUBLIC:
        return True
    if role == "anonymous":
        return False
    if who == USER:
        return True
    satisfies = {ANNOTATOR: {ANNOTATOR}, RESEARCHER: {RESEARCHER, ADMIN}, ADMIN: {ADMIN}}
    return role in satisfies[who]


def routes() -> list[str]:
    """Every route of the site except the admin site's own (checked apart), in the form ACCESS uses."""
    found: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if getattr(pattern, "app_name", None) == admin.site.name:
                    continue
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                found.append(prefix + str(pattern.pattern))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_url_pattern_has_a_decision():
    missing = [route for route in routes() if route not in ACCESS]
    assert not missing, (
        f"URL patterns without an access decision: {missing}. Add each to ACCESS in tests/test_security.py with the "
        "methods it serves and the least role that may use each (PUBLIC, USER, ANNOTATOR, RESEARCHER or ADMIN)."
    )
    stale = [route for route in ACCESS if route not in routes()]
    assert not stale, f"ACCESS names patterns that no longer exist: {stale}; remove them from tests/test_security.py."


@dataclass
class Site:
    """Objects for the routes' parameters to point at, so that allowed calls reach real rows."""

    values: dict[str, str] = field(default_factory=dict)

    def path(self, route: str) -> str:
        template = SAMPLE_PATHS.get(route)
        if template is not None:
            return "/" + template.format(**self.values)
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(self.values[m.group(1)]), route)


@pytest.fixture
def site(people) -> Site:
    from judging.services.judges import judge_add
    from judging.services.runs import judge_run_create
    from tests.annotation.factories import job_with_generations, pool_for

    job = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("he",), settings=("pre",))
    pool, items = pool_for(people[ANNOTATOR], items=2)
    run, _ = judge_run_create(pool=pool.name, judge=judge_add(name="site-judge", model=job.model)[0], queue=False)
    return Site(values={"name": pool.name, "pool": pool.name, "job_id": job.pk, "public_id": items[0].public_id,
                        "fmt": "json", "run": run.pk})  # fmt: skip


def client_for(role: str, people) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(people[role])
    return client


def outcome(response) -> str:
    """What a response means for access: 'refused' (not allowed: a login redirect, 401 or 403), 'not-allowed' (405),
    'error' (5xx) or 'served'."""
    if response.status_code >= 500:
        return "error"
    if response.status_code == 405:
        return "not-allowed"
    if response.status_code in (401, 403):
        return "refused"
    if response.status_code == 302 and re.match(r"^/(admin/)?login/", response["Location"]):
        return "refused"
    return "served"


def expected(route: str, role: str, method: str) -> set[str]:
    rules = ACCESS[route]
    who = rules.get(method)
    if who is not None:
        if who == PUBLIC:
            return {"served", "refused"}  # e.g. logging out while logged out goes to the login page
        return {"served"} if _permitted(who, role) else {"refused"}
    # A method the route does not serve: 405, or a refusal first for a role that may use none of its methods.
    if any(_permitted(who, role) for who in rules.values()):
        return {"not-allowed"}
    return {"not-allowed", "refused"}


@pytest.mark.django_db
def test_every_route_role_and_method_gets_what_the_table_says(people, site, settings, monkeypatch):
    # Sessions kept in the cache: each of the thousands of calls finds its session without a query. Where a session
    # is kept is no part of who may call what; nor is the styled page of a refusal or a 405 (tests/test_error_pages.py
    # reads those), so an HTML error page here is its title alone, drawn without the site's template. The statuses,
    # the Allow header and the API's JSON bodies are the real ones.
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    from django.http import HttpResponse

    from config import errors

    page = errors._page

    def title_only(request, status, **context):
        if errors._is_api(request):
            return page(request, status, **context)
        return HttpResponse(errors.TITLES.get(status, errors.TITLES[400]), status=status)

    monkeypatch.setattr(errors, "_page", title_only)
    mismatches = []
    clients = {role: client_for(role, people) for role in ROLES}
    for route in routes():
        if route not in ACCESS:
            continue  # reported by test_every_url_pattern_has_a_decision
        path = site.path(route)
        for role in ROLES:
            for method in METHODS:
                if "logout" in route:  # a fresh session for each call that may end it
                    clients[role] = client_for(role, people)
                response = clients[role].generic(method, path)
                got = outcome(response)
                if got not in expected(route, role, method):
                    mismatches.append(
                        f"{method} {path} as {role}: {response.status_code} ({got}), "
                        f"expected {' or '.join(sorted(expected(route, role, method)))}"
                    )
                elif response.status_code == 403 and path.startswith("/api/") and role != "anonymous":
                    # One permission style everywhere: `[IsAuthenticated, IsRole]`, whose refusal names the role.
                    # (Read as text: a file-download endpoint answers in its own media type.)
                    text = response.content.decode()
                    if not any(message in text for message in ROLE_MESSAGES):
                        mismatches.append(f"{method} {path} as {role}: 403 without the role's message: {text[:200]}")
    assert not mismatches, "\n".join(mismatches)


def pool_routes() -> list[str]:
    """The routes about one pool: a pool in the address, or a judge run (the site's is over its pool)."""
    return [
        route
        for route in routes()
        if route in ACCESS and re.search(r"<slug:(name|pool)>|^api/judge-runs/<int:run>/", route)
    ]


@pytest.mark.django_db
def test_a_researcher_of_another_project_gets_404_on_every_pool_route(people, stranger, site):
    """docs/domain.md, "Projects": a pool of another project answers as a pool that does not exist, on every method
    a researcher or an admin may use (OPTIONS answers the same for any name and tells nothing of the pool)."""
    assert len(pool_routes()) >= 25
    mismatches = []
    client = client_for("researcher", {"researcher": stranger})
    for route in pool_routes():
        path = site.path(route)
        for method, who in ACCESS[route].items():
            if method == "OPTIONS" or who not in (RESEARCHER, ADMIN):
                continue
            response = client.generic(method, path)
            if response.status_code != 404:
                mismatches.append(f"{method} {path} as a researcher of another project: {response.status_code}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.django_db
def test_a_researcher_of_another_project_finds_none_of_its_pools_in_the_lists(people, stranger, site):
    client = client_for("researcher", {"researcher": stranger})
    own = client_for(RESEARCHER, people)
    pool = site.values["pool"]

    assert [row["name"] for row in own.get("/api/pools/").json()] == [pool]
    assert client.get("/api/pools/").json() == []
    for page in ("/pools/", "/reports/", "/audit/", "/generation/jobs/", "/api/generation-jobs/"):
        assert pool in own.get(page).content.decode(), page
        assert pool not in client.get(page).content.decode(), page
    assert pool not in client.get(f"/api/generation-jobs/{site.values['job_id']}/judges/").content.decode()
    # The judge run over the pool is a job: its pages answer as for a job that does not exist.
    from judging.models import JudgeRun

    judge_job = JudgeRun.objects.get(pool__name=pool).job_id
    for page in (f"/generation/jobs/{judge_job}/", f"/api/generation-jobs/{judge_job}/"):
        assert own.get(page).status_code == 200, page
        assert client.get(page).status_code == 404, page


@pytest.mark.django_db
def test_the_admin_site_is_for_admins_and_shows_the_annotation_models_read_only(people, site):
    from annotation.models import Adjudication, Annotation, Assignment, Pool, PoolItem

    pages = ["/admin/"] + [
        f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for model in (Pool, PoolItem, Assignment, Annotation, Adjudication)
    ]
    for role in ("anonymous", "outsider", ANNOTATOR, RESEARCHER):
        for page in pages:
            response = client_for(role, people).get(page)
            assert outcome(response) == "refused", (role, page, response.status_code)

    admin_client = client_for(ADMIN, people)
    for page in pages:
        assert admin_client.get(page).status_code == 200, page
    pool = Pool.objects.get(name=site.values["pool"])
    change = admin_client.get(f"/admin/annotation/pool/{pool.pk}/change/")
    assert change.status_code == 200
    assert b'name="_save"' not in change.content  # viewable, not editable
    assert admin_client.get("/admin/annotation/pool/add/").status_code == 403
    assert admin_client.post(f"/admin/annotation/pool/{pool.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Pool.objects.filter(pk=pool.pk).exists()


class TestMalformedInput:
    """Bad input is the client's error: 400, never a 500."""

    @pytest.fixture
    def researcher_client(self, researcher) -> Client:
        client = Client()
        client.force_login(researcher)
        return client

    @pytest.mark.django_db
    @pytest.mark.parametrize(
        "path",
        [
            "/pools/a%00b/",
            "/api/reports/a%00b/",
            "/reports/?page=1%00",
            "/api/generation-jobs/?x%00=1",
            "/generation/jobs/99999999999999999999/",
            "/api/generation-jobs/99999999999999999999/",
            "/generation/jobs/?page=99999999999999999999",
            "/generation/jobs/?page=-99999999999999999999",
            "/generation/jobs/?page=" + "9" * 5000,  # past the digits Python converts at all
        ],
    )
    def test_nul_bytes_and_integers_beyond_64_bits_in_the_address_are_400(self, researcher_client, path):
        response = researcher_client.get(path)
        assert response.status_code == 400, response.content[:300]

    @pytest.mark.django_db
    def test_an_api_400_says_what_was_wrong_as_json(self, researcher_client):
        response = researcher_client.get("/api/generation-jobs/99999999999999999999/")
        assert response.json() == {"detail": "job_id: the number is out of range."}

    @pytest.mark.django_db
    def test_the_largest_64_bit_id_is_an_ordinary_404(self, researcher_client):
        assert researcher_client.get(f"/api/generation-jobs/{2**63 - 1}/").status_code == 404

    @pytest.mark.django_db
    def test_deeply_nested_json_is_400(self, admin_user):
        client = Client()
        client.force_login(admin_user)
        for depth in (40, 100_000):
            body = "[" * depth + "]" * depth
            response = client.post("/api/generation-jobs/", body, content_type="application/json")
            assert response.status_code == 400
            assert "nested deeper than" in response.json()["detail"]

    @pytest.mark.django_db
    def test_json_integers_beyond_64_bits_are_400(self, admin_user):
        client = Client()
        client.force_login(admin_user)
        body = json.dumps({"dataset": "misgendered"})[:-1] + ', "seed": 99999999999999999999}'
        response = client.post("/api/generation-jobs/", body, content_type="application/json")
        assert response.status_code == 400
        assert "out of range" in response.json()["detail"]

    @pytest.mark.django_db
    @pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
    def test_json_constants_that_are_not_json_are_400(self, admin_user, constant):
        client = Client()
        client.force_login(admin_user)
        body = '{"dataset": "misgendered", "top_p": ' + constant + "}"
        response = client.post("/api/generation-jobs/", body, content_type="application/json")
        assert response.status_code == 400
        assert f"{constant} is not valid JSON" in response.json()["detail"]

    @pytest.mark.django_db
    def test_nul_characters_inside_json_strings_are_a_field_error(self, annotator):
        api = Client()
        api.force_login(annotator)
        response = api.post(
            "/api/annotations/", {"item": "a\x00b", "label": "correct"}, content_type="application/json"
        )
        assert response.status_code == 400
        assert "item" in response.json()


LONG_NAME = "u" * 300  # past the lockout store's 255 characters and the user model's 150


@pytest.mark.django_db
class TestBadInputIsRefusedAndWritesNothing:
    """Each input below once gave a 500 or a traceback; now it is refused with a message and writes nothing."""

    def test_a_username_of_300_characters_on_the_login_page_is_an_ordinary_failed_login(self, annotator):
        from axes.models import AccessAttempt

        response = Client().post("/login/", {"username": LONG_NAME, "password": "whatever"})

        assert response.status_code == 200  # the form again, with its error
        assert b"Please enter a correct username and password" in response.content
        assert not AccessAttempt.objects.exists()

    def test_a_username_of_300_characters_on_the_admin_login_is_an_ordinary_failed_login(self, admin_user):
        from axes.models import AccessAttempt

        response = Client().post("/admin/login/", {"username": LONG_NAME, "password": "whatever"})

        assert response.status_code == 200
        assert not AccessAttempt.objects.exists()

    def test_a_username_of_300_characters_on_the_token_endpoint_is_400(self, api):
        from axes.models import AccessAttempt

        response = api.post("/api/auth/token/", {"username": LONG_NAME, "password": "x"}, format="json")

        assert response.status_code == 400
        assert not AccessAttempt.objects.exists() and not Token.objects.exists()

    @pytest.mark.parametrize("seed", ["-1", str(2**32), str(2**63), "9" * 40, "1e3", "x"])
    def test_a_report_seed_outside_32_bits_is_400_on_the_api_and_the_page_export(self, researcher, seed):
        from tests.factories import PoolFactory

        pool = PoolFactory(name="study")
        client = Client()
        client.force_login(researcher)

        api = client.get(f"/api/reports/{pool.name}/", {"format": "json", "seed": seed})
        page = client.get(f"/reports/{pool.name}/export/json/", {"seed": seed})

        assert api.status_code == 400, api.content[:300]
        assert "seed" in json.dumps(api.json())
        assert page.status_code == 400, page.content[:300]
        assert b"between 0 and 4294967295" in page.content or b"out of range" in page.content

    def test_the_largest_32_bit_seed_is_accepted(self, researcher):
        from tests.factories import PoolFactory

        pool = PoolFactory(name="study")
        client = Client()
        client.force_login(researcher)
        response = client.get(f"/api/reports/{pool.name}/", {"format": "json", "seed": str(2**32 - 1)})
        assert response.status_code == 200
        assert response.json()["examples_seed"] == 2**32 - 1

    @pytest.mark.parametrize("seed", ["-1", str(2**32)])
    def test_a_report_seed_outside_32_bits_is_a_clear_error_of_the_report_command(self, seed):
        from django.core.management import CommandError, call_command

        from tests.factories import PoolFactory

        PoolFactory(name="study")
        with pytest.raises(CommandError, match="between 0 and 4294967295"):
            call_command("report", "--pool", "study", "--seed", seed)

    @pytest.mark.django_db(transaction=True)  # the import runs after its request commits, in a thread of its own
    def test_a_nul_in_an_imported_cell_or_model_name_is_a_file_line_error(self, researcher):
        import threading

        from annotation.models import PoolItem
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        pool = PoolFactory(name="imported")
        client = Client()
        client.force_login(researcher)
        body = (
            "template,random_pre_gen,correct,pronoun,model\n"
            "Robin baked bread. {mask_token} sold it.,Robin baked bread. Xe sold it.,1.0,xe,mo\x00del\n"
            "Robin baked bread. {mask_token} sold\x00 it.,Robin baked bread. Xe.,1.0,xe,m\n"
        )
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = SimpleUploadedFile("nul.csv", body.encode(), content_type="text/csv")
        response = client.post(f"/pools/{pool.name}/import/", {"csv_files": upload, "kind": "study"})
        for thread in threading.enumerate():
            if thread.name.startswith("concord-job-"):
                thread.join(timeout=60)

        assert response.status_code == 302
        job = pool_import()
        assert job.status == "failed"
        assert job.errors == ["nul.csv:2: model holds a NUL character", "nul.csv:3: template holds a NUL character"]
        html = client.get(response.url).content.decode()
        assert "nul.csv:2: model holds a NUL character" in html
        assert not PoolItem.objects.exists()

    def test_a_model_name_over_200_characters_is_a_file_line_error(self, tmp_path):
        from annotation.models import PoolItem
        from annotation.services import GenerationImportError, generations_import

        path = tmp_path / "long.csv"
        model = "m" * 201
        path.write_text(
            "template,random_pre_gen,correct,pronoun,model\n"
            f"Robin baked bread. {{mask_token}} sold it.,Robin baked bread. Xe sold it.,1.0,xe,{model}\n"
        )
        with pytest.raises(GenerationImportError, match=r"long.csv:2: model name is 201 characters long; at most 200"):
            generations_import(paths=[path], pool_name="imported")
        assert not PoolItem.objects.exists()

    def test_a_nul_in_the_adjudicate_form_is_400(self, researcher):
        from annotation.models import Adjudication
        from tests.factories import PoolFactory, PoolItemFactory

        item = PoolItemFactory(pool=PoolFactory(name="study"))
        client = Client()
        client.force_login(researcher)
        for data in (
            {"item": item.public_id + "\x00", "label": "correct"},
            {"item": item.public_id, "label": "correct", "notes": "a\x00b"},
        ):
            response = client.post("/pools/study/adjudicate/", data)
            assert response.status_code == 400
        assert not Adjudication.objects.exists()

    def test_a_nul_in_the_assign_form_is_400(self, admin_user, annotator):
        from annotation.models import Assignment
        from tests.factories import PoolFactory, PoolItemFactory

        PoolItemFactory(pool=PoolFactory(name="study"))
        client = Client()
        client.force_login(admin_user)
        response = client.post("/pools/study/assign/", {"annotators": ["ana\x00"], "overlap": 0, "seed": 0})
        assert response.status_code == 400
        assert b"NUL" in response.content
        assert not Assignment.objects.exists()

    def test_a_lone_surrogate_in_the_job_apis_pronouns_is_400(self, admin_user):
        from generation.models import Job

        client = Client()
        client.force_login(admin_user)
        body = '{"dataset": "misgendered", "pronouns": ["\\ud800"]}'
        response = client.post("/api/generation-jobs/", body, content_type="application/json")
        assert response.status_code == 400
        assert "lone surrogate" in response.json()["detail"]
        assert not Job.objects.exists()


@pytest.mark.django_db
class TestHostileTextInReports:
    """Text from imported files reaches matplotlib and LaTeX as text, never as markup."""

    @pytest.fixture
    def dollar_study(self, annotator, second_annotator):
        from annotation.models import PoolItem
        from tests.analysis.factories import study_build

        pool = study_build(ana=annotator, bo=second_annotator)
        PoolItem.objects.filter(pool=pool).update(model_name="gpt$^{x$ 2")  # invalid mathtext
        return pool

    def test_a_dollar_in_a_model_name_leaves_every_plot_and_the_html_export_working(self, researcher, dollar_study):
        from analysis import plots

        client = Client()
        client.force_login(researcher)
        for name in plots.FIGURES:
            response = client.get(f"/reports/{dollar_study.name}/plots/{name}.svg")
            assert response.status_code in (200, 404), (name, response.status_code)
        svg = client.get(f"/reports/{dollar_study.name}/plots/accuracy.svg")
        assert svg.status_code == 200 and b"gpt$^{x$ 2" in svg.content  # drawn as written
        export = client.get(f"/reports/{dollar_study.name}/export/html/")
        assert export.status_code == 200

    def test_a_latex_row_that_starts_with_a_bracket_is_not_read_as_an_optional_argument(self):
        from analysis.report.exports.tex import latex_table

        tex = latex_table("c", ["a", "b"], [["[0.1, 0.2]", "x"], ["y", "z"], ["[3]", "w"]])

        assert re.search(r"(\\\\|\\midrule)\s*\[", tex) is None
        assert "\\midrule{}\n[0.1, 0.2] & x \\\\\ny & z \\\\{}\n[3] & w \\\\\n" in tex


@pytest.mark.django_db
class TestWhatResponsesTell:
    def test_options_tells_an_annotator_only_the_name_and_methods(self, annotator):
        client = Client()
        client.force_login(annotator)
        response = client.options("/api/annotations/")
        assert response.status_code == 200
        assert response.json() == {"name": "Annotation Submit Api", "methods": ["POST", "OPTIONS"]}

    def test_options_describes_no_fields_even_where_the_view_has_an_input_serializer(self, admin_user):
        client = Client()
        client.force_login(admin_user)
        response = client.options("/api/generation-jobs/")
        assert response.json() == {"name": "Job List Create Api", "methods": ["GET", "POST", "HEAD", "OPTIONS"]}

    def test_options_is_refused_to_whoever_may_not_use_the_endpoint(self, annotator):
        client = Client()
        client.force_login(annotator)
        assert client.options("/api/generation-jobs/").status_code == 403
        assert Client().options("/api/annotations/").status_code == 401

    def test_pages_carry_a_content_security_policy_without_inline_scripts(self, client):
        response = client.get("/login/")
        policy = dict(
            directive.strip().split(" ", 1) for directive in response["Content-Security-Policy"].split(";") if directive
        )
        assert policy["script-src"] == "'self'"
        assert "unsafe-inline" not in response["Content-Security-Policy"]
        assert policy["frame-ancestors"] == "'none'"
        assert response["X-Frame-Options"] == "DENY"
        assert response["X-Content-Type-Options"] == "nosniff"

    def test_no_page_template_holds_inline_script_or_event_handlers(self):
        from tests.conftest import REPO

        offenders = []
        for template in (REPO / "templates").rglob("*.html"):
            text = template.read_text()
            for match in re.finditer(r"<script\b([^>]*)>(.*?)</script>", text, re.S):
                attributes, body = match.groups()
                if body.strip() and 'type="application/json"' not in attributes:
                    offenders.append(f"{template.relative_to(REPO)}: inline <script>")
            if re.search(r"\son[a-z]+\s*=", text):
                offenders.append(f"{template.relative_to(REPO)}: an on...= event handler attribute")
        # The standalone HTML report is a downloaded file, opened from disk, with no policy to meet.
        offenders = [entry for entry in offenders if "report_standalone.html" not in entry]
        assert not offenders, offenders

    def test_the_csrf_cookie_is_http_only_and_the_login_form_carries_the_token(self, client):
        response = client.get("/login/")
        assert response.cookies["csrftoken"]["httponly"]
        assert b'name="csrfmiddlewaretoken"' in response.content

    def test_a_token_works_for_the_api_but_not_for_the_pages(self, annotator):
        key = Token.objects.create(user=annotator).key
        assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/annotate/").status_code == 302  # to the login page
        assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/annotate/next/").status_code in (200, 204)

    def test_a_real_login_through_the_form_opens_the_pages(self, annotator):
        client = Client(enforce_csrf_checks=True)
        token = client.get("/login/").cookies["csrftoken"].value
        response = client.post("/login/", {"username": "ana", "password": PASSWORD, "csrfmiddlewaretoken": token})
        assert response.status_code == 302
        assert client.get("/annotate/").status_code in (200, 302)


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_no_page_breaks_the_content_security_policy_in_a_browser(live_server, people, site, browser):
    """Every page a role may GET, opened in Chromium as that role: the console reports no blocked script or style."""
    visits = []
    for route, rules in ACCESS.items():
        who = rules.get("GET")
        # Not pages: the API, downloads, and plots (images, shown through <img>, where a page's policy does not reach).
        if who is None or route.startswith(("api/", "logout")) or "export" in route or "plots" in route:
            continue
        if route.endswith((".zip", ".csv", ".<str:fmt>")):  # a download too (the study bundle, a judge card's file)
            continue
        role = {PUBLIC: "anonymous", USER: "outsider"}.get(who, who)
        visits.append((role, site.path(route)))

    violations: list[str] = []
    for role in ROLES:
        paths = [path for visitor, path in visits if visitor == role]
        if not paths:
            continue
        context = browser.new_context()
        if role != "anonymous":
            session = client_for(role, people).cookies[settings.SESSION_COOKIE_NAME].value
            cookie = {"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}
            context.add_cookies([cookie])
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("console", _csp_recorder(violations, role, page))
        for path in paths:
            page.goto(f"{live_server.url}{path}", wait_until="load")
        context.close()
    assert violations == []


def _csp_recorder(violations: list[str], role: str, page):
    def record(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(f"{role} at {page.url}: {message.text}")

    return record
