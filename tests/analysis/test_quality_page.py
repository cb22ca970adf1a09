"""The quality dashboard at /pools/NAME/quality/ and its JSON at /api/pools/NAME/quality/: who may see it, what it
shows, and that the page needs no inline script."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from accounts.roles import ANNOTATOR
from tests.analysis.test_multirater import three_rater_pool
from tests.conftest import _person
from tests.factories import AnnotationFactory, AssignmentFactory, PoolFactory, PoolItemFactory


@pytest.fixture
def pool(annotator, second_annotator):
    return three_rater_pool(raters={"ana": annotator, "bo": second_annotator, "cy": _person("cy", ANNOTATOR)})


def _page(pool) -> str:
    return reverse("pool-quality", args=[pool.name])


def _api(pool) -> str:
    return reverse("api-pool-quality", args=[pool.name])


class TestPermissions:
    @pytest.mark.parametrize("role", ["researcher", "admin"])
    def test_researchers_and_admins_see_the_page_and_its_data(self, pool, client, api, people, role):
        client.force_login(people[role])
        assert client.get(_page(pool)).status_code == 200
        api.force_authenticate(people[role])
        assert api.get(_api(pool)).status_code == 200

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_annotators_and_others_are_refused(self, pool, client, api, people, role):
        client.force_login(people[role])
        assert client.get(_page(pool)).status_code == 403
        api.force_authenticate(people[role])
        assert api.get(_api(pool)).status_code == 403

    def test_anonymous_visitors_are_sent_to_log_in_and_the_api_wants_credentials(self, pool, client, api):
        response = client.get(_page(pool))
        assert response.status_code == 302 and "login" in response["Location"]
        assert api.get(_api(pool)).status_code in (401, 403)

    def test_an_unknown_pool_is_404(self, client, api, researcher):
        client.force_login(researcher)
        assert client.get("/pools/nope/quality/").status_code == 404
        api.force_authenticate(researcher)
        assert api.get("/api/pools/nope/quality/").status_code == 404


class TestContent:
    def test_the_page_shows_the_table_and_the_warnings(self, pool, client, researcher):
        client.force_login(researcher)
        page = client.get(_page(pool)).content.decode()
        rows = re.findall(r'<tr data-annotator="(\w+)">(.*?)</tr>', page, flags=re.S)
        assert [name for name, _ in rows] == ["ana", "bo", "cy"]
        bo = dict(rows)["bo"]
        # bo: 5 study items, 1 gold item answered wrongly, every decision under 3 s, 4 of 9 comparisons agreeing
        cells = re.findall(r'<td class="num">([^<]*)</td>', bo)
        assert cells == ["5", "1", "0", "0.000", "1.8", "1.000", "0.444", "9"]
        assert "bo answered 0 of 1 gold items correctly (0%), under the pass mark of 80%." in page
        assert "bo took under 3 s on 100% of their decisions" in page

    def test_the_json_carries_every_part_of_the_dashboard(self, pool, api, researcher):
        api.force_authenticate(researcher)
        data = api.get(_api(pool)).json()
        assert set(data) >= {
            "annotator_quality",
            "kappa_matrix",
            "agreement_over_time",
            "seconds",
            "warnings",
            "pass_mark",
            "fast_seconds",
        }
        assert [row["annotator"] for row in data["annotator_quality"]] == ["ana", "bo", "cy"]
        assert data["kappa_matrix"]["annotators"] == ["ana", "bo", "cy"]
        assert data["agreement_over_time"][0]["n_items"] == 5  # five overlap items, one window of 50

    def test_the_json_follows_new_work(self, pool, api, researcher, people):
        api.force_authenticate(researcher)
        before = api.get(_api(pool)).json()["n_annotations"]
        AnnotationFactory(item=PoolItemFactory(pool=pool), annotator=people["second_annotator"], seconds=30)
        assert api.get(_api(pool)).json()["n_annotations"] == before + 1

    def test_the_page_runs_no_inline_script(self, pool, client, researcher):
        client.force_login(researcher)
        page = client.get(_page(pool)).content.decode()
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.S)
        assert scripts
        for attributes, _body in scripts:
            assert "src=" in attributes or 'type="application/json"' in attributes, attributes
        assert "onclick" not in page and "style=" not in page
        assert "js/quality.js" in page

    def test_a_small_pool_shows_every_raters_confusion_tables(self, pool, client, researcher):
        client.force_login(researcher)
        page = client.get(_page(pool)).content.decode()
        assert re.findall(r'<div class="confusion" data-annotator="(\w+)">', page) == ["ana", "bo", "cy"]
        assert "confusions-more" not in page and "confusions=all" not in page

    def test_past_the_shown_raters_the_page_links_to_all_their_tables(self, pool, client, researcher, monkeypatch):
        from analysis import views

        monkeypatch.setattr(views, "CONFUSIONS_SHOWN", 1)
        client.force_login(researcher)
        page = client.get(_page(pool)).content.decode()
        every = client.get(_page(pool), {"confusions": "all"}).content.decode()
        shown = re.compile(r'<div class="confusion" data-annotator="(\w+)">')
        assert shown.findall(page) == ["ana"] and shown.findall(every) == ["ana", "bo", "cy"]
        assert "The tables of 2 more annotators are left out" in page and 'href="?confusions=all' in page
        assert "confusions-more" not in every

    def test_the_page_and_the_api_carry_the_dashboard_as_computed_afresh(self, pool, client, api, researcher):
        import json

        from analysis.selectors.quality import quality_dashboard

        client.force_login(researcher)
        api.force_authenticate(researcher)
        client.get(_page(pool))  # kept in the cache
        page = client.get(_page(pool)).content.decode()
        embedded = re.search(r'<script id="quality-data" type="application/json">(.*?)</script>', page, flags=re.S)
        fresh = json.loads(json.dumps(quality_dashboard(pool=pool)))
        assert json.loads(embedded.group(1)) == fresh == api.get(_api(pool)).json()

    def test_the_kept_dashboard_follows_the_pass_mark_and_the_fast_threshold(self, pool, api, researcher):
        api.force_authenticate(researcher)
        kinds = {(w["annotator"], w["kind"]) for w in api.get(_api(pool)).json()["warnings"]}
        assert ("bo", "gold_accuracy") in kinds and ("bo", "fast") in kinds
        pool.pass_mark, pool.fast_seconds = 0.0, 0.5
        pool.save()
        data = api.get(_api(pool)).json()
        assert (data["pass_mark"], data["fast_seconds"]) == (0.0, 0.5)
        assert not {(w["annotator"], w["kind"]) for w in data["warnings"]} & {("bo", "gold_accuracy"), ("bo", "fast")}

    def test_the_report_links_to_the_dashboard(self, pool, client, researcher):
        client.force_login(researcher)
        assert _page(pool) in client.get(reverse("report-detail", args=[pool.name])).content.decode()

    def test_a_pool_without_work_shows_an_empty_dashboard(self, client, api, researcher, annotator):
        empty = PoolFactory(name="quiet")
        AssignmentFactory(item=PoolItemFactory(pool=empty), annotator=annotator)
        api.force_authenticate(researcher)
        data = api.get(_api(empty)).json()
        assert data["annotator_quality"] == [
            {
                "annotator": "ana",
                "items": 0,
                "gold_n": 0,
                "gold_correct": 0,
                "gold_accuracy": None,
                "median_seconds": None,
                "fast_share": None,
                "agreement": None,
                "agreement_n": 0,
            }
        ]
        assert data["agreement_over_time"] == [] and data["warnings"] == []
        assert data["seconds"][0]["n"] == 0 and data["seconds"][0]["median"] is None
        client.force_login(researcher)
        assert client.get(_page(empty)).status_code == 200
