"""Pools belong to a project (docs/domain.md, "Projects"): its members alone see its pools and what hangs off them,
admins see every pool, and every way of making a pool names its project (`--project`, `"project"`, the forms)."""

from __future__ import annotations

import io
import json
import zipfile
from importlib import import_module

import pytest
from django.apps import apps as global_apps
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import DEFAULT_PROJECT, Project
from accounts.projects import ProjectError, project_add, project_choose
from accounts.roles import RESEARCHER
from accounts.services import user_create_or_update
from annotation.access import pool_visible_or_404, pools_visible_to
from annotation.models import Pool
from tests.conftest import PASSWORD
from tests.factories import PoolFactory

pytestmark = pytest.mark.django_db

GENERATIONS = (
    "item,model,dataset,context,generation,pronoun\n"
    'n01,writer,notes,"Write about Alex, who uses xe/xem.",Alex fixed the bike. Xe rode it.,xe\n'
    'n02,writer,notes,"Write about Alex, who uses xe/xem.",Alex fixed the bike. He rode it.,xe\n'
)


@pytest.fixture
def generations(tmp_path):
    path = tmp_path / "generations.csv"
    path.write_text(GENERATIONS, encoding="utf-8")
    return path


def test_it_puts_a_pool_made_without_a_project_in_the_default_project():
    pool = PoolFactory()

    assert pool.project.name == DEFAULT_PROJECT
    assert Project.objects.filter(name=DEFAULT_PROJECT).count() == 1


def test_it_puts_a_new_researcher_in_the_default_project_and_no_one_else(researcher, annotator, admin_user):
    default = Project.objects.get(name=DEFAULT_PROJECT)

    assert list(default.members.all()) == [researcher]


def test_it_puts_a_researcher_made_with_a_project_in_that_one_only(stranger):
    assert list(stranger.projects.values_list("name", flat=True)) == ["elsewhere"]


def test_create_user_takes_a_project(db):
    out = io.StringIO()
    call_command("create_user", "cleo", "--role", RESEARCHER, "--password", PASSWORD, "--project", "lab-b", stdout=out)

    assert Project.objects.get(name="lab-b").members.get().username == "cleo"
    assert not Project.objects.filter(name=DEFAULT_PROJECT, members__username="cleo").exists()


class TestProjectAdd:
    def test_it_makes_a_project_with_its_members(self, researcher, stranger):
        out = io.StringIO()
        call_command("project_add", "lab-a", "--members", "rui_researcher,sam_stranger", stdout=out)

        project = Project.objects.get(name="lab-a")
        assert set(project.members.values_list("username", flat=True)) == {"rui_researcher", "sam_stranger"}
        assert out.getvalue().strip() == "created project lab-a; added rui_researcher, sam_stranger (2 members)"

    def test_it_adds_members_to_an_existing_project_and_says_who_is_new(self, researcher, stranger):
        call_command("project_add", "lab-a", "--members", "rui_researcher", stdout=io.StringIO())
        out = io.StringIO()

        call_command("project_add", "lab-a", "--members", "rui_researcher,sam_stranger", stdout=out)
        again = io.StringIO()
        call_command("project_add", "lab-a", "--members", "sam_stranger", stdout=again)

        assert out.getvalue().strip() == "kept project lab-a; added sam_stranger (2 members)"
        assert again.getvalue().strip() == "kept project lab-a; no new members (2 members)"
        assert Project.objects.get(name="lab-a").members.count() == 2

    def test_an_unknown_user_is_a_clear_error_and_writes_nothing(self, researcher):
        with pytest.raises(CommandError, match=r"no user named 'nobody'; nothing was written"):
            call_command("project_add", "lab-a", "--members", "rui_researcher,nobody", stdout=io.StringIO())

        assert not Project.objects.filter(name="lab-a").exists()

    def test_a_name_that_is_not_a_slug_is_refused(self):
        with pytest.raises(CommandError, match="a project's name is a slug"):
            call_command("project_add", "lab a", stdout=io.StringIO())

    def test_it_records_the_project_in_the_audit_trail(self, researcher):
        from auditlog.models import LogEntry

        project_add(name="lab-a", members=["rui_researcher"])

        entry = LogEntry.objects.get(additional_data__event="project.create")
        assert entry.object_repr == "lab-a" and entry.additional_data["added"] == ["rui_researcher"]


