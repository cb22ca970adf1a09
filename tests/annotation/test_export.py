"""The raw export of a pool's annotations (command and API), and the report's figures recomputed from it."""

import csv
import io
import itertools
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import cohen_kappa_score

from analysis.report.build import report_data
from annotation.models import ExtraneousSpan
from annotation.services.adjudication import adjudication_save
from annotation.services.export import EXPORT_COLUMNS
from tests.annotation.factories import annotator_named, pool_for
from tests.factories import AnnotationFactory, PoolItemFactory

TEXT = "The man said xe was late."


@pytest.fixture
def study(annotator, second_annotator, researcher):
    """Two cells; overlap items that agree and disagree; an adjudicated item; a gold item; a formula-like note."""
    cy = annotator_named("cy")
    pool, items = pool_for(annotator, second_annotator, items=8, continuation=TEXT)
    for item in items[4:]:
        item.pronoun, item.heuristic_correct = "he", False
        item.save()
    labels = {
        0: [("ana", "correct"), ("bo", "correct")],
        1: [("ana", "correct"), ("bo", "misgendering")],
        2: [("bo", "no_pronoun"), ("ana", "misgendering")],
        3: [("ana", "misgendering")],
        4: [("ana", "misgendering"), ("bo", "misgendering"), ("cy", "correct")],
        5: [("bo", "correct"), ("ana", "no_pronoun")],
        6: [("ana", "correct")],
        7: [("bo", "misgendering"), ("ana", "misgendering")],
    }
    people = {"ana": annotator, "bo": second_annotator, "cy": cy}
    for index, annotations in labels.items():
        for order, (name, label) in enumerate(annotations):
            annotation = AnnotationFactory(
                item=items[index],
                annotator=people[name],
                label=label,
                extraneous=index == 0 and order == 0,
                notes="=HYPERLINK(1)" if index == 6 else "",
                tags=["repetition"] if index == 3 else [],
                seconds=2.5 + index,
            )
            if annotation.extraneous:
                ExtraneousSpan.objects.create(annotation=annotation, start=4, end=7)
    adjudication_save(item=items[1], label="misgendering", extraneous=False, spans=[], adjudicator=researcher)
    gold = PoolItemFactory(pool=pool, kind="gold", gold_label="correct", continuation=TEXT)
    AnnotationFactory(item=gold, annotator=annotator, label="misgendering")
    return pool, items, gold


def export_frame(path) -> pd.DataFrame:
    frame = pd.read_csv(path, keep_default_na=False)
    frame["heuristic_correct"] = frame["heuristic_correct"].astype(int)
    return frame


def majority(labels: list[str]) -> str:
    counts = Counter(labels)
    top = max(counts.values())
    return next(label for label in labels if counts[label] == top)


