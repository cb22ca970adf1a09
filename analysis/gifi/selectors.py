"""A model's GIFI generations and its GIFI report (docs/domain.md, 'GIFI').

Per part, a model's generations are those of its latest job over that part of a GIFI dataset (a generation job or an
imported file). The dimensions read them, GIFI's pronoun detector and answer extraction, and the stored scores of
the scorers named (analysis.models.GifiScore); `gifi_scores_fill` (analysis/gifi/services.py) stores what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from analysis.metrics.gifi import (
    answer_extract,
    cf_score,
    gdr_score,
    gifi_index,
    is_refusal,
    mean_absolute_deviation,
    nts_of_mad,
    nts_score,
    pe_score,
    saof_of_shares,
    saof_score,
    sn_of_mad,
    sn_score,
)
from analysis.models import GifiScore
from analysis.report.types import GifiFamilyRow, GifiPpiRow, GifiScoreRow
from annotation.models import Pool
from generation.datasets.gifi import COUNTERFACTUAL, FAMILIES, GDR, KIND, PARTS, PE, SAOF, detect_family
from generation.models import Generation, LanguageModel

DIMENSIONS = ("GDR", "SN", "NTS", "CF", "SA", "OF", "PE")
OCCUPATION = "occupation"
# The part each dimension reads, and the scorer it needs (None: built in).
DIMENSION_PART = {"GDR": GDR, "SN": COUNTERFACTUAL, "NTS": COUNTERFACTUAL, "CF": COUNTERFACTUAL, "SA": SAOF,
                  "OF": SAOF, "PE": PE}  # fmt: skip
DIMENSION_SCORER = {"SN": GifiScore.SENTIMENT, "NTS": GifiScore.TOXICITY, "CF": GifiScore.EMBEDDING}


@dataclass(frozen=True)
class GifiRow:
    """One generation of a GIFI prompt: its template (the unit SN, NTS, CF, SA and OF group by)."""

    generation: int
    template: int
    meta: dict
    pronoun: str
    text: str


def gifi_rows(*, model: LanguageModel) -> dict[str, list[GifiRow]]:
    """Per part, the generations of the model's latest job over it, in dataset order (prompt, then sample)."""
    generations = Generation.objects.filter(job__model=model, instance__dataset__kind=KIND)
    rows: dict[str, list[GifiRow]] = {}
    for part in PARTS:
        in_part = generations.filter(instance__template__meta__part=part)
        job_id = in_part.order_by("-job__created_at", "-job_id").values_list("job_id", flat=True).first()
        if job_id is None:
            continue
        values = (
            in_part.filter(job_id=job_id)
            .order_by("instance__ordinal", "sample_index")
            .values_list("id", "instance__template_id", "instance__template__meta", "instance__pronoun", "continuation")
        )
        rows[part] = [GifiRow(*value) for value in values]
    return rows


def gifi_models() -> list[LanguageModel]:
    """The models with GIFI generations, by name."""
    ids = Generation.objects.filter(instance__dataset__kind=KIND).values("job__model_id")
    return list(LanguageModel.objects.filter(pk__in=ids).order_by("name"))


def _usable(rows: Iterable[GifiRow], *, refusals: bool, understand: bool = False) -> list[GifiRow]:
    """Empty generations are dropped everywhere; refusals where the dimension drops them."""
    return [r for r in rows if r.text and not (refusals and is_refusal(r.text, understand=understand))]


def _scores(rows: list[GifiRow], scorer: str, source: str) -> dict[int, GifiScore]:
    stored = GifiScore.objects.filter(generation_id__in=[r.generation for r in rows], scorer=scorer, source=source)
    return {score.generation_id: score for score in stored}


def _grouped(rows: Iterable[GifiRow], value) -> dict[int, list]:
    groups: dict[int, list] = {}
    for row in rows:
        groups.setdefault(row.template, []).append(value(row))
    return groups


@dataclass
class _Dimension:
    score: float | None = None
    n: int = 0
    why: str = ""  # why it is not scored
    per_family: dict[str, float] | None = None
    pairs: int | None = None


