"""The GIFI report of one model, beside the other models' (docs/domain.md, 'GIFI'): scores what is missing with the
scorers named, then reads every model's dimensions."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from analysis.gifi.scorers import SCORERS, Scorer
from analysis.gifi.selectors import gifi_comparison, gifi_model_report, gifi_models, gifi_pool_corrected_rows
from analysis.gifi.services import gifi_scores_fill
from annotation.models import Pool
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


def gifi_corrected(*, model: LanguageModel, pools: list[Pool]) -> list[dict]:
    """The model's dimensions corrected by people in each people-checked pool named (the pool's `gifi_ppi` rows of
    the model, with the pool's name), read from its human labels as the pool's report reads them."""
    from analysis.selectors.human import pool_item_frame
    from analysis.selectors.verdict import human_side

    rows: list[dict] = []
    for pool in pools:
        human = human_side(frame=pool_item_frame(pool=pool)).label
        rows += [
            {"pool": pool.name, **row}
            for row in gifi_pool_corrected_rows(pool=pool, human=human)
            if row["model"] == model.name
        ]
    return rows