@pytest.mark.django_db
class TestExportCommand:
    def test_it_writes_one_row_per_annotation_with_the_item_and_the_verdicts(self, study, tmp_path):
        pool, items, gold = study
        out = tmp_path / "raw.csv"

        call_command("export_annotations", "--pool", pool.name, "--out", str(out))

        frame = export_frame(out)
        assert list(frame.columns) == EXPORT_COLUMNS
        assert len(frame) == 16
        first = frame[(frame["item_id"] == items[0].public_id) & (frame["annotator"] == "ana")].iloc[0]
        assert (first["label"], first["extraneous"], json.loads(first["spans"]), json.loads(first["span_words"])) == (
            "correct",
            1,
            [[4, 7]],
            ["man"],
        )
        assert (first["model"], first["dataset"], first["setting"], first["pronoun"]) == (
            "test-model",
            "misgendered",
            "pre",
            "xe",
        )
        assert first["context"] == items[0].context and first["continuation"] == TEXT
        adjudicated = frame[frame["item_id"] == items[1].public_id].iloc[0]
        # Columns that are empty where nothing was adjudicated read back as text.
        assert (adjudicated["adjudicated_label"], adjudicated["adjudicated_extraneous"]) == ("misgendering", "0")
        assert adjudicated["adjudicated_spans"] == "[]" and adjudicated["adjudicator"] == "rui_researcher"
        assert set(frame[frame["item_id"] == gold.public_id]["is_gold"]) == {1}
        assert json.loads(frame[frame["item_id"] == items[3].public_id].iloc[0]["tags"]) == ["repetition"]

    def test_it_neutralises_formula_cells_in_csv(self, study, tmp_path):
        pool, items, _ = study
        out = tmp_path / "raw.csv"

        call_command("export_annotations", "--pool", pool.name, "--out", str(out))

        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert [row["notes"] for row in rows if row["item_id"] == items[6].public_id] == ["'=HYPERLINK(1)"]

    def test_it_writes_json_lines_with_real_types(self, study, tmp_path):
        pool, items, _ = study
        out = tmp_path / "raw.jsonl"

        call_command("export_annotations", "--pool", pool.name, "--out", str(out))

        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == 16 and set(rows[0]) == set(EXPORT_COLUMNS)
        by_item = {(row["item_id"], row["annotator"]): row for row in rows}
        assert by_item[(items[0].public_id, "ana")]["spans"] == [[4, 7]]
        assert by_item[(items[0].public_id, "bo")]["adjudicated_extraneous"] is None
        assert by_item[(items[1].public_id, "bo")]["adjudicated_extraneous"] is False
        assert by_item[(items[6].public_id, "ana")]["notes"] == "=HYPERLINK(1)"

    def test_it_names_an_unknown_pool_and_an_unknown_format(self, study, tmp_path):
        pool, _, _ = study
        with pytest.raises(CommandError, match="no pool named 'nope'"):
            call_command("export_annotations", "--pool", "nope", "--out", str(tmp_path / "x.csv"))
        with pytest.raises(CommandError, match="name the file .csv or .jsonl"):
            call_command("export_annotations", "--pool", pool.name, "--out", str(tmp_path / "x.xlsx"))


@pytest.mark.django_db
class TestExportReproducesTheReport:
    def test_it_gives_the_reports_agreement_kappa_and_human_vs_heuristic(self, study, tmp_path):
        pool, _, _ = study
        out = tmp_path / "raw.csv"
        call_command("export_annotations", "--pool", pool.name, "--out", str(out))
        frame = export_frame(out)
        study_rows = frame[(frame["is_gold"] == 0) & (frame["is_training"] == 0)]

        report = report_data(pool=pool)

        first = study_rows[study_rows["annotation_order"] == 1].set_index("item_id")
        second = study_rows[study_rows["annotation_order"] == 2].set_index("item_id")
        pairs = first[["label"]].join(second[["label"]].add_suffix("_2"), how="inner")
        block = report["inter_annotator"]["pronoun_label"]
        assert block["n_items"] == len(pairs) == 6
        # docs/domain.md, "Headline figures": raw agreement over every pair of an item's annotations (item 4 has
        # three); with three annotations on an item the kappa is Light's, over no pair here (none shares 30 items).
        every = study_rows.groupby("item_id")["label"].agg(list)
        agree = [x == y for labels in every if len(labels) >= 2 for x, y in itertools.combinations(labels, 2)]
        assert block["n_pairs"] == len(agree) == 5 + 3
        assert block["raw_agreement"] == pytest.approx(np.mean(agree))
        assert (block["kappa_method"], block["cohen_kappa"]) == ("light", None)
        pair = [r for r in block["pairwise"] if (r["annotator_1"], r["annotator_2"]) == ("ana", "bo")][0]
        ana_bo = study_rows[study_rows["annotator"].isin(["ana", "bo"])].sort_values(["item_id", "annotator"])
        both = ana_bo.groupby("item_id")["label"].agg(list)
        both = both[both.map(len) == 2]
        assert pair["cohen_kappa"] == pytest.approx(
            cohen_kappa_score(both.str[0], both.str[1], labels=list(pool.labels))
        )

        per_item = study_rows.sort_values(["item_id", "annotation_order"]).groupby("item_id")
        items = per_item.agg(
            labels=("label", list),
            adjudicated=("adjudicated_label", "first"),
            heuristic=("heuristic_correct", "first"),
            model=("model", "first"),
            dataset=("dataset", "first"),
            setting=("setting", "first"),
            pronoun=("pronoun", "first"),
        )
        items["human"] = [
            adj or majority(labels) for adj, labels in zip(items["adjudicated"], items["labels"], strict=True)
        ]
        items["agree"] = ((items["human"] != "misgendering").astype(int) == items["heuristic"]).astype(float)
        expected = items.groupby(["model", "dataset", "setting", "pronoun"])["agree"].agg(["mean", "size"])
        got = {
            (row["model"], row["dataset"], row["setting"], row["pronoun"]): (row["agreement"], row["n"])
            for row in report["human_vs_heuristic"]
        }
        assert set(got) == set(expected.index)
        for cell, (mean, size) in expected.iterrows():
            assert got[cell][0] == pytest.approx(mean) and got[cell][1] == size