def _builtin(name: str, rows: list[GifiRow]) -> _Dimension:
    if name == "GDR":
        used = _usable(rows, refusals=True)
        found = [(r.pronoun, (detect_family(r.text) or (None, None))[1]) for r in used]
        score, accuracies = gdr_score(found)
        return _Dimension(score, len(used), per_family=accuracies)
    if name == "PE":
        used = _usable(rows, refusals=False)
        score, accuracies = pe_score((r.pronoun, answer_extract(r.text), r.meta["simple_answer"]) for r in used)
        return _Dimension(score, len(used), per_family=accuracies)
    used = _units(name, rows)
    groups = _grouped(used, lambda r: (detect_family(r.text) or (None, None))[1])
    return _Dimension(saof_score(groups, families=FAMILIES), len(used))


def _units(name: str, rows: list[GifiRow]) -> list[GifiRow]:
    """The generations SA, OF, SN, NTS or CF counts."""
    if name in ("SA", "OF"):
        occupation = name == "OF"
        return [r for r in _usable(rows, refusals=False) if (r.meta.get("state") == OCCUPATION) == occupation]
    used = _usable(rows, refusals=name != "SN", understand=True)
    if name == "NTS":  # a repeated text counted once, as GIFI merges its scores by text
        first: dict[str, GifiRow] = {}
        for row in used:
            first.setdefault(row.text, row)
        used = list(first.values())
    return used


def _scored(name: str, rows: list[GifiRow], source: str) -> _Dimension:
    scorer = DIMENSION_SCORER[name]
    used = _units(name, rows)
    scores = _scores(used, scorer, source)
    missing = sum(1 for r in used if r.generation not in scores)
    if missing:
        return _Dimension(n=len(used), why=f"{missing} of {len(used)} generations have no {scorer} score by {source}")
    if name == "CF":
        score, pairs = cf_score(_grouped(used, lambda r: scores[r.generation].vector))
        return _Dimension(score, len(used), pairs=pairs)
    groups = _grouped(used, lambda r: scores[r.generation].value)
    return _Dimension(sn_score(groups) if name == "SN" else nts_score(groups), len(used))


def gifi_model_report(
    *, model: LanguageModel, sources: Mapping[str, str], unavailable: Mapping[str, str] | None = None
) -> dict:
    """One model's dimensions, GIFI (x 100, over the scored ones), `scored`, `n` per dimension, the per-family
    accuracies of GDR and PE, and why each unscored dimension is not scored. `sources` names each scorer;
    `unavailable` says, per scorer, what to install (from the scoring service)."""
    unavailable = unavailable or {}
    by_part = gifi_rows(model=model)
    dimensions: dict[str, _Dimension] = {}
    for name in DIMENSIONS:
        part = DIMENSION_PART[name]
        rows = by_part.get(part)
        scorer = DIMENSION_SCORER.get(name)
        if rows is None:
            why = f"no generations of part {part} (generate --part {part}, or import_generations --format gifi)"
            dimensions[name] = _Dimension(why=why)
        elif scorer is not None and scorer in unavailable:
            dimensions[name] = _Dimension(why=unavailable[scorer])
        elif scorer is not None:
            dimensions[name] = _scored(name, rows, sources[scorer])
        else:
            dimensions[name] = _builtin(name, rows)
        if dimensions[name].score is None and not dimensions[name].why:
            dimensions[name].why = "undefined on these generations (too few families or templates)"
    scores = {name: d.score for name, d in dimensions.items()}
    return {
        "model": model.name,
        **scores,
        "GIFI": gifi_index(scores),
        "scored": [name for name, value in scores.items() if value is not None],
        "n": {name: d.n for name, d in dimensions.items()},
        "per_family": {name: dimensions[name].per_family or {} for name in ("GDR", "PE")},
        "not_scored": {name: d.why for name, d in dimensions.items() if d.score is None},
        "cf_pairs": dimensions["CF"].pairs,
        "scorers": dict(sources),
    }


def gifi_comparison(reports: Iterable[dict]) -> list[dict]:
    """The models ranked by GIFI (highest first; a model without one last, unranked), with their scores. Models
    whose GIFI is over different dimensions are ranked together: `scored` says which."""
    rows = sorted(reports, key=lambda r: (r["GIFI"] is None, -(r["GIFI"] or 0), r["model"]))
    ranked = []
    for position, report in enumerate(rows, start=1):
        ranked.append(
            {
                "rank": position if report["GIFI"] is not None else None,
                "model": report["model"],
                **{name: report[name] for name in DIMENSIONS},
                "GIFI": report["GIFI"],
                "scored": report["scored"],
            }
        )
    return ranked


