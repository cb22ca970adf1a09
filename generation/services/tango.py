"""Prob-TANGO on the worker (docs/domain.md, 'TANGO and Prob-TANGO', steps 1-6).

After a TANGO chunk's generations are written, each one is rewritten into a template (generation/rewriting.py, the
chunk's continuations parsed together with `nlp.pipe`) and scored: 4 candidates per generation, `they` = context +
the neutralized text and he/she/xe = context + the template filled with that family, each by its mean token loss with
the batched, prefix-shared scorer (the candidates share the context). The lowest loss predicts; [m_prob] is 1 iff it
is the gold family. A failed template is stored as failed, without a verdict. Safe to run twice: generations that
already have their row are skipped, and rows are unique per generation.

The they're/they've choice of step 3 is made by the job's own model (the seed used GPT-2): the candidate with the
lower mean token loss after the context wins.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Count, Q, QuerySet

from generation.datasets.registry import dataset_kind
from generation.engines.hf.loading import LoadedModel, model_load
from generation.engines.hf.scoring import DEFAULT_PROB_SCORE, score_candidates
from generation.models import Generation, Job, LanguageModel, TangoTemplate
from generation.pronouns import BASES
from generation.rewriting import ContractionChooser, Rewrite, rewrite_continuations, template_fill
from generation.signals import jobs_changed


def contraction_chooser(*, loaded: LoadedModel, contexts: Sequence[str]) -> ContractionChooser:
    """They're or they've, whichever `loaded` scores lower after the text's context (ties: they're)."""

    def choose(options: list[tuple[int, str, str]]) -> list[int]:
        candidates = [[contexts[index] + with_re, contexts[index] + with_ve] for index, with_re, with_ve in options]
        losses = score_candidates(loaded=loaded, candidates=candidates)
        return [0 if pair[0] <= pair[1] else 1 for pair in losses]

    return choose


def lazy_contraction_chooser(*, model_name: str, contexts: Sequence[str]) -> ContractionChooser:
    """The same, loading the registered model only when some text has a he's/she's."""

    def choose(options: list[tuple[int, str, str]]) -> list[int]:
        loaded = model_load(language_model=LanguageModel.objects.get(name=model_name))
        return contraction_chooser(loaded=loaded, contexts=contexts)(options)

    return choose


def tango_candidates(*, context: str, rewrite: Rewrite) -> list[str]:
    """The 4 candidate texts of a successful rewrite, in BASES order (he, she, they, xe)."""
    if rewrite.failed or rewrite.template is None:
        raise ValueError("a failed Prob-TANGO template has no candidates")
    return [
        context + (rewrite.neutralized if base == "they" else template_fill(rewrite.template, base)) for base in BASES
    ]


def tango_score(
    *,
    loaded: LoadedModel,
    contexts: Sequence[str],
    continuations: Sequence[str],
    pronouns: Sequence[str],
    prob_score: str = DEFAULT_PROB_SCORE,
) -> list[tuple[Rewrite, dict[str, float] | None, str, bool | None]]:
    """Rewrite and score many generations: (rewrite, losses, prediction, correct) each; failed ones have no verdict."""
    rewrites = rewrite_continuations(
        continuations, choose_contraction=contraction_chooser(loaded=loaded, contexts=contexts)
    )
    scored = [index for index, rewrite in enumerate(rewrites) if not rewrite.failed]
    losses = score_candidates(
        loaded=loaded,
        candidates=[tango_candidates(context=contexts[index], rewrite=rewrites[index]) for index in scored],
        prob_score=prob_score,
    )
    by_index = dict(zip(scored, losses, strict=True))
    results: list[tuple[Rewrite, dict[str, float] | None, str, bool | None]] = []
    for index, (rewrite, pronoun) in enumerate(zip(rewrites, pronouns, strict=True)):
        if index not in by_index:
            results.append((rewrite, None, "", None))
            continue
        item_losses = dict(zip(BASES, by_index[index], strict=True))
        prediction = min(BASES, key=lambda base: item_losses[base])  # ties go to the first base in BASES order
        results.append((rewrite, item_losses, prediction, prediction == pronoun))
    return results


def tango_templates_fill(*, job: Job, instance_ids: Sequence[int], loaded: LoadedModel | None = None) -> int:
    """Prob-TANGO for a chunk's generations that have none yet (nothing for other datasets). Returns rows written.
    It scores with the job's model on the hf engine (loaded here when not given), whichever engine sampled."""
    if job.dataset is None or not dataset_kind(job.dataset.kind).scores_per_generation:
        return 0
    todo = list(
        Generation.objects.filter(job=job, instance_id__in=list(instance_ids), tango_template__isnull=True)
        .select_related("instance")
        .order_by("instance__ordinal", "setting", "sample_index")
    )
    if not todo:
        return 0
    results = tango_score(
        loaded=loaded or model_load(language_model=job.model),
        contexts=[generation.context for generation in todo],
        continuations=[generation.continuation for generation in todo],
        pronouns=[generation.instance.pronoun for generation in todo],
        prob_score=job.generation_run.prob_score,
    )
    rows = [
        TangoTemplate(
            job=job,
            generation=generation,
            cut=rewrite.cut,
            neutralized=rewrite.neutralized,
            template=rewrite.template,
            failed=rewrite.failed,
            losses=losses,
            prediction=prediction,
            correct=correct,
        )
        for generation, (rewrite, losses, prediction, correct) in zip(todo, results, strict=True)
    ]
    with transaction.atomic():
        TangoTemplate.objects.bulk_create(rows, ignore_conflicts=True)
        jobs_changed.send(sender=Job, job_ids=[job.pk])
    return len(rows)


def tango_instances_done(*, job: Job, complete: QuerySet) -> int:
    """How many of the `complete` instances (every generation written) have Prob-TANGO on every generation."""
    return (
        Generation.objects.filter(job=job, instance__in=complete)
        .values("instance")
        .annotate(missing=Count("id", filter=Q(tango_template__isnull=True)))
        .filter(missing=0)
        .count()
    )