@pytest.mark.django_db
class TestExportApi:
    @pytest.mark.parametrize("fmt", ["csv", "jsonl"])
    def test_it_serves_researchers_in_either_format(self, api, researcher, study, fmt):
        pool, _, _ = study
        api.force_authenticate(researcher)

        response = api.get(f"/api/pools/{pool.name}/annotations/", {"format": fmt})

        assert response.status_code == 200
        body = b"".join(response.streaming_content).decode()  # streamed: a crowd-sized pool's export too
        if fmt == "csv":
            assert response["Content-Type"].startswith("text/csv")
            assert len(list(csv.DictReader(io.StringIO(body)))) == 16
        else:
            assert len([json.loads(line) for line in body.splitlines()]) == 16
        assert f'filename="{pool.name}-annotations.{fmt}"' in response["Content-Disposition"]

    def test_it_serves_admins(self, api, admin_user, study):
        pool, _, _ = study
        api.force_authenticate(admin_user)

        assert api.get(f"/api/pools/{pool.name}/annotations/", {"format": "csv"}).status_code == 200

    def test_it_refuses_annotators_outsiders_and_anonymous_callers(self, api, annotator, outsider, study):
        pool, _, _ = study
        url = f"/api/pools/{pool.name}/annotations/"

        assert api.get(url, {"format": "csv"}).status_code == 401
        api.force_authenticate(annotator)
        assert api.get(url, {"format": "csv"}).status_code == 403
        api.force_authenticate(outsider)
        assert api.get(url, {"format": "jsonl"}).status_code == 403

    def test_it_answers_404_for_an_unknown_pool(self, api, researcher):
        api.force_authenticate(researcher)

        assert api.get("/api/pools/nope/annotations/", {"format": "csv"}).status_code == 404


def test_the_export_api_answers_errors_in_json(api, researcher, annotator):
    api.force_authenticate(annotator)
    forbidden = api.get("/api/pools/no-such-pool/annotations/?format=csv")
    assert forbidden.status_code == 403
    assert forbidden["Content-Type"].startswith("application/json")
    assert "detail" in forbidden.json()

    api.force_authenticate(researcher)
    missing = api.get("/api/pools/no-such-pool/annotations/?format=csv")
    assert missing.status_code == 404
    assert missing["Content-Type"].startswith("application/json")
    assert missing.json()["detail"]


@pytest.mark.django_db
def test_an_item_id_the_random_draw_begins_with_a_dash_is_exported_as_the_api_gives_it(
    annotator, tmp_path, monkeypatch
):
    """`-` leads one random id in 64: such an id would be neutralised in the CSV and not match the API's."""
    import secrets

    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: "-AbCdEfGhIjKlMnO")
    pool, [item] = pool_for(annotator, items=1)
    assert item.public_id == "_AbCdEfGhIjKlMnO"
    AnnotationFactory(item=item, annotator=annotator)
    out = tmp_path / "raw.csv"
    call_command("export_annotations", "--pool", pool.name, "--out", str(out))
    assert [row["item_id"] for row in csv.DictReader(out.open(encoding="utf-8"))] == [item.public_id]