def gifi_stored_sources(*, model: LanguageModel) -> dict[str, str]:
    """Per scorer, the source of the model's most recently stored scores (a report page runs no scorer), else the
    paper's default."""
    from analysis.gifi.scorers import SCORERS

    sources = {}
    for scorer, spec in SCORERS.items():
        latest = (
            GifiScore.objects.filter(generation__job__model=model, scorer=scorer)
            .order_by("-pk")
            .values_list("source", flat=True)
            .first()
        )
        sources[scorer] = latest or spec.default
    return sources


def gifi_pool_models(*, model_names: Iterable[str]) -> list[dict]:
    """The GIFI reports (stored scores only) of those of the named models that have GIFI generations."""
    names = set(model_names)
    return [
        gifi_model_report(model=model, sources=gifi_stored_sources(model=model))
        for model in gifi_models()
        if model.name in names
    ]


def gifi_score_rows(*, reports: list[dict]) -> list[GifiScoreRow]:
    return [
        GifiScoreRow(
            rank=row["rank"],
            model=row["model"],
            GDR=row["GDR"],
            SN=row["SN"],
            NTS=row["NTS"],
            CF=row["CF"],
            SA=row["SA"],
            OF=row["OF"],
            PE=row["PE"],
            GIFI=row["GIFI"],
            scored=" ".join(row["scored"]),
        )  # fmt: skip
        for row in gifi_comparison(reports)
    ]


def gifi_family_rows(*, reports: list[dict]) -> list[GifiFamilyRow]:
    return [
        GifiFamilyRow(model=report["model"], dimension=dimension, pronoun=family, accuracy=accuracy)
        for report in reports
        for dimension in ("GDR", "PE")
        for family, accuracy in report["per_family"][dimension].items()
    ]


ALL_FAMILIES = "all"


def gifi_ppi_rows(
    *, pool_items: Iterable[tuple[int, int | None, str]], human: Mapping[int, str | None]
) -> list[GifiPpiRow]:
    """PPI-corrected GDR from a pool of GDR generations rated by GIFI's detector: per declared family, Y = 1[the
    human label is the declared family], Yhat = 1[the detector's is], over the pool's labelled items (refusals and
    empty texts left out, as GDR leaves them); the unlabelled units are the model's other usable GDR generations of
    the family, Yhat = 1[detected = declared]. `pool_items`: (item id, generation id, model name); `human`: item id ->
    its human label (None: a tie). The `all` row is GDR of the PPI accuracies beside the detector's GDR."""
    from analysis.metrics.gifi import inverse_cv
    from analysis.metrics.verdict import ppi_mean

    items = [(item, generation, model) for item, generation, model in pool_items if generation is not None]
    rows: list[GifiPpiRow] = []
    for model_name in sorted({model for _, _, model in items}):
        model = LanguageModel.objects.get(name=model_name)
        gdr = _usable(gifi_rows(model=model).get(GDR, []), refusals=True)
        by_generation = {row.generation: row for row in gdr}
        in_pool = {generation: item for item, generation, m in items if m == model_name and generation in by_generation}
        if not in_pool:
            continue
        ppi_accuracy, detector_accuracy = [], []
        for family in FAMILIES:
            of_family = [row for row in gdr if row.pronoun == family]
            if not of_family:
                continue
            labelled = [(row, in_pool[row.generation]) for row in of_family if row.generation in in_pool]
            labelled = [(row, item) for row, item in labelled if human.get(item) is not None]
            y = [float(human[item] == family) for _, item in labelled]
            yhat = [float(_detected(row) == family) for row, _ in labelled]
            unlabelled = [float(_detected(row) == family) for row in of_family if row.generation not in in_pool]
            estimate = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
            detector = float(np.mean([_detected(row) == family for row in of_family]))
            detector_accuracy.append(detector)
            if estimate["ppi_rate"] is not None:
                ppi_accuracy.append(min(max(estimate["ppi_rate"], 0.0), 1.0))
            rows.append(
                GifiPpiRow(
                    model=model_name,
                    dimension="GDR",
                    pronoun=family,
                    n=len(y),
                    N=len(unlabelled),
                    detector=detector,
                    human=estimate["human_rate"],
                    ppi=estimate["ppi_rate"],
                    ppi_ci=estimate["ppi_ci"],
                    templates=None,
                )  # fmt: skip
            )
        complete = len(ppi_accuracy) == len(detector_accuracy)
        rows.append(
            GifiPpiRow(
                model=model_name,
                dimension="GDR",
                pronoun=ALL_FAMILIES,
                n=len(in_pool),
                N=len(gdr) - len(in_pool),
                detector=inverse_cv(detector_accuracy, ddof=1),
                human=None,
                ppi=inverse_cv(ppi_accuracy, ddof=1) if complete else None,
                ppi_ci=None,
                templates=None,
            )  # fmt: skip
        )
    return rows


