"""The GIFI report of one model, beside the other models' (docs/domain.md, 'GIFI'): scores what is missing with the
scorers named, then reads every model's dimensions."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from analysis.gifi.scorers import SCORERS, Scorer
from analysis.gifi.selectors import gifi_comparison, gifi_model_report, gifi_models
from analysis.gifi.services import gifi_scores_fill
from generation.models import LanguageModel


def gifi_sources(**named: str | None) -> dict[str, str]:
    """Each scorer's source: the one named, else the paper's."""
    return {scorer: named.get(scorer) or spec.default for scorer, spec in SCORERS.items()}


def gifi_report_build(
    *,
    model: LanguageModel,
    sources: Mapping[str, str],
    score: bool = True,
    load: Callable[[str, str], Scorer] | None = None,
) -> dict:
    """The model's report (its dimensions, GIFI, `scored`, `n`, per-family accuracies) and `comparison`: every
    model with GIFI generations ranked by GIFI, each scored by the same scorers. With `score`, missing scores are
    computed and stored first; without, the stored ones are read."""
    loaded: dict[tuple[str, str], Scorer] = {}
    base = load or (lambda scorer, source: SCORERS[scorer].load(source))

    def load_once(scorer: str, source: str) -> Scorer:  # one load per scorer for all the models
        if (scorer, source) not in loaded:
            loaded[scorer, source] = base(scorer, source)
        return loaded[scorer, source]

    models = {m.pk: m for m in gifi_models()}
    models.setdefault(model.pk, model)
    reports = {}
    for each in models.values():
        unavailable = gifi_scores_fill(model=each, sources=sources, load=load_once) if score else {}
        reports[each.pk] = gifi_model_report(model=each, sources=sources, unavailable=unavailable)
    return {**reports[model.pk], "comparison": gifi_comparison(reports.values())}
