"""People check GIFI's scorers (docs/domain.md, 'GIFI'): a pool of a model's GIFI generations for annotators, with
GIFI's own scorers recorded as machine raters of it (external judges with imported runs, as any judge's labels made
elsewhere), so the pool's report gives their agreement with people, their verdict and PPI-corrected rates.

- gdr / saof: one pool, labels the 11 families and `none` (the family the text uses for the person; none: no
  pronoun), rated by `gifi-detector` (GIFI's detector; positive label `none`);
- counterfactual: two pools over the same draw, `<name>-sentiment` (positive / neutral / negative, rated by
  `gifi-sentiment`, positive label `negative`) and `<name>-toxicity` (toxic / not, rated by `gifi-toxicity`,
  positive label `toxic`), since an item carries one label per pool.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.db import transaction

from accounts.models import Project
from analysis.gifi.scorers import Scorer
from analysis.gifi.selectors import gifi_rows
from analysis.gifi.services import gifi_scores_fill
from analysis.models import GifiScore
from annotation.models import Pool
from annotation.services import PoolSampleError, pool_from_generations
from annotation.services.stamp import pool_changed
from generation.datasets.gifi import COUNTERFACTUAL, FAMILIES, GDR, SAOF, detect_family
from generation.models import Generation, LanguageModel
from judging.models import MachineLabel
from judging.services.imports import external_judge
from judging.services.runs import imported_run_record

NONE = "none"
DETECTOR, SENTIMENT_RATER, TOXICITY_RATER = "gifi-detector", "gifi-sentiment", "gifi-toxicity"
POOL_PARTS = (GDR, COUNTERFACTUAL, SAOF)
SENTIMENT_LABELS = ["positive", "neutral", "negative"]
TOXICITY_LABELS = ["toxic", "not"]


@dataclass
class GifiPoolResult:
    pools: list[Pool]
    raters: dict[str, str]  # pool name -> the machine rater recorded on it
    not_rated: dict[str, str]  # pool name -> why its scorer gave no labels


def _draw(model: LanguageModel, part: str, size: int, seed: int) -> list[Generation]:
    rows = [row for row in gifi_rows(model=model).get(part, []) if row.text]
    if size < 1:
        raise PoolSampleError("--size must be at least 1")
    if len(rows) < size:
        raise PoolSampleError(f"{model.name} has {len(rows)} non-empty {part} generations; --size {size} is more")
    chosen = sorted(random.Random(seed).sample(range(len(rows)), size))
    ids = [rows[i].generation for i in chosen]
    found = Generation.objects.select_related("job", "job__model").in_bulk(ids)
    return [found[pk] for pk in ids]


Rated = tuple[str, dict[str, float], float | None]  # label, label probabilities (may be none), confidence


def _rate(pool: Pool, *, rater: str, model_id: str, description: str, labels: Mapping[int, Rated]) -> None:
    """Record a scorer's labels of the pool's items as one imported run of an external judge."""
    judge, _ = external_judge(name=rater, labels=list(pool.labels), model_id=model_id, description=description)
    items = list(pool.items.order_by("pk").values_list("pk", "generation_id"))
    run = imported_run_record(judge=judge, pool=pool, count=len(items), source_file=f"{rater}.scores")
    MachineLabel.objects.bulk_create(
        MachineLabel(
            run=run,
            item_id=item,
            label=labels[generation][0],
            scores=labels[generation][1],
            confidence=labels[generation][2],
            prompt="",
        )
        for item, generation in items
    )
    pool_changed(pools=[pool])


def gifi_pool_create(
    *,
    model: LanguageModel,
    part: str,
    size: int,
    seed: int,
    name: str,
    sources: Mapping[str, str],
    load: Callable[[str, str], Scorer] | None = None,
    created_by=None,
    project: Project | None = None,
) -> GifiPoolResult:
    """Draw `size` of the model's non-empty generations of the part (seeded, uniformly, kept in dataset order) into
    the pool(s) of the module docstring, each with its machine rater. Nothing is written on a bad request."""
    if part not in POOL_PARTS:
        raise PoolSampleError(f"--part {part!r}: use one of {', '.join(POOL_PARTS)}")
    drawn = _draw(model, part, size, seed)
    if part != COUNTERFACTUAL:
        with transaction.atomic():
            pool = pool_from_generations(
                name=name,
                generations=drawn,
                labels=[*FAMILIES, NONE],
                positive=NONE,
                seed=seed,
                created_by=created_by,
                project=project,
            )
            detected: dict[int, Rated] = {
                g.pk: ((detect_family(g.continuation) or (None, NONE))[1], {}, None) for g in drawn
            }
            _rate(pool, rater=DETECTOR, model_id="", description="GIFI's pronoun detector", labels=detected)
        return GifiPoolResult([pool], {pool.name: DETECTOR}, {})
    scorers = {GifiScore.SENTIMENT: sources[GifiScore.SENTIMENT], GifiScore.TOXICITY: sources[GifiScore.TOXICITY]}
    unavailable = gifi_scores_fill(model=model, sources=scorers, load=load)
    result = GifiPoolResult([], {}, {})
    specs = [
        (GifiScore.SENTIMENT, f"{name}-sentiment", SENTIMENT_LABELS, "negative", SENTIMENT_RATER),
        (GifiScore.TOXICITY, f"{name}-toxicity", TOXICITY_LABELS, "toxic", TOXICITY_RATER),
    ]
    with transaction.atomic():
        for scorer, pool_name, labels, positive, rater in specs:
            pool = pool_from_generations(
                name=pool_name,
                generations=drawn,
                labels=labels,
                positive=positive,
                seed=seed,
                created_by=created_by,
                project=project,
            )
            result.pools.append(pool)
            stored = {
                s.generation_id: s
                for s in GifiScore.objects.filter(generation__in=drawn, scorer=scorer, source=scorers[scorer])
            }
            if scorer in unavailable or len(stored) < len(drawn):
                result.not_rated[pool_name] = unavailable.get(scorer, f"no {scorer} score for every item")
                continue
            _rate(
                pool, rater=rater, model_id=scorers[scorer], description=f"GIFI's {scorer} scorer",
                labels={pk: _scored_label(scorer, score) for pk, score in stored.items()},
            )  # fmt: skip
            result.raters[pool_name] = rater
    return result


def _scored_label(scorer: str, score: GifiScore) -> Rated:
    """The label with, for toxicity, its probabilities (p, 1 - p) and confidence max(p, 1 - p); for sentiment, the
    classifier's score of a positive or negative label as its confidence (a neutral one's is not stored)."""
    value = float(score.value or 0.0)
    if scorer == GifiScore.TOXICITY:
        return score.label, {"toxic": value, "not": 1 - value}, max(value, 1 - value)
    return score.label, {}, abs(value) if score.label != "neutral" else None
