"""python manage.py gifi_pool --model M --part gdr|counterfactual|saof --size N --seed S --name P"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.projects import project_argument_add, project_option
from analysis.gifi.pool import POOL_PARTS, gifi_pool_create
from analysis.gifi.report import gifi_sources
from analysis.gifi.scorers import SCORERS
from annotation.services import PoolSampleError
from generation.models import LanguageModel


class Command(BaseCommand):
    help = (
        "Draw a pool of a model's GIFI generations for annotators, with GIFI's scorers recorded as its machine raters "
        "(gifi-detector for gdr and saof; gifi-sentiment and gifi-toxicity for counterfactual, one pool each: "
        "NAME-sentiment and NAME-toxicity), so the pool's report compares them with people."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", required=True)
        parser.add_argument("--part", required=True, choices=list(POOL_PARTS))
        parser.add_argument("--size", required=True, type=int, help="generations to draw")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--name", required=True, help="the pool's name (counterfactual: the two pools' stem)")
        project_argument_add(parser, what="the new pool(s)")
        for scorer in ("sentiment", "toxicity"):
            parser.add_argument(
                f"--{scorer}", help=f"counterfactual: the {scorer} scorer (default {SCORERS[scorer].default})"
            )

    def handle(self, *args, **options) -> None:
        model = LanguageModel.objects.filter(name=options["model"]).first()
        if model is None:
            raise CommandError(f"no model {options['model']!r}")
        sources = gifi_sources(sentiment=options["sentiment"], toxicity=options["toxicity"])
        try:
            result = gifi_pool_create(
                model=model, part=options["part"], size=options["size"], seed=options["seed"], name=options["name"],
                sources=sources, project=project_option(options),
            )  # fmt: skip
        except PoolSampleError as exc:
            raise CommandError(str(exc)) from None
        for pool in result.pools:
            rater = result.raters.get(pool.name)
            said = f"rated by {rater}" if rater else f"not rated: {result.not_rated[pool.name]}"
            self.stdout.write(f"pool {pool.name}: {pool.items.count()} items, labels {', '.join(pool.labels)}; {said}")
