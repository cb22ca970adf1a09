"""The judge's probabilities per context for annotation's active draw (annotation/active.py), registered from
JudgingConfig.ready (judging/hooks.py): Yhat of a context is the mean over its judged generations of the judge's
probability of the positive label (docs/domain.md, "The judge's verdict": prediction-powered rates)."""

from __future__ import annotations

from collections import defaultdict

from annotation.active import ActiveDrawError, JudgedContext, JudgeRunChoice


class JudgeContextProbabilities:
    def runs(self) -> list[JudgeRunChoice]:
        from generation.models import JobStatus
        from judging.models import JudgeRun

        runs = JudgeRun.objects.filter(source_job__isnull=False, job__status=JobStatus.DONE).select_related(
            "judge", "source_job__model", "source_job__generation_run__dataset"
        )
        choices = []
        for run in runs:
            job = run.source_job
            assert job is not None  # filtered above: runs over a job
            dataset = job.dataset.name if job.dataset is not None else "-"
            label = (
                f"{run.judge} over job #{job.pk} ({job.model.name} on {dataset}): run {run.pk}, judge job #{run.job_id}"
            )
            choices.append(JudgeRunChoice(run.pk, job.pk, label))
        return choices

    def contexts(self, *, run_id: int, job_id: int, positive: str) -> list[JudgedContext]:
        from generation.contexts import setting_rank
        from judging.models import JudgeMode, JudgeRun, MachineLabel
        from judging.scoring import option_probabilities

        run = JudgeRun.objects.select_related("judge", "job").filter(pk=run_id).first()
        if run is None:
            raise ActiveDrawError(f"no judge run {run_id}")
        if run.source_job_id != job_id:
            scope = f"pool {run.pool}" if run.source_job_id is None else f"job {run.source_job_id}"
            raise ActiveDrawError(
                f"judge run {run_id} judged {scope}, not job {job_id}: an active pool is drawn with a run over its job"
            )
        if run.state != "done":
            raise ActiveDrawError(f"judge run {run_id} is {run.state}; draw once it is done")
        options = run.judge.option_map
        if positive not in options:
            raise ActiveDrawError(
                f"judge {run.judge} has no option {positive!r}, so its run {run_id} gives no probability of it"
            )
        rows = (
            MachineLabel.objects.filter(run=run, generation__isnull=False)
            .order_by("generation__instance_id", "generation__setting", "generation__sample_index", "generation_id")
            .values_list(
                "generation_id",
                "scores",
                "generation__instance_id",
                "generation__setting",
                "generation__instance__pronoun",
            )
        )
        generations: dict[tuple[int, str], list[int]] = defaultdict(list)
        probabilities: dict[tuple[int, str], list[float]] = defaultdict(list)
        pronoun_of: dict[tuple[int, str], str] = {}
        for generation_id, scores, instance_id, setting, pronoun in rows:
            if run.mode == JudgeMode.IMPORTED and not scores:
                raise ActiveDrawError(
                    f"judge run {run_id} has labels without probabilities (generation {generation_id}); an active "
                    "draw needs the judge's probability of every generation"
                )
            key = (instance_id, setting)
            pronoun_of[key] = pronoun
            generations[key].append(generation_id)
            probabilities[key].append(option_probabilities(run.mode, options, scores or {})[positive])
        if not generations:
            raise ActiveDrawError(f"judge run {run_id} has no probabilities for job {job_id}'s generations")
        # The job's context order: its instances in order, each instance's settings in the order a job runs them
        # (pre, then post), not as their names sort.
        order = sorted(probabilities, key=lambda key: (key[0], setting_rank(key[1]), key[1]))
        return [
            JudgedContext(
                key[0],
                key[1],
                pronoun_of[key],
                tuple(generations[key]),
                sum(probabilities[key]) / len(probabilities[key]),
            )
            for key in order
        ]
