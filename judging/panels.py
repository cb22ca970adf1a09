"""Panels of judges (a jury; Verga et al. 2024; docs/domain.md, "Judges a reviewer trusts": panel).

A panel is a named list of finished judge runs over the same items (the same pool's items, or the same generation
job's generations). It is one machine rater: a judge run of its own, origin `panel`, whose labels are computed here
from its members' and stored like any run's, so that every table, page, export and bundle that reads judge runs
reads it too, under the panel's name. Per item: the label is the plurality of the members' labels (a tie, or no
member with a label: no label, counted as `n_ties`); each option's probability is the mean of the members' (a member
without probabilities counts as one-hot on its label); the confidence is the mean probability of the panel's label.

The panel's judge is an external judge (Concord never runs it; its "model" a registry row naming the panel) whose
options are its members' labels, in the first member's order; its prompt text lists the members.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import transaction

from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.jobs.services import job_record
from generation.models import Job
from generation.parameters import JobParameters
from generation.signals import jobs_changed
from judging.models import JUDGE_KIND, RUN_PANEL, JudgeMode, JudgeRun, MachineLabel, PanelMember
from judging.scoring import option_probabilities
from judging.services.judges import NAME, judge_latest


class PanelError(ServiceError, ValueError):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class PanelLabel:
    label: str  # "" on a tie
    confidence: float
    probabilities: dict[str, float]


def member_probabilities(*, run: JudgeRun, label: str, scores: dict) -> dict[str, float]:
    """A member's probability of each option: its own (the softmax of its scores, its vote shares, an imported
    judge's given probabilities), or one-hot on its label where it gave none."""
    options = run.judge.option_map
    if run.mode == JudgeMode.IMPORTED and not scores:
        return {option: float(option == label) for option in options}
    return option_probabilities(run.mode, options, scores)


def panel_label(*, labels: list[str], probabilities: list[dict[str, float]], options: list[str]) -> PanelLabel:
    """The plurality label (a tie, or no label at all: "") and the mean probabilities, in option order."""
    counts = Counter(label for label in labels if label)
    ranked = counts.most_common()
    tie = not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1])
    mean = {option: sum(p.get(option, 0.0) for p in probabilities) / len(probabilities) for option in options}
    label = "" if tie else ranked[0][0]
    return PanelLabel(label=label, confidence=min(max(mean.get(label, 0.0), 0.0), 1.0), probabilities=mean)


def _members(run_ids: list, errors: list[str]) -> list[JudgeRun]:
    ids: list[int] = []
    for value in run_ids:
        try:
            ids.append(int(value))
        except (TypeError, ValueError):
            errors.append(f"runs: {value!r} is not a judge run's id")
    if len(set(ids)) != len(ids):
        errors.append(f"runs: a run is listed twice ({', '.join(str(i) for i, n in Counter(ids).items() if n > 1)})")
    if len(set(ids)) < 2:
        errors.append("runs: a panel needs at least two judge runs")
    found = JudgeRun.objects.select_related("judge__model", "job", "pool").in_bulk(ids)
    if missing := [str(i) for i in ids if i not in found]:
        errors.append(f"runs: no judge run {', '.join(missing)}")
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def _units(run: JudgeRun) -> dict[int, MachineLabel]:
    unit = "item_id" if run.pool_id is not None else "generation_id"
    return {getattr(label, unit): label for label in MachineLabel.objects.filter(run=run)}


