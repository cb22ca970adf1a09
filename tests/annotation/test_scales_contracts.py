"""A pool's scale and labels as written (docs/domain.md, "Scales" and "Bring your own study"): declared by
`import_generations --labels ... --scale ...`, the upload API and `POST /api/pools/`; checked whole before anything is
written; shown as written. And the Alt-Test's q and minimum items as report parameters (`--q`, `--min-items`,
`?q=&min_items=`)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.labelset import LabelSetError, label_key, labels_check, positive_labels
from annotation.models import Pool
from annotation.schema import label_display
from tests.annotation.factories import job_with_generations, pool_for
from tests.annotation.test_import_free_text import write_csv

pytestmark = pytest.mark.django_db


def _import(path, *args) -> None:
    call_command("import_generations", str(path), *args, stdout=io.StringIO())


class TestScaleOnImport:
    def test_it_declares_an_ordinal_pool_with_labels_as_written(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "", "", ""]])
        _import(
            path, "--pool", "stars", "--labels", "Awful,Not great,OK,Good – really,Très bien!", "--scale", "ordinal"
        )

        pool = Pool.objects.get(name="stars")
        assert pool.labels == ["Awful", "Not great", "OK", "Good – really", "Très bien!"]
        assert pool.scale == "ordinal" and pool.positive_label == ""
        assert [label_display(label) for label in pool.labels] == pool.labels  # shown as written

    def test_an_interval_pool_needs_numbers_and_a_threshold_needs_a_scale(self, tmp_path):
        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "", "", ""]])
        with pytest.raises(CommandError, match="label 'five': an interval scale's labels are numbers"):
            _import(path, "--pool", "p", "--labels", "1,2,five", "--scale", "interval")
        with pytest.raises(CommandError, match="a positive threshold needs an ordinal or interval scale"):
            _import(path, "--pool", "p", "--labels", "low,high", "--positive-at-least", "high")
        assert not Pool.objects.filter(name="p").exists()

        _import(path, "--pool", "p", "--labels", "1,2,3,4,5", "--scale", "interval", "--positive-at-least", "4")
        pool = Pool.objects.get(name="p")
        assert (pool.scale, pool.positive_at_least) == ("interval", "4")
        assert positive_labels(pool) == {"4", "5"}

    def test_the_scale_cannot_change_once_people_have_labelled(self, tmp_path, annotator):
        from annotation.models import Annotation, PoolItem

        path = write_csv(tmp_path / "g.csv", [["i1", "m", "d", "C", "Xe left.", "", "", ""]])
        _import(path, "--pool", "p", "--labels", "1,2,3")
        Annotation.objects.create(item=PoolItem.objects.get(pool__name="p"), annotator=annotator, label="1")
        with pytest.raises(CommandError, match="can no longer change"):
            _import(path, "--pool", "p", "--scale", "ordinal")
        assert Pool.objects.get(name="p").scale == "nominal"


class TestLabels:
    def test_any_text_up_to_64_characters_is_a_label(self):
        assert labels_check(["Not misgendering", "Misgendering (he/him)", "是"]) == [
            "Not misgendering", "Misgendering (he/him)", "是",
        ]  # fmt: skip
        for bad, why in (
            (["x" * 65, "b"], "longer than 64"),
            ([" a", "b"], "starts or ends with a space"),
            (["a\tb", "c"], "control character"),
            (["a", "a"], "listed twice"),
        ):
            with pytest.raises(LabelSetError, match=why):
                labels_check(bad)

    def test_keys_for_urls_and_columns_are_derived(self):
        assert label_key("Not misgendering") == "not_misgendering"
        assert label_key("Très bien!") == "tres_bien"
        assert label_key("是").startswith("label_")


class TestApi:
    def test_post_pools_declares_labels_and_scale(self, admin_user):
        job = job_with_generations(instances_per_pronoun=2, samples=1, pronouns=("he",), settings=("pre",))
        client = APIClient()
        client.force_authenticate(admin_user)
        body = {"name": "rated", "jobs": [job.pk], "instances": 2, "labels": ["1", "2", "3"], "scale": "ordinal"}
        response = client.post("/api/pools/", body, format="json")
        assert response.status_code == 201, response.content
        assert (response.json()["pool"]["labels"], response.json()["pool"]["scale"]) == (["1", "2", "3"], "ordinal")
        refused = client.post(
            "/api/pools/", {**body, "name": "bad", "scale": "interval", "labels": ["a", "b"]}, format="json"
        )
        assert refused.status_code == 400 and "interval scale's labels are numbers" in refused.json()["detail"]
        assert not Pool.objects.filter(name="bad").exists()

    def test_post_pools_takes_a_threshold_for_a_draw_and_for_files(self, admin_user):
        job = job_with_generations(instances_per_pronoun=2, samples=1, pronouns=("he",), settings=("pre",))
        client = APIClient()
        client.force_authenticate(admin_user)
        body = {"name": "drawn", "jobs": [job.pk], "instances": 2, "labels": ["1", "2", "3", "4", "5"],
                "scale": "ordinal", "positive_at_least": "4"}  # fmt: skip
        response = client.post("/api/pools/", body, format="json")
        assert response.status_code == 201, response.content
        assert response.json()["pool"]["positive_at_least"] == "4"
        assert positive_labels(Pool.objects.get(name="drawn")) == {"4", "5"}
        files = {"name": "files", "labels": ["1", "2", "3"], "scale": "interval", "positive_at_least": "2"}
        response = client.post("/api/pools/", files, format="json")
        assert response.status_code == 201, response.content
        assert Pool.objects.get(name="files").positive_at_least == "2"
        nominal = client.post("/api/pools/", {**files, "name": "nominal", "scale": "nominal"}, format="json")
        assert nominal.status_code == 400 and "needs an ordinal or interval scale" in str(nominal.json())
        assert not Pool.objects.filter(name="nominal").exists()


class TestSamplePool:
    """`sample_pool` declares the label set as `import_generations` does."""

    def test_it_draws_an_ordinal_pool_with_a_threshold(self):
        job = job_with_generations(instances_per_pronoun=2, samples=1, pronouns=("he",), settings=("pre",))
        call_command(
            "sample_pool", "--name", "rated", "--jobs", str(job.pk), "--instances", "2", "--labels",
            "Awful,OK,Très bien!", "--scale", "ordinal", "--positive-at-least", "OK", stdout=io.StringIO(),
        )  # fmt: skip
        pool = Pool.objects.get(name="rated")
        assert (pool.labels, pool.scale, pool.positive_at_least) == (["Awful", "OK", "Très bien!"], "ordinal", "OK")
        assert pool.items.count() == 2
        assert positive_labels(pool) == {"OK", "Très bien!"}

    def test_it_refuses_a_bad_label_set_and_writes_nothing(self):
        job = job_with_generations(instances_per_pronoun=2, samples=1, pronouns=("he",), settings=("pre",))
        with pytest.raises(CommandError, match="interval scale's labels are numbers"):
            call_command(
                "sample_pool", "--name", "bad", "--jobs", str(job.pk), "--instances", "2", "--labels", "a,b",
                "--scale", "interval",
            )  # fmt: skip
        with pytest.raises(CommandError, match="positive label 'maybe' is not in the set"):
            call_command(
                "sample_pool", "--name", "bad", "--jobs", str(job.pk), "--instances", "2", "--labels", "yes,no",
                "--positive", "maybe",
            )  # fmt: skip
        assert not Pool.objects.filter(name="bad").exists()


class TestReportParameters:
    def test_q_and_min_items_are_report_parameters(self, researcher):
        pool, _ = pool_for(items=2)
        out = io.StringIO()
        call_command("report", "--pool", pool.name, "--q", "0.1", "--min-items", "10", stdout=out)
        assert json.loads(out.getvalue())["pool"] == pool.name
        with pytest.raises(CommandError, match="q: must be in"):
            call_command("report", "--pool", pool.name, "--q", "1.5", stdout=io.StringIO())
        client = APIClient()
        client.force_authenticate(researcher)
        assert client.get(f"/api/reports/{pool.name}/?q=0.1&min_items=10").status_code == 200
        bad = client.get(f"/api/reports/{pool.name}/?min_items=0")
        assert bad.status_code == 400 and "min_items" in bad.json()
