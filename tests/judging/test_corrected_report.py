"""The report's bias-corrected rates (`rates_corrected`) over the verdict study, each figure worked out here from
the study's plain records (docs/domain.md, "Judges a reviewer trusts": bias-corrected rate)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from annotation.schema import DEFAULT_LABELS, MISGENDERING

pytestmark = pytest.mark.django_db


def _human_label(study, item_id):
    if item_id in study.adjudicated:
        return study.adjudicated[item_id]
    ranked = Counter(study.annotations[item_id].values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _judge_label(study, generation_id):
    scores = study.scores[generation_id]
    return max(DEFAULT_LABELS, key=lambda label: (scores[label], -DEFAULT_LABELS.index(label)))


def test_it_gives_rogan_gladen_rates_per_stratum_beside_ppi(verdict_study, verdict_report):
    study = verdict_study
    rows = verdict_report["rates_corrected"]
    ppi = verdict_report["prediction_powered"]
    assert [(r["model"], r["dataset"], r["pronoun"]) for r in rows] == [
        (r["model"], r["dataset"], r["pronoun"]) for r in ppi
    ]
    by_context = defaultdict(list)
    for generation in study.generations:
        by_context[(generation.instance_id, generation.setting, generation.instance.pronoun)].append(generation.pk)
    item_of = {generation: item for item, generation in study.items.items()}
    for row in rows:
        human, judged, every, n_labelled, units = [], [], [], 0, 0
        for (_, _, pronoun), generations in by_context.items():
            if row["pronoun"] not in ("all", pronoun):
                continue
            units += 1
            labelled = [g for g in generations if g in item_of and _human_label(study, item_of[g]) is not None]
            if labelled:
                n_labelled += 1
                human += [_human_label(study, item_of[g]) == MISGENDERING for g in labelled]
                judged += [_judge_label(study, g) == MISGENDERING for g in labelled]
                every += [_judge_label(study, g) == MISGENDERING for g in labelled]
            else:
                every += [_judge_label(study, g) == MISGENDERING for g in generations]
        h, j = np.array(human), np.array(judged)
        se, sp, q = j[h].mean(), 1 - j[~h].mean(), np.mean(every)
        assert (row["se"], row["sp"], row["q"]) == pytest.approx((se, sp, q))
        assert (row["n_labelled"], row["N"]) == (n_labelled, units)
        if se + sp - 1 > 0.05:
            assert row["rate"] == pytest.approx(min(max((q + sp - 1) / (se + sp - 1), 0), 1))
            assert row["ci"] is not None and 0 <= row["ci"][0] <= row["ci"][1] <= 1
        else:
            assert row["rate"] is None
    assert any(row["rate"] is not None for row in rows)