class TestVisibility:
    def test_a_researcher_sees_the_pools_of_their_projects_and_an_admin_every_pool(
        self, researcher, stranger, admin_user
    ):
        ours = PoolFactory(name="ours")
        theirs = PoolFactory(name="theirs", project=Project.objects.get(name="elsewhere"))

        assert list(pools_visible_to(user=researcher)) == [ours]
        assert list(pools_visible_to(user=stranger)) == [theirs]
        assert set(pools_visible_to(user=admin_user)) == {ours, theirs}

    def test_a_pool_of_another_project_is_a_404_like_one_that_does_not_exist(self, stranger):
        from django.http import Http404

        PoolFactory(name="ours")
        for name in ("ours", "nowhere"):
            with pytest.raises(Http404) as caught:
                pool_visible_or_404(user=stranger, name=name)
            assert str(caught.value) == "No such pool."

    def test_a_researcher_in_two_projects_sees_both(self, researcher):
        project_add(name="lab-b", members=["rui_researcher"])
        PoolFactory(name="ours")
        PoolFactory(name="b-side", project=Project.objects.get(name="lab-b"))

        assert set(pools_visible_to(user=researcher).values_list("name", flat=True)) == {"ours", "b-side"}

    def test_the_pool_pages_and_api_answer_404_to_another_project_and_200_to_its_own(self, researcher, stranger):
        PoolFactory(name="ours")
        own, other = Client(), Client()
        own.force_login(researcher)
        other.force_login(stranger)

        for path in ("/pools/ours/", "/api/pools/ours/", "/reports/ours/", "/api/reports/ours/"):
            assert own.get(path).status_code == 200, path
            assert other.get(path).status_code == 404, path
            assert b"ours" not in other.get(path).content, path

    def test_the_audit_trail_shows_a_researcher_only_their_projects_entries(
        self, researcher, stranger, tmp_path, generations
    ):
        from annotation.services import generations_import

        generations_import(paths=[generations], pool_name="ours")
        generations_import(paths=[generations], pool_name="theirs", project=Project.objects.get(name="elsewhere"))
        own, other = Client(), Client()
        own.force_login(researcher)
        other.force_login(stranger)

        mine = own.get("/audit/", {"format": "csv"}).content.decode()
        yours = other.get("/audit/", {"format": "csv"}).content.decode()

        assert ",ours," in mine and ",theirs," not in mine
        assert ",theirs," in yours and ",ours," not in yours


class TestChoosingTheProject:
    def test_without_a_name_a_researcher_gets_their_only_project(self, stranger):
        assert project_choose(user=stranger).name == "elsewhere"

    def test_without_a_name_a_researcher_in_several_gets_the_default_when_it_is_theirs(self, researcher):
        project_add(name="lab-b", members=["rui_researcher"])

        assert project_choose(user=researcher).name == DEFAULT_PROJECT

    def test_without_a_name_a_researcher_in_several_others_must_choose(self, stranger):
        project_add(name="lab-b", members=["sam_stranger"])

        with pytest.raises(ProjectError, match="choose a project: you belong to elsewhere, lab-b"):
            project_choose(user=stranger)

    def test_a_project_not_theirs_reads_as_one_that_does_not_exist(self, researcher, stranger):
        for name in ("elsewhere", "nowhere"):
            with pytest.raises(ProjectError) as caught:
                project_choose(name=name, user=researcher)
            assert str(caught.value) == f"no project {name!r} of yours (projects: default)"

    def test_a_command_without_a_name_gets_the_default_project(self, stranger):
        assert project_choose().name == DEFAULT_PROJECT


