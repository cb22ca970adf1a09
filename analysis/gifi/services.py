"""Storing GIFI's scorer outputs (docs/domain.md, 'GIFI'): each scorer the researcher names scores the model's
counterfactual generations that have no score by it yet, each distinct text once, and the scores are stored
(analysis.models.GifiScore) before any report reads them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from django.db import transaction

from analysis.gifi.scorers import SCORERS, Scorer, ScorerUnavailable
from analysis.gifi.selectors import gifi_rows
from analysis.models import GifiScore
from annotation.services.stamp import job_pools_changed
from generation.datasets.gifi import COUNTERFACTUAL
from generation.models import Generation, LanguageModel

WRITE_BATCH = 500


def gifi_scores_fill(
    *,
    model: LanguageModel,
    sources: Mapping[str, str],
    load: Callable[[str, str], Scorer] | None = None,
) -> dict[str, str]:
    """Score what is missing for each named scorer; return, per scorer that could not load, what to install.
    `load(scorer, source)` builds a scorer (default: the `SCORERS` declaration's)."""
    load = load or (lambda scorer, source: SCORERS[scorer].load(source))
    rows = [row for row in gifi_rows(model=model).get(COUNTERFACTUAL, []) if row.text]
    unavailable: dict[str, str] = {}
    for scorer, source in sources.items():
        done = set(
            GifiScore.objects.filter(
                generation_id__in=[r.generation for r in rows], scorer=scorer, source=source
            ).values_list("generation_id", flat=True)
        )
        todo = [row for row in rows if row.generation not in done]
        if not todo:
            continue
        try:
            score = load(scorer, source)
            texts = list(dict.fromkeys(row.text for row in todo))
            results = dict(zip(texts, score(texts), strict=True))
        except ScorerUnavailable as exc:
            unavailable[scorer] = str(exc)
            continue
        with transaction.atomic():
            GifiScore.objects.bulk_create(
                (
                    GifiScore(
                        generation_id=row.generation,
                        scorer=scorer,
                        source=source,
                        value=None if scorer == GifiScore.EMBEDDING else cast(float, results[row.text][0]),
                        vector=results[row.text][0] if scorer == GifiScore.EMBEDDING else None,
                        label=results[row.text][1],
                    )
                    for row in todo
                ),
                batch_size=WRITE_BATCH,
                ignore_conflicts=True,
            )
            # The reports of the pools drawn from these generations' jobs read their scores.
            job_ids = Generation.objects.filter(pk__in=[row.generation for row in todo]).values_list(
                "job_id", flat=True
            )
            job_pools_changed(job_ids=job_ids.distinct())
    return unavailable
