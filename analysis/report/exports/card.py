"""A judge card's exports (analysis/selectors/card.py): JSON (the card itself), HTML (the page's content, standalone,
its figures inline as SVG) and LaTeX (a section with the card's figures as sentences and one table of its rates).
The figures are the report's own (analysis/plots: the reliability diagram, before and after contextual calibration
where the judge has that check, the choices by option position and the accuracy by family under the swap), drawn from
this card's judge only."""

from __future__ import annotations

import json

from analysis.report.exports.tex import latex_escape

CARD_FORMATS = {"json": "application/json", "html": "text/html; charset=utf-8", "tex": "application/x-tex"}


def _number(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def card_figures(card: dict) -> list[dict]:
    """The card's figures as inline SVG: name, title, caption, svg; only those with something to draw."""
    from analysis.plots import FIGURES, plot_render

    report = {
        "judge_checks": card["checks"],
        "judge_reliability": card["calibration"]["reliability_before"],
        "judge_calibration": [card["calibration"]["before"]] if card["calibration"]["before"] else [],
        "labels": list(card["options"]),
    }
    contextual = card["calibration"]["contextual"] is not None
    names = ["judge_check_calibration" if contextual else "judge_reliability"]
    names += [
        name
        for name, check in (("judge_check_positions", "position"), ("judge_check_families", "family_swap"))
        if any(row["check"] == check for row in card["checks"])
    ]
    shown = []
    for name in names:
        if not report.get(FIGURES[name].table):
            continue
        svg = plot_render(report=report, name=name, fmt="svg").decode()
        shown.append({"name": name, "title": FIGURES[name].title, "caption": FIGURES[name].caption, "svg": svg})
    return shown


def card_json(card: dict) -> str:
    return json.dumps(card, indent=2, ensure_ascii=False, default=str) + "\n"


def _verdict_sentences(card: dict) -> list[str]:
    if not card["verdict_sentence"]:
        return []
    out = [f"It {card['verdict_sentence']}"]
    human = next((a for a in card["verdict"]["agreement"] if a["against"] == "human"), None)
    if human and human["cohen_kappa"] is not None:
        ci = human["cohen_kappa_boot_ci"]
        interval = f" (bootstrap 95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else ""
        out.append(
            f"Its Cohen's kappa with the human label is {human['cohen_kappa']:.3f}{interval} over {human['n']} items."
        )
    return [*out, card["selective_sentence"]]


def _check_sentence(row: dict) -> str | None:
    if row["check"] == "position" and row["consistency"] is not None:
        return (
            f"Under every cyclic rotation of the options it gives the same label to {row['consistency']:.1%} of "
            f"{row['n']} items."
        )
    if row["check"] == "family_swap" and row["invariance"] is not None:
        return (
            f"With the declared pronoun family swapped for another it keeps its label on {row['invariance']:.1%} of "
            f"{row['n']} item and family pairs."
        )
    if row["check"] == "contextual" and row["ece_before"] is not None:
        return (
            f"Contextual calibration moves its expected calibration error from {row['ece_before']:.3f} to "
            f"{_number(row['ece_after'])} and its Brier score from {_number(row['brier_before'])} to "
            f"{_number(row['brier_after'])}."
        )
    return None


def _rate_sentences(card: dict) -> list[str]:
    out = []
    for row in card["rates"]:
        if row["ppi_rate"] is not None and row["ppi_ci"]:
            out.append(
                f"For {row['model']} on {row['dataset']} ({row['pronoun']}), the prediction-powered misgendering rate "
                f"is {row['ppi_rate']:.3f} (95% interval {row['ppi_ci'][0]:.3f} to {row['ppi_ci'][1]:.3f}) from "
                f"{row['n']} contexts people labelled and {row['N']} only the judge labelled."
            )
    for row in card["rates_corrected"]:
        if row["rate"] is not None and row["ci"]:
            out.append(
                f"For {row['model']} on {row['dataset']} ({row['pronoun']}), the bias-corrected rate is "
                f"{row['rate']:.3f} (95% bootstrap interval {row['ci'][0]:.3f} to {row['ci'][1]:.3f}; sensitivity "
                f"{row['se']:.3f}, specificity {row['sp']:.3f})."
            )
    return out


def card_sentences(card: dict) -> list[str]:
    """The card in sentences, a figure each (the LaTeX export's body; plain text)."""
    judge = f"{card['judge']} v{card['version']}"
    out = [f"Judge {judge} (run {card['run']}, {card['mode']} mode, model {card['model']}) labels {card['scope']}."]
    if card["members"]:
        listed = ", ".join(
            f"{m['judge']} v{m['version']} (run {m['run']}, model {m['model']})" for m in card["members"]
        )
        out.append(f"It is a panel of {len(card['members'])} judge runs: {listed}; {card['n_unlabelled']} items tie.")
    out += _verdict_sentences(card)
    before = card["calibration"]["before"]
    if before and before["ece"] is not None:
        out.append(
            f"Its expected calibration error is {before['ece']:.3f} and its Brier score {_number(before['brier'])} "
            f"over {before['n']} annotated items."
        )
    out += [sentence for row in card["checks"] if (sentence := _check_sentence(row))]
    out += _rate_sentences(card)
    if card["cost"]:
        cost = card["cost"]
        usd = (
            f"{cost['cost_usd']} USD"
            if cost["cost_usd"] is not None
            else "no cost in USD (the model declares no prices)"
        )
        out.append(
            f"Its endpoint was sent {cost['requests']} requests ({cost['tokens_in']} tokens in, {cost['tokens_out']} "
            f"tokens out): {usd}."
        )
    return [sentence for sentence in out if sentence]


def card_latex(card: dict) -> str:
    title = latex_escape(f"Judge card: {card['judge']} v{card['version']} (run {card['run']})")
    body = "\n".join(latex_escape(sentence) for sentence in card_sentences(card))
    prompt = "\n".join(
        r"\texttt{" + latex_escape(line) + r"}\\" for line in card["prompt"].splitlines() if line.strip()
    )
    return f"\\section*{{{title}}}\n{body}\n\n\\paragraph{{Prompt (version {card['prompt_version']}).}}\n{prompt}\n"