class TestPoolCommands:
    def test_import_generations_puts_a_new_pool_in_the_project_named(self, stranger, generations):
        out = io.StringIO()
        call_command(
            "import_generations", str(generations), "--pool", "byos", "--project", "elsewhere",
            "--json", stdout=out,
        )  # fmt: skip

        assert json.loads(out.getvalue().splitlines()[-1])["pool"] == "byos"
        assert Pool.objects.get(name="byos").project.name == "elsewhere"

    def test_import_generations_without_a_project_uses_the_default(self, generations):
        call_command("import_generations", str(generations), "--pool", "byos", stdout=io.StringIO())

        assert Pool.objects.get(name="byos").project.name == DEFAULT_PROJECT

    def test_an_unknown_project_is_a_clear_error_and_writes_nothing(self, generations):
        with pytest.raises(CommandError, match=r"--project: no project 'nowhere' known \(projects: "):
            call_command(
                "import_generations", str(generations), "--pool", "byos", "--project", "nowhere",
                stdout=io.StringIO(),
            )  # fmt: skip

        assert not Pool.objects.exists()

    def test_importing_into_an_existing_pool_of_another_project_is_refused(self, stranger, generations):
        call_command("import_generations", str(generations), "--pool", "byos", stdout=io.StringIO())

        with pytest.raises(CommandError, match="--project: pool 'byos' belongs to another project"):
            call_command(
                "import_generations", str(generations), "--pool", "byos", "--project", "elsewhere",
                stdout=io.StringIO(),
            )  # fmt: skip
        assert Pool.objects.get(name="byos").items.count() == 2

    def test_sample_pool_puts_the_pool_in_the_project_named(self, stranger):
        from tests.annotation.factories import job_with_generations

        job = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("he",), settings=("pre",))

        call_command(
            "sample_pool", "--name", "drawn", "--jobs", str(job.pk), "--instances", "1", "--project", "elsewhere",
            stdout=io.StringIO(),
        )  # fmt: skip

        assert Pool.objects.get(name="drawn").project.name == "elsewhere"

    def test_import_study_puts_the_bundle_in_the_project_named(self, stranger, tmp_path, generations):
        call_command("import_generations", str(generations), "--pool", "byos", stdout=io.StringIO())
        bundle = tmp_path / "byos.zip"
        call_command("export_study", "--pool", "byos", "--out", str(bundle), stdout=io.StringIO())

        call_command("import_study", str(bundle), "--pool", "byos-copy", "--project", "elsewhere", stdout=io.StringIO())

        assert Pool.objects.get(name="byos-copy").project.name == "elsewhere"
        with zipfile.ZipFile(bundle) as archive:
            (member,) = [name for name in archive.namelist() if name.endswith("pools.jsonl")]
            row = json.loads(archive.read(member).decode().splitlines()[0])
        assert "project_id" not in row and "project" not in row  # a site's teams stay on that site


class TestMigration:
    def test_it_puts_existing_pools_and_researchers_in_the_default_project(self, researcher, stranger, annotator):
        """The data steps of the two migrations, run on today's rows as they would be on a database of the day."""
        accounts_step = import_module("accounts.migrations.0002_projects_projects")
        annotation_step = import_module("annotation.migrations.0019_projects_pool_project")
        Project.objects.get(name=DEFAULT_PROJECT).members.clear()
        kept = PoolFactory(name="kept", project=Project.objects.get(name="elsewhere"))

        accounts_step.default_project(global_apps, None)
        annotation_step.into_default_project(global_apps, None)

        default = Project.objects.get(name=DEFAULT_PROJECT)
        assert set(default.members.values_list("username", flat=True)) == {"rui_researcher", "sam_stranger"}
        assert Pool.objects.get(pk=kept.pk).project.name == "elsewhere"  # a pool with a project keeps it


def test_a_researcher_made_by_user_create_or_update_again_keeps_their_projects(stranger):
    user_create_or_update(username="sam_stranger", role=RESEARCHER, password=PASSWORD)

    assert list(stranger.projects.values_list("name", flat=True)) == ["elsewhere"]


def test_the_admins_sample_page_draws_into_the_project_chosen(admin_user, stranger):
    from tests.annotation.factories import job_with_generations

    job = job_with_generations(instances_per_pronoun=1, samples=1, pronouns=("he",), settings=("pre",))
    client = Client()
    client.force_login(admin_user)
    assert 'value="elsewhere"' in client.get("/pools/new/").content.decode()

    response = client.post(
        "/pools/new/", {"name": "drawn", "jobs": [job.pk], "instances": 1, "seed": 0, "project": "elsewhere"}
    )

    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Pool.objects.get(name="drawn").project.name == "elsewhere"