def panel_plan(*, name: str, runs: list) -> tuple[list[JudgeRun], list[dict[int, MachineLabel]]]:
    """Check the panel: its name, and that its members are finished runs over the same items with the same labels.
    Raises PanelError with every problem."""
    errors: list[str] = []
    if not isinstance(name, str) or not NAME.match(name):
        errors.append(f"name: must be 1-64 letters, digits, - or _, got {name!r}")
    else:
        latest = judge_latest(name=name)
        if latest is not None and not latest.runs.filter(origin=RUN_PANEL).exists():
            errors.append(f"name: {name!r} is a judge's name; give the panel a name of its own")
    members = _members(list(runs), errors)
    for run in members:
        if run.state != "done":
            errors.append(f"runs: run {run.pk} ({run.judge}) is {run.state}; a panel takes finished runs")
    scopes = {run.scope for run in members}
    if len(scopes) > 1:
        listed = ", ".join(f"run {run.pk} on {run.scope}" for run in members)
        errors.append(f"runs: the runs are over different items ({listed}); a panel's members judge the same items")
    label_sets = {tuple(sorted(run.judge.option_map)) for run in members}
    if len(label_sets) > 1:
        listed = "; ".join(f"run {run.pk}: {', '.join(run.judge.option_map)}" for run in members)
        errors.append(f"runs: the runs' judges have different labels ({listed})")
    if errors:
        raise PanelError(errors)
    units = [_units(run) for run in members]
    first = set(units[0])
    for run, labelled in zip(members[1:], units[1:], strict=True):
        if set(labelled) != first:
            only_first, only_this = len(first - set(labelled)), len(set(labelled) - first)
            errors.append(
                f"runs: the runs are over different items: run {run.pk} labels {len(labelled)} items, run "
                f"{members[0].pk} {len(first)} ({only_first} only in run {members[0].pk}, {only_this} only in run "
                f"{run.pk})"
            )
    if errors:
        raise PanelError(errors)
    return members, units


def panel_create(*, name: str, runs: list, created_by=None) -> tuple[JudgeRun, int]:
    """The panel's run (origin `panel`) with its labels, and how many of its items tie. Raises PanelError (nothing
    written) for a bad name or members that are not finished runs over the same items."""
    from judging.services.imports import external_judge

    with transaction.atomic():
        members, units = panel_plan(name=name, runs=runs)
        options = list(members[0].judge.option_map)
        described = ", ".join(f"{run.judge} (run {run.pk}, model {run.judge.model.name})" for run in members)
        judge, _ = external_judge(
            name=name, labels=options, model_id=f"panel:{name}",
            description=f"A panel of {len(members)} judge runs: {described}.",
            prompt=f"(a panel: the plurality of its members' labels) {described}", created_by=created_by,
        )  # fmt: skip
        first = members[0]
        scope: dict[str, int | None] = (
            {"pool_id": first.pool_id} if first.pool_id is not None else {"job_id": first.source_job_id}
        )
        job = job_record(
            params=JobParameters(
                model=judge.model,
                dataset=None,
                kind=JUDGE_KIND,
                settings=[],
                options={
                    **scope,
                    "judge_id": judge.pk,
                    "mode": JudgeMode.IMPORTED,
                    "k": 1,
                    "temperature": 1.0,
                    "origin": RUN_PANEL,
                    "source_file": "",
                },
            ),  # fmt: skip
            units=len(units[0]),
            items=len(units[0]),
            created_by=created_by,
        )
        run = JudgeRun.objects.select_related("judge", "job").get(job=job)
        PanelMember.objects.bulk_create(
            [PanelMember(panel=run, member=member, position=index) for index, member in enumerate(members)]
        )
        rows, ties = [], 0
        unit = "item_id" if first.pool_id is not None else "generation_id"
        for unit_id in sorted(units[0]):
            given = [labels[unit_id] for labels in units]
            figures = panel_label(
                labels=[label.label for label in given],
                probabilities=[
                    member_probabilities(run=member, label=label.label, scores=label.scores)
                    for member, label in zip(members, given, strict=True)
                ],
                options=options,
            )
            ties += not figures.label
            rows.append(
                MachineLabel(
                    run=run,
                    **{unit: unit_id},
                    label=figures.label,
                    confidence=figures.confidence,
                    scores=figures.probabilities,
                    prompt="",
                )  # fmt: skip
            )
        MachineLabel.objects.bulk_create(rows, batch_size=5_000)
        jobs_changed.send(sender=Job, job_ids=[job.pk])  # the labels are written: the judged pools changed
        audit_record(
            event="judge.panel", obj=run, actor=created_by, action=CREATE,
            data={"name": name, "version": judge.version, "members": [m.pk for m in members], "labels": len(rows),
                  "n_ties": ties},
        )  # fmt: skip
    return run, ties


def panel_members(*, run: JudgeRun) -> list[JudgeRun]:
    """A panel run's members, in the panel's order (none for any other run)."""
    return [
        row.member
        for row in PanelMember.objects.filter(panel=run).select_related("member__judge__model").order_by("position")
    ]