def _detected(row: GifiRow) -> str | None:
    found = detect_family(row.text)
    return None if found is None else found[1]


NO_FAMILY = "none"
# People's labels of the counterfactual pools as the scorers' values (docs/domain.md, 'GIFI').
HUMAN_VALUES = {"SN": {"positive": 1.0, "neutral": 0.0, "negative": -1.0}, "NTS": {"toxic": 1.0, "not": 0.0}}
CORRECTED = ("SA", "OF", "SN", "NTS")


def gifi_pool_corrected_rows(*, pool: Pool, human: Mapping[int, str | None]) -> list[GifiPpiRow]:
    """The dimensions a people-checked pool corrects (`gifi_ppi`): GDR from its GDR items, SA and OF from its SAOF
    items, SN or NTS from its counterfactual items (by the pool's label set). `human`: item id -> its human label."""

    def items(part: str) -> list[tuple[int, int | None, str]]:
        in_part = pool.items.filter(generation__instance__template__meta__part=part)
        return list(in_part.values_list("pk", "generation_id", "model_name"))

    rows = gifi_ppi_rows(pool_items=items(GDR), human=human)
    saof = items(SAOF)
    for dimension in ("SA", "OF"):
        rows += gifi_ppi_dimension_rows(dimension=dimension, pool_items=saof, human=human)
    labels = set(pool.labels)
    for dimension, values in HUMAN_VALUES.items():
        if set(values) == labels:
            rows += gifi_ppi_dimension_rows(dimension=dimension, pool_items=items(COUNTERFACTUAL), human=human)
    return rows


def gifi_ppi_dimension_rows(
    *, dimension: str, pool_items: Iterable[tuple[int, int | None, str]], human: Mapping[int, str | None]
) -> list[GifiPpiRow]:
    """SA, OF (a SAOF pool rated by the detector), SN or NTS (a counterfactual sentiment or toxicity pool) corrected
    by people: per template of the dimension's generations, its term is re-estimated by PPI++ from the pool's items
    of the template with a human label (Y: people's, Yhat: the scorer's) and its other generations (Yhat), and the
    dimension's formula is applied to the terms. A template with fewer than 2 labelled or no unlabelled generation
    keeps the scorer's term. One `all` row per model: n, N, the scorer's score, the corrected one (a point estimate)
    and the number of templates corrected. `pool_items` and `human` as `gifi_ppi_rows`'s."""
    if dimension not in CORRECTED:
        raise ValueError(f"{dimension}: PPI corrects {', '.join(CORRECTED)} here (GDR: gifi_ppi_rows)")
    items = [(item, generation, model) for item, generation, model in pool_items if generation is not None]
    rows: list[GifiPpiRow] = []
    for model_name in sorted({model for _, _, model in items}):
        model = LanguageModel.objects.get(name=model_name)
        used = _units(dimension, gifi_rows(model=model).get(DIMENSION_PART[dimension], []))
        counted = {row.generation for row in used}
        in_pool = {generation: item for item, generation, m in items if m == model_name and generation in counted}
        if not in_pool:
            continue
        values = HUMAN_VALUES.get(dimension)
        labelled: dict[int, str] = {}
        for generation, item in in_pool.items():
            label = human.get(item)
            if label is not None and (values is None or label in values):
                labelled[generation] = label
        unlabelled = [row for row in used if row.generation not in in_pool]
        if dimension in ("SA", "OF"):
            figures = _saof_corrected(used, labelled, in_pool)
        else:
            figures = _mad_corrected(dimension, model, used, labelled, in_pool)
        if figures is None:
            continue
        detector, corrected, templates = figures
        rows.append(
            GifiPpiRow(
                model=model_name,
                dimension=dimension,
                pronoun=ALL_FAMILIES,
                n=len(labelled),
                N=len(unlabelled),
                detector=detector,
                human=None,
                ppi=corrected,
                ppi_ci=None,
                templates=templates,
            )  # fmt: skip
        )
    return rows


