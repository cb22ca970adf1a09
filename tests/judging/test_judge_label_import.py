"""Importing an external judge's labels (docs/domain.md, "Bring your own study"): the judge is recorded and never
run, each import is one run with origin `imported`, the command ends with {"run": ID, "labels": N}, and a bad file
writes nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.services.label_files import LabelImportError, Upload
from generation.models import Job, LanguageModel
from generation.parameters import JobParameterError
from judging.models import Judge, JudgeMode, JudgeRun, MachineLabel
from judging.services.imports import judge_labels_import, judge_labels_preview
from judging.services.runs import judge_run_create
from tests.annotation.imported_study import build_pool, write_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return build_pool()


def _import(path, pool, *extra) -> tuple[dict, str]:
    out = io.StringIO()
    call_command("import_judge_labels", str(path), "--pool", pool.name, "--judge", "gpt4-judge", *extra, stdout=out)
    lines = out.getvalue().strip().splitlines()
    return json.loads(lines[-1]), out.getvalue()


class TestImport:
    def test_it_records_an_external_judge_and_one_imported_run(self, study, tmp_path):
        prompt = tmp_path / "prompt.txt"
        prompt.write_text("Does the text misgender the person? {context}", encoding="utf-8")
        last, _ = _import(
            write_judge(study, tmp_path / "judge.csv"), study.pool, "--model-id", "gpt-4o", "--description",
            "GPT-4o, temperature 0", "--prompt-file", prompt,
        )  # fmt: skip
        run = JudgeRun.objects.select_related("judge__model", "job").get(pk=last["run"])
        assert last == {"run": run.pk, "labels": len(study.judge)}
        assert run.origin == "imported" and run.pool == study.pool and run.state == "done"
        assert run.judge.external and run.judge.mode == JudgeMode.IMPORTED
        assert run.judge.model.source_kind == LanguageModel.SourceKind.EXTERNAL
        assert run.judge.model.source == "gpt-4o"
        assert run.judge.description == "GPT-4o, temperature 0"
        assert run.judge.template == prompt.read_text(encoding="utf-8")
        assert [label for label, _ in run.judge.options] == list(study.pool.labels)
        stored = {row.item.external_id: row for row in MachineLabel.objects.filter(run=run).select_related("item")}
        assert {item: row.label for item, row in stored.items()} == study.judge
        for item, row in stored.items():
            assert row.scores == pytest.approx(study.probabilities[item])
            assert row.confidence == pytest.approx(max(study.probabilities[item].values()))

    def test_the_same_file_twice_changes_nothing_and_another_file_is_a_second_run(self, study, tmp_path):
        # docs/domain.md, "Bring your own study": as for people's labels, importing the same file again changes
        # nothing (the same judge version, the same run), whatever its name or the order of its rows.
        path = write_judge(study, tmp_path / "judge.csv")
        first, _ = _import(path, study.pool, "--model-id", "gpt-4o")
        lines = path.read_text(encoding="utf-8").splitlines()
        again = tmp_path / "renamed.csv"
        again.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n", encoding="utf-8")
        second, said = _import(again, study.pool, "--model-id", "gpt-4o")
        assert second == {"run": first["run"], "labels": len(study.judge), "unchanged": True}
        assert "nothing changed" in said
        assert JudgeRun.objects.filter(pool=study.pool).count() == 1
        assert MachineLabel.objects.filter(run_id=first["run"]).count() == len(study.judge)
        other, _ = _import(
            write_judge(study, tmp_path / "c.csv", kind="confidence"), study.pool, "--model-id", "gpt-4o"
        )
        runs = JudgeRun.objects.filter(pk__in=[first["run"], other["run"]])
        assert runs.count() == 2 and len({run.judge_id for run in runs}) == 1
        assert Judge.objects.filter(name="gpt4-judge").count() == 1

    def test_a_label_outside_the_set_is_refused_with_its_line_unless_the_import_extends_the_set(self, study, tmp_path):
        path = write_judge(study, tmp_path / "judge.csv", kind="none")
        lines = path.read_text(encoding="utf-8").splitlines()
        item = lines[3].split(",")[0]
        lines[3] = f"{item},Not sure (skip)"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(CommandError, match=r"judge\.csv:4: item .*'Not sure \(skip\)' is not one of the pool's"):
            _import(path, study.pool)
        assert not JudgeRun.objects.exists()
        last, said = _import(path, study.pool, "--extend-labels")
        study.pool.refresh_from_db()
        assert study.pool.labels == ["misgendering", "correct", "Not sure (skip)"]
        assert "new label(s) Not sure (skip)" in said
        assert MachineLabel.objects.get(run_id=last["run"], item__external_id=item).label == "Not sure (skip)"

    def test_confidence_alone_and_no_confidence_are_kept_as_given(self, study, tmp_path):
        with_confidence, _ = _import(write_judge(study, tmp_path / "c.csv", kind="confidence"), study.pool)
        without, _ = _import(write_judge(study, tmp_path / "n.csv", kind="none"), study.pool)
        confidences = MachineLabel.objects.filter(run_id=with_confidence["run"]).values_list("confidence", "scores")
        assert all(c is not None and scores == {} for c, scores in confidences)
        assert set(MachineLabel.objects.filter(run_id=without["run"]).values_list("confidence", flat=True)) == {None}

    def test_json_lines_read_as_the_csv_does(self, study, tmp_path):
        last, _ = _import(write_judge(study, tmp_path / "judge.jsonl", kind="jsonl"), study.pool)
        assert last["labels"] == len(study.judge)

    def test_concord_never_runs_an_external_judge(self, study, tmp_path):
        last, _ = _import(write_judge(study, tmp_path / "judge.csv"), study.pool, "--model-id", "gpt-4o")
        jobs = Job.objects.count()
        with pytest.raises(JobParameterError, match="external judge"):
            judge_run_create(pool=study.pool.name, judge="gpt4-judge", queue=False)
        assert Job.objects.count() == jobs


class TestRefusals:
    def _refused(self, study, text: str) -> list[str]:
        with pytest.raises(LabelImportError) as refused:
            judge_labels_import(source=Upload("judge.csv", text.encode()), pool_name=study.pool.name, judge="j")
        assert not JudgeRun.objects.exists() and not Judge.objects.exists()
        return refused.value.errors

    def test_probabilities_must_sum_to_one_and_every_line_is_named(self, study):
        a, b = list(study.items)[:2]
        errors = self._refused(
            study,
            "item,label,prob_misgendering,prob_correct\n"
            f"{a},correct,0.2,0.8\n"
            f"{b},correct,0.2,0.7\n"
            f"{a},correct,0.2,0.8\n"
            f"{b},maybe,1.5,0\n",
        )
        assert errors == [
            f"judge.csv:3: item '{b}': the probabilities sum to 0.9, not 1 (within 1e-06)",
            f"judge.csv:4: item '{a}': labelled twice (line 2 too)",
            f"judge.csv:5: item '{b}': labelled twice (line 3 too)",
            f"judge.csv:5: item '{b}': label 'maybe' is not one of the pool's labels (misgendering, correct)",
            f"judge.csv:5: item '{b}': prob_misgendering: must be a number in [0, 1], got '1.5'",
        ]

    def test_a_probability_column_for_a_label_outside_the_set_is_refused(self, study):
        errors = self._refused(study, "item,label,prob_no_pronoun\nx,correct,1\n")
        assert errors == ["judge.csv:1: prob_no_pronoun: not a label of the pool (misgendering, correct)"]

    def test_the_command_says_what_was_refused(self, study, tmp_path):
        path = tmp_path / "bad.csv"
        path.write_text("item,label,confidence\nnowhere,correct,2\n", encoding="utf-8")
        with pytest.raises(CommandError, match=r"bad.csv:2: item 'nowhere': no such item"):
            _import(path, study.pool)

    def test_the_preview_shows_the_first_rows_and_writes_nothing(self, study, tmp_path):
        content = write_judge(study, tmp_path / "judge.csv").read_bytes()
        preview = judge_labels_preview(source=Upload("judge.csv", content), pool=study.pool)
        assert preview["ok"] and preview["labels"] == len(study.judge)
        assert preview["rows"][0]["item"] == next(iter(study.judge))
        assert not JudgeRun.objects.exists()


class TestPagesAndExports:
    """An imported run shows wherever runs show: the report page, the pool's judge runs, its labels as a file, the
    adjudication page and the raw export (with or without confidences)."""

    @pytest.mark.parametrize("kind", ["probabilities", "none"])
    def test_every_page_and_export_reads_it(self, study, tmp_path, researcher, kind):
        from django.test import Client

        from annotation.machine import machine_export_rows

        last, _ = _import(write_judge(study, tmp_path / "judge.csv", kind=kind), study.pool, "--model-id", "gpt-4o")
        client = Client()
        client.force_login(researcher)
        assert client.get(f"/reports/{study.pool.name}/").status_code == 200
        runs = client.get(f"/api/pools/{study.pool.name}/judges/").json()
        assert [run["id"] for run in runs] == [last["run"]] and runs[0]["mode"] == "imported"
        labels = client.get(f"/api/pools/{study.pool.name}/judges/{last['run']}/labels/?format=csv")
        assert labels.status_code == 200 and labels.content.count(b"\n") == len(study.judge) + 1
        assert client.get(f"/pools/{study.pool.name}/adjudicate/").status_code == 200
        assert len(machine_export_rows(pool=study.pool)) == len(study.judge)


def test_a_judge_concord_runs_cannot_take_an_external_judges_name_nor_the_reverse(study, tmp_path):
    from judging.services.judges import judge_add

    _import(write_judge(study, tmp_path / "judge.csv"), study.pool, "--model-id", "gpt-4o")
    model = LanguageModel.objects.create(name="local-model", source_kind="hub", source="some/model")
    with pytest.raises(JobParameterError, match="external judge"):
        judge_add(name="gpt4-judge", model=model)
    judge_add(name="local-judge", model=model)
    with pytest.raises(LabelImportError, match="a judge Concord runs"):
        judge_labels_import(
            source=write_judge(study, tmp_path / "j2.csv"), pool_name=study.pool.name, judge="local-judge"
        )
