"""A methods section in LaTeX, drawn from the study's own records (the pool's annotators, assignments, training
round and guideline versions) and from its report (agreement with intervals, the judge's verdict, the rates and how
they were estimated): a sentence per number, nothing to fill in by hand but the researcher's own prose.

The LaTeX export gives it as the table `methods` (`manage.py report --format latex --table methods`, the page's
LaTeX export with `?table=methods`) and at the end of the full LaTeX export.
"""

from __future__ import annotations

from analysis.report.exports.tex import latex_escape

Sentence = str


def _interval(ci) -> str:
    return f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else ""


def _people(report: dict) -> list[Sentence]:
    from annotation.models import STUDY, Annotation, Assignment, Pool
    from annotation.selectors import qualification_statuses

    pool = Pool.objects.filter(name=report["pool"]).first()
    if pool is None:
        return []
    annotators = sorted(set(Annotation.objects.filter(item__pool=pool, item__kind=STUDY).values_list(
        "annotator__username", flat=True)))  # fmt: skip
    out = [
        f"The pool {pool.name} holds {report['n_items']} items, {report['n_annotated']} of them annotated, by "
        f"{len(annotators)} annotators."
    ]
    overlap = report.get("inter_annotator", {}).get("pronoun_label", {}).get("n_items")
    if overlap is not None:
        out.append(f"{overlap} items were annotated by two or more annotators (the overlap the agreement is over).")
    assigned = Assignment.objects.filter(pool=pool, item__kind=STUDY).count()
    if assigned:
        out.append(f"{assigned} assignments of study items were made.")
    statuses = qualification_statuses(pool=pool)
    trained = [s for s in statuses.values() if s.get("status") in ("passed", "failed")]
    if trained:
        passed = sum(1 for s in trained if s["status"] == "passed")
        out.append(
            f"Annotators first took a training round with a pass mark of {pool.pass_mark:.0%}: {passed} of "
            f"{len(trained)} passed."
        )
    versions = sorted(
        {v for v in Annotation.objects.filter(item__pool=pool).values_list("guideline_version", flat=True) if v}
    )
    if versions:
        listed = ", ".join(f"v{v}" for v in versions)
        out.append(f"Annotations were made under guideline version{'s' if len(versions) > 1 else ''} {listed}.")
    return out


def _agreement(report: dict) -> list[Sentence]:
    block = report.get("inter_annotator", {}).get("pronoun_label", {})
    out = []
    if block.get("raw_agreement") is not None:
        out.append(
            f"Raw agreement on the pronoun label was {block['raw_agreement']:.3f}"
            f"{_interval(block.get('raw_agreement_boot_ci'))}, bootstrap percentile interval over items, 2,000 draws."
        )
    if block.get("cohen_kappa") is not None:
        out.append(f"Cohen's kappa was {block['cohen_kappa']:.3f}{_interval(block.get('kappa_ci'))}.")
    if block.get("krippendorff_alpha") is not None:
        out.append(f"Krippendorff's alpha was {block['krippendorff_alpha']:.3f}.")
    if block.get("gwet_ac1") is not None:
        out.append(f"Gwet's AC1 was {block['gwet_ac1']:.3f}{_interval(block.get('gwet_ac1_ci'))}.")
    return out


def _judges(report: dict) -> list[Sentence]:
    from analysis.selectors.verdict import selective_sentence, verdict_sentence

    out = []
    for row in report.get("judge_verdict") or []:
        out.append(f"The LLM judge {row['judge']} (version {row['version']}, run {row['run']}) {verdict_sentence(row)}")
        human = next((a for a in row["agreement"] if a["against"] == "human"), None)
        if human and human["cohen_kappa"] is not None:
            out.append(
                f"Its Cohen's kappa with the human label (adjudicated, else the majority) was "
                f"{human['cohen_kappa']:.3f}{_interval(human['cohen_kappa_boot_ci'])} over {human['n']} items."
            )
        out.append(selective_sentence(row))
    for row in report.get("judge_checks") or []:
        if row["check"] == "position" and row["consistency"] is not None:
            out.append(
                f"Under every cyclic rotation of its options, {row['judge']} gave the same label to "
                f"{row['consistency']:.1%} of {row['n']} items."
            )
        elif row["check"] == "family_swap" and row["invariance"] is not None:
            out.append(
                f"With each item's declared pronoun family swapped for every other family of its codebook, "
                f"{row['judge']} kept its label on {row['invariance']:.1%} of {row['n']} item and family pairs."
            )
        elif row["check"] == "contextual" and row["ece_before"] is not None and row["ece_after"] is not None:
            out.append(
                f"Contextual calibration (Zhao et al., 2021) moved {row['judge']}'s expected calibration error from "
                f"{row['ece_before']:.3f} to {row['ece_after']:.3f}."
            )
    return out


def _rates(report: dict) -> list[Sentence]:
    out = []
    ppi = [r for r in report.get("prediction_powered") or [] if r["ppi_rate"] is not None and r["ppi_ci"]]
    if ppi:
        out.append(
            "Misgendering rates were estimated per context (instance and setting) with prediction-powered inference "
            "(PPI++; Angelopoulos et al., 2023), combining people's labels of the pool with the judge's labels of the "
            "whole job; intervals are normal 95% intervals clipped to [0, 1]."
        )
    for r in ppi:
        out.append(
            f"For {r['model']} on {r['dataset']} ({r['pronoun']}), with {r['judge']}, the rate was {r['ppi_rate']:.3f}"
            f"{_interval(r['ppi_ci'])} from {r['n']} contexts people labelled and {r['N']} the judge alone labelled."
        )
    corrected = [r for r in report.get("rates_corrected") or [] if r["rate"] is not None and r["ci"]]
    if corrected:
        out.append(
            "Beside it, the judge's bias-corrected rate (Rogan and Gladen, 1978) divides its positive share, less its "
            "false-positive rate, by its sensitivity plus specificity less one, with a 95% percentile interval from "
            "2,000 bootstrap draws resampling labelled and unlabelled contexts apart."
        )
    for r in corrected:
        out.append(
            f"For {r['model']} on {r['dataset']} ({r['pronoun']}), {r['judge']}'s corrected rate was {r['rate']:.3f}"
            f"{_interval(r['ci'])} (sensitivity {r['se']:.3f}, specificity {r['sp']:.3f})."
        )
    return out


def methods_sentences(report: dict) -> list[Sentence]:
    """The section's sentences, in its order: the people, their agreement, the judges, the rates."""
    return [s for s in (*_people(report), *_agreement(report), *_judges(report), *_rates(report)) if s]


def report_methods_latex(report: dict) -> str:
    """The methods section: one paragraph per part, a sentence per number, every piece of text escaped."""
    parts = [_people(report), _agreement(report), _judges(report), _rates(report)]
    paragraphs = ["\n".join(latex_escape(s) for s in part if s) for part in parts if part]
    if not paragraphs:
        return ""
    return "\\section*{Methods}\n" + "\n\n".join(paragraphs) + "\n"