def _split(group: list[GifiRow], labelled: Mapping[int, str], in_pool: Mapping[int, int]):
    """A template's generations with a human label, and those outside the pool (a tied item is in neither)."""
    return (
        [row for row in group if row.generation in labelled],
        [row for row in group if row.generation not in in_pool],
    )


def _saof_corrected(used: list[GifiRow], labelled: Mapping[int, str], in_pool: Mapping[int, int]):
    """Per template, each family's share of the generations, PPI++ on Y = 1[people's label is the family] and
    Yhat = 1[the detector's is] (clipped to [0, 1]); the shares among the families (none left out) are the
    template's shares; SA / OF on them."""
    from analysis.metrics.verdict import ppi_mean

    detector = saof_score(_grouped(used, _detected), families=FAMILIES)
    per_template, corrected = [], 0
    for group in _grouped(used, lambda r: r).values():
        with_label, outside = _split(group, labelled, in_pool)
        found = [_detected(row) or NO_FAMILY for row in group]
        if len(with_label) >= 2 and outside:
            estimates = {}
            for family in FAMILIES:
                estimate = ppi_mean(
                    y=[float(labelled[row.generation] == family) for row in with_label],
                    yhat=[float(_detected(row) == family) for row in with_label],
                    yhat_unlabelled=[float(_detected(row) == family) for row in outside],
                )["ppi_rate"]
                estimates[family] = min(max(float(estimate or 0.0), 0.0), 1.0)
            corrected += 1
        else:
            estimates = {family: float(found.count(family)) for family in FAMILIES}
        total = sum(estimates.values())
        if total > 0:  # a template with no family (detected or estimated) is left out, as SA and OF leave it
            per_template.append({family: share / total for family, share in estimates.items()})
    return detector, saof_of_shares(per_template, families=FAMILIES), corrected


def _mad_corrected(
    dimension: str, model: LanguageModel, used: list[GifiRow], labelled: Mapping[int, str], in_pool: Mapping[int, int]
):
    """Per template, the centre m = PPI++ of the template's mean value, then its mean absolute deviation = PPI++ on
    Y = |people's value - m| and Yhat = |the scorer's - m|; SN / NTS of the mean over templates. None while a
    generation the dimension counts has no stored score."""
    from analysis.metrics.verdict import ppi_mean

    scorer = DIMENSION_SCORER[dimension]
    scores = _scores(used, scorer, gifi_stored_sources(model=model)[scorer])
    if any(row.generation not in scores for row in used):
        return None
    values = HUMAN_VALUES[dimension]
    formula = sn_of_mad if dimension == "SN" else nts_of_mad

    def scored(row: GifiRow) -> float:
        return float(scores[row.generation].value or 0.0)

    groups = _grouped(used, lambda r: r)
    detector = formula(mean_absolute_deviation({t: [scored(r) for r in g] for t, g in groups.items()}))
    terms, corrected = [], 0
    for group in groups.values():
        with_label, outside = _split(group, labelled, in_pool)
        y = np.array([values[labelled[row.generation]] for row in with_label])
        yhat = np.array([scored(row) for row in with_label])
        others = np.array([scored(row) for row in outside])
        centre = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=others)["ppi_rate"]
        if centre is None:
            every = np.array([scored(row) for row in group])
            terms.append(float(np.abs(every - every.mean()).mean()))
            continue
        deviation = ppi_mean(y=np.abs(y - centre), yhat=np.abs(yhat - centre), yhat_unlabelled=np.abs(others - centre))
        terms.append(max(float(deviation["ppi_rate"] or 0.0), 0.0))  # a mean absolute deviation is not negative
        corrected += 1
    return detector, formula(float(np.mean(terms)) if terms else None), corrected
