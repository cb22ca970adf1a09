"""The report end to end: the management command (json, csv zip, html, latex), the API and the pages."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.plots import FIGURES
from analysis.report.exports.latex import LATEX_TABLES

SEVEN = [
    "human_vs_heuristic",
    "label_distribution",
    "extraneous_rate",
    "prob_vs_gen",
    "instance_variation",
    "beta_disagreement",
    "repetition",
]


@pytest.fixture
def study(module_study):
    """The hand-built study, built once for the module (tests/analysis/conftest.py)."""
    return module_study


def _check_json(data: dict) -> None:
    for block in ("pronoun_label", "pronoun_binary", "extraneous"):
        assert set(data["inter_annotator"][block]) >= {
            "n_items",
            "raw_agreement",
            "cohen_kappa",
            "kappa_ci",
            "krippendorff_alpha",
        }
    assert data["inter_annotator"]["pronoun_binary"]["raw_agreement"] == pytest.approx(0.75)
    for table in SEVEN:
        assert data[table], table
        assert all({"model", "dataset", "setting", "pronoun"} <= set(row) for row in data[table])
    he = [row for row in data["prob_vs_gen"] if row["pronoun"] == "he"][0]
    assert he["mcc"] is None and he["kappa"] == 0.0


class TestCommand:
    def test_it_writes_json(self, study, tmp_path):
        out = tmp_path / "report.json"
        call_command("report", pool="study", format="json", out=str(out))
        _check_json(json.loads(out.read_text()))

    def test_it_prints_json_without_out(self, study, capsys):
        call_command("report", pool="study", format="json")
        _check_json(json.loads(capsys.readouterr().out))

    def test_it_writes_a_zip_of_one_csv_per_table(self, study, tmp_path):
        out = tmp_path / "report.zip"
        call_command("report", pool="study", format="csv", out=str(out))
        with zipfile.ZipFile(out) as archive:
            names = archive.namelist()
            assert {f"study/{t}.csv" for t in [*SEVEN, "inter_annotator", "confusion", "disagreements"]} <= set(names)
            rows = list(csv.DictReader(io.StringIO(archive.read("study/prob_vs_gen.csv").decode())))
        he = [row for row in rows if row["pronoun"] == "he"][0]
        assert he["mcc"] == "" and he["mcc_ci_low"] == "" and float(he["agreement"]) == pytest.approx(0.5)
        xe = [row for row in rows if row["pronoun"] == "xe"][0]
        assert float(xe["mcc_ci_low"]) < float(xe["mcc"]) < float(xe["mcc_ci_high"])

    def test_it_writes_csv_files_into_a_directory(self, study, tmp_path):
        call_command("report", pool="study", format="csv", out=str(tmp_path))
        assert (tmp_path / "human_vs_heuristic.csv").read_text().startswith("model,dataset,setting,pronoun")

    def test_it_writes_standalone_html_with_embedded_svg(self, study, tmp_path):
        out = tmp_path / "report.html"
        call_command("report", pool="study", format="html", out=str(out))
        html = out.read_text()
        # One per figure with data: the study has no TANGO job, no judge run, no distractor dataset and no GIFI data.
        absent = {"tango_failure_rate", "tango_variation", "judge_reliability", "distractor_accuracy"}
        absent |= {"gifi_dimensions", "gifi_family_heatmap"}
        absent |= {"judge_omega", "judge_risk_coverage", "judge_rates", "label_budget_widths", "active_inclusion"}
        absent |= {"judge_check_calibration", "judge_check_positions", "judge_check_families"}  # no check run either
        assert html.count("<svg") == len(set(FIGURES) - absent)
        assert "<link" not in html and "src=" not in html
        assert "prob_vs_gen" in html

    def test_it_writes_latex_tables(self, study, tmp_path):
        out = tmp_path / "report.tex"
        call_command("report", pool="study", format="latex", out=str(out))
        tex = out.read_text()
        # every registered LaTeX table once, the examples as two (the paper's tables 8 and 9), but not the TANGO one
        # nor the judge's verdict's two: the study has no TANGO job and no judge run, and an empty table is a comment
        # saying what would fill it
        assert tex.count(r"\begin{tabular}") == len(LATEX_TABLES) - 2 and r"\toprule" in tex
        assert "% judge verdict: no rows yet; filled by a finished LLM judge run" in tex
        assert "% tango: no rows yet; filled by a TANGO generation job in the pool." in tex
        for caption in ("Inter-annotator agreement", "Accuracy per cell", "Conflict rate", "Examples of human"):
            assert caption in tex

    def test_it_refuses_an_unknown_pool(self, db):
        with pytest.raises(CommandError):
            call_command("report", pool="nope", format="json")


class TestApi:
    @pytest.mark.parametrize("role", ["researcher", "admin"])
    def test_it_serves_json_to_researchers_and_admins(self, study, people, api, role):
        api.force_authenticate(people[role])
        response = api.get("/api/reports/study/")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("application/json")
        _check_json(json.loads(response.content))

    def test_it_serves_a_csv_zip(self, study, researcher, api):
        api.force_authenticate(researcher)
        response = api.get("/api/reports/study/?format=csv")
        assert response.status_code == 200
        assert response["Content-Type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            assert "study/repetition.csv" in archive.namelist()

    def test_it_serves_one_table_as_plain_csv(self, study, researcher, api):
        api.force_authenticate(researcher)
        response = api.get("/api/reports/study/?format=csv&table=label_distribution")
        assert response.status_code == 200
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert {row["pronoun"]: row["misgendering"] for row in rows} == {"he": "0", "xe": "2"}

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_it_refuses_other_roles(self, study, people, api, role):
        api.force_authenticate(people[role])
        assert api.get("/api/reports/study/").status_code == 403
        assert api.get("/api/reports/study/?format=csv").status_code == 403

    def test_it_refuses_anonymous_callers(self, study, api):
        assert api.get("/api/reports/study/").status_code == 401

    def test_it_answers_404_for_an_unknown_pool(self, researcher, api):
        api.force_authenticate(researcher)
        assert api.get("/api/reports/nope/").status_code == 404


class TestPages:
    def test_the_index_lists_pools_for_researchers(self, study, client, researcher):
        client.force_login(researcher)
        response = client.get(reverse("report-index"))
        assert response.status_code == 200
        assert reverse("report-detail", args=["study"]) in response.content.decode()

    def test_the_report_page_shows_tables_plots_and_disagreements(self, study, client, researcher):
        client.force_login(researcher)
        page = client.get(reverse("report-detail", args=["study"])).content.decode()
        for name in ("human_vs_heuristic", "label_distribution", "extraneous_rate", "beta_landscape"):
            assert reverse("report-plot", args=["study", name, "png"]) in page
        assert 'id="disagreements"' in page and "Human vs heuristic disagreements (2)" in page
        assert 'id="table-confusion"' in page

    @pytest.mark.parametrize("fmt, content_type", [("json", "application/json"), ("csv", "application/zip")])
    def test_the_page_offers_downloads(self, study, client, researcher, fmt, content_type):
        client.force_login(researcher)
        response = client.get(reverse("report-export", args=["study", fmt]))
        assert response.status_code == 200 and response["Content-Type"] == content_type
        assert "attachment" in response["Content-Disposition"]

    @pytest.mark.parametrize("name", ["human_vs_heuristic", "label_distribution", "extraneous_rate", "beta_landscape"])
    def test_plots_are_real_svg_and_png_images(self, study, client, admin_user, name):
        client.force_login(admin_user)
        svg = client.get(reverse("report-plot", args=["study", name, "svg"]))
        assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
        assert b"<svg" in svg.content[:2000]
        png = client.get(reverse("report-plot", args=["study", name, "png"]) + "?download=1")
        assert png["Content-Type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"
        assert "attachment" in png["Content-Disposition"]

    def test_an_unknown_plot_is_404(self, study, client, researcher):
        client.force_login(researcher)
        assert client.get("/reports/study/plots/nope.svg").status_code == 404

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_pages_refuse_other_roles(self, study, client, people, role):
        client.force_login(people[role])
        for url in (
            reverse("report-index"),
            reverse("report-detail", args=["study"]),
            reverse("report-export", args=["study", "json"]),
            reverse("report-plot", args=["study", "beta_landscape", "svg"]),
        ):
            assert client.get(url).status_code == 403, url

    def test_pages_send_anonymous_visitors_to_log_in(self, study, client):
        response = client.get(reverse("report-detail", args=["study"]))
        assert response.status_code == 302 and "login" in response["Location"]

    def test_the_nav_links_reports_for_researchers_only(self, client, researcher, annotator):
        client.force_login(researcher)
        assert reverse("report-index") in client.get("/").content.decode()
        client.force_login(annotator)
        assert reverse("report-index") not in client.get("/").content.decode()
