"""A pool of stereotype pairs for people to label (docs/domain.md, 'Stereotype pair benchmarks'): every pair of the
chosen datasets, in an order drawn with the seed so that the benchmarks are mixed, each shown as its two sentences
(the stereotypical one first) and nothing else: annotators never see the benchmark, its id or the pair's source.
The label set is the seed's four dimensions, the flags are the pitfalls, and the dimension guideline is the pool's
first guidelines version.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.db import transaction

from accounts.models import Project
from accounts.projects import project_default
from annotation.models import FREE_SETTING, STUDY, Pool, PoolItem
from annotation.schema import DIMENSIONS, PAIR_PITFALLS
from annotation.services.guidelines import pool_guidelines_set
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from generation.models import Pair
from generation.selectors import pair_datasets

# The seed's guideline (its appendix C.3), in our words: the pool's first version.
DIMENSION_GUIDELINE = """\
# Stereotype dimensions

Each item is a pair of sentences that differ in a few words: the first is meant to state a gender stereotype, the
second its anti-stereotype. Choose the **one** dimension of gender stereotypes the difference between them is most
about.

- **Personality traits**: a stable quality that shapes a person's thoughts, feelings and behaviour over time and across
  situations (the "Big Five": agreeableness, conscientiousness, extraversion, openness, neuroticism; being kind,
  anxious, outgoing). *"She is unsure of herself."*
- **Attitudes and beliefs**: a learned view or value judgement about an object, a person, a situation or a social
  issue, shaped by experience and culture; it can change over time. *"Women are too emotional to be good scientists."*
- **Roles and behaviors**: observable actions or reactions, and socially made roles tied to gender (occupations,
  caregiving, particular behaviours). *"It was his wife's duty to wash the dishes."*
- **Physical characteristics**: appearance, body features or physical strength. *"The girl's mother was very delicate."*

**When more than one fits**, prefer *Roles and behaviors* over *Attitudes and beliefs*, and *Attitudes and beliefs*
over *Personality traits*.

**Pitfalls.** Tick every problem the pair has (Blodgett et al. 2021): a *conceptualization* pitfall (the pair does not
state a meaningful stereotype, or its anti-stereotype is a non-stereotype, a true statement, offensive, ...), a *basic
control and consistency* issue (the sentences differ in more than the group, have grammar or spelling problems, ...),
an *operationalization* pitfall (invalid perturbation, incommensurable groups, ...), and *stereotype and
anti-stereotype swapped* when the second sentence is the stereotypical one.
"""


class PairPoolError(ValueError):
    """The pool cannot be made as asked; the message says why."""


@dataclass
class PairPoolResult:
    pool: Pool
    items: int
    per_dataset: dict[str, int]


def pair_pool_create(
    *, datasets: list[str], name: str, seed: int, created_by=None, project: Project | None = None
) -> PairPoolResult:
    """Make the pool (see the module docstring) in one transaction: its items, its audit row, its guidelines."""
    known = pair_datasets()
    unknown = [d for d in datasets if d not in known]
    if not datasets or unknown:
        raise PairPoolError(
            f"not a dataset of pairs: {', '.join(unknown) or '(none given)'}; known: {', '.join(known) or 'none'}"
        )
    if Pool.objects.filter(name=name).exists():
        raise PairPoolError(f"pool {name!r} exists already; choose another --name")
    pairs = list(Pair.objects.filter(dataset__name__in=datasets).select_related("dataset").order_by("dataset__name",
                                                                                                    "ordinal"))  # fmt: skip
    random.Random(seed).shuffle(pairs)
    with transaction.atomic():
        pool = Pool.objects.create(
            name=name,
            labels=list(DIMENSIONS),
            flags=PAIR_PITFALLS,
            seed=seed,
            created_by=created_by,
            project=project or project_default(),
        )
        PoolItem.objects.bulk_create(
            PoolItem(
                pool=pool,
                pair=pair,
                model_name="",
                dataset=pair.dataset.name,
                setting=FREE_SETTING,
                template="",
                context=pair.stereotypical,
                continuation=pair.anti_stereotypical,
                external_id=f"{pair.dataset.name}/{pair.source_id}"[:200],
                kind=STUDY,
            )
            for pair in pairs
        )
        pool_changed(pools=[pool])
        per_dataset = {d: sum(1 for p in pairs if p.dataset.name == d) for d in datasets}
        audit_record(
            event="pool.create",
            obj=pool,
            actor=created_by,
            action=CREATE,
            data={"by": "pair_pool", "datasets": datasets, "seed": seed, "items": len(pairs)},
        )
        pool_guidelines_set(pool=pool, text=DIMENSION_GUIDELINE, user=created_by)
    return PairPoolResult(pool=pool, items=len(pairs), per_dataset=per_dataset)
