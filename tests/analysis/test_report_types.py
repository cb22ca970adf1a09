"""The report's types (analysis/report/types.py, shape.py) describe what the report really holds, and the API schema is built
from them."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from accounts.roles import ANNOTATOR
from analysis.report.shape import QualityDashboard, Report
from analysis.report.types import (
    AccuracyRow,
    AggregateRow,
    AgreementBlock,
    HumanVsHeuristicRow,
    InterAnnotator,
    PairwiseRow,
)
from analysis.selectors.quality import quality_dashboard
from analysis.services import report_build
from tests.analysis.test_aggregation import build_pool
from tests.conftest import _person

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture
def pool(annotator, second_annotator):
    return build_pool(raters={"ana": annotator, "bo": second_annotator, "cy": _person("cy", ANNOTATOR)})


def _keys(typed: type) -> set[str]:
    return set(get_type_hints(typed))


class TestTypes:
    def test_the_report_has_every_required_key_and_no_other(self, pool):
        report = report_build(pool=pool)
        assert set(Report.__required_keys__) <= set(report) <= _keys(Report)
        # the places left for the sections of RUFF with distractors and of the machine raters (judges)
        assert {"distractors", "human_vs_judge", "judge_vs_heuristic", "judge_calibration"} <= Report.__optional_keys__

    def test_the_rows_we_compute_are_typed_exactly(self, pool):
        report = report_build(pool=pool)
        inter = report["inter_annotator"]
        assert set(inter) == _keys(InterAnnotator)
        for view in ("pronoun_label", "pronoun_binary", "extraneous"):
            assert set(inter[view]) == _keys(AgreementBlock)
            assert all(set(row) == _keys(PairwiseRow) for row in inter[view]["pairwise"])
        for section, typed in (
            ("human_vs_heuristic", HumanVsHeuristicRow),
            ("accuracy", AccuracyRow),
            ("aggregates", AggregateRow),
        ):
            assert report[section]
            assert all(set(row) == _keys(typed) for row in report[section]), section

    def test_the_quality_dashboard_is_typed_exactly(self, pool):
        assert set(quality_dashboard(pool=pool)) == _keys(QualityDashboard)


class TestSchema:
    def test_the_report_endpoint_declares_the_typed_report(self, client, researcher):
        client.force_login(researcher)
        schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
        get = schema["paths"]["/api/reports/{pool}/"]["get"]
        body = get["responses"]["200"]["content"]["application/json"]["schema"]
        assert set(body["properties"]) == _keys(Report)
        assert set(body["required"]) == set(Report.__required_keys__)
        block = body["properties"]["inter_annotator"]["properties"]["pronoun_label"]
        assert {"gwet_ac1", "gwet_ac1_ci", "raw_agreement_boot_ci", "fleiss_kappa"} <= set(block["properties"])
        assert "human" in {parameter["name"] for parameter in get["parameters"]}
        quality = schema["paths"]["/api/pools/{name}/quality/"]["get"]["responses"]["200"]
        assert "confusion_gold" in quality["content"]["application/json"]["schema"]["properties"]
