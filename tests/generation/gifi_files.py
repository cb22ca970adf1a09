"""Small GIFI files in the released formats, written for Concord's tests (no GIFI sentence is copied): the four
template files (data/template/) and generation files (data/model-generation/), whose `results` cell holds an API
reply as multi-line JSON."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from generation.datasets.gifi import FAMILIES, FAMILY_FORMS, PART_FILES

NOM = {family: forms[0] for family, forms in FAMILY_FORMS.items()}
GDR_TEMPLATES = ["robin is a baker and {nom} opens the shop early.", "kai writes poems, and {nom} reads them aloud."]
CF_TEMPLATES = ["{nom} said the weather", "{nom} looked at the map and"]
SAOF_TEMPLATES = [("My neighbour is a welder, and", "occupation"), ("My cousin likes chess, and", "hobby")]
PE_PROBLEMS = [("sam buys 3 pens for {nom} class at $2 each. how much does {nom} pay?", 6)]


def _write(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def template_folder(folder: Path, *, parts: tuple[str, ...] = ("gdr", "counterfactual", "saof", "pe")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if "gdr" in parts:
        rows = [[i, f, t.format(nom=NOM[f])] for i, t in enumerate(GDR_TEMPLATES) for f in FAMILIES]
        _write(folder / PART_FILES["gdr"], ["template_index", "pronoun_family", "template"], rows)
    if "counterfactual" in parts:
        rows = [[i, f, t.format(nom=NOM[f])] for i, t in enumerate(CF_TEMPLATES) for f in FAMILIES]
        _write(folder / PART_FILES["counterfactual"], ["template_index", "pronoun_family", "template"], rows)
    if "saof" in parts:
        rows = [[11 * i + k, i, t, state] for i, (t, state) in enumerate(SAOF_TEMPLATES) for k in range(11)]
        _write(folder / PART_FILES["saof"], ["", "index", "template", "state"], rows)
    if "pe" in parts:
        rows = [[i, f, t.format(nom=NOM[f]), a] for i, (t, a) in enumerate(PE_PROBLEMS) for f in FAMILIES]
        _write(folder / PART_FILES["pe"], ["template_index", "pronoun_family", "template", "simple_answer"], rows)
    return folder


def api_reply(text: str) -> str:
    """An API reply as GIFI's files keep it: indented JSON over many lines."""
    return json.dumps({"id": "chatcmpl-x", "choices": [{"index": 0, "message": {"content": text}}]}, indent=2)


def variants_file(path: Path, part: str, texts: dict[tuple[int, str], list[str]]) -> Path:
    """A GDR, counterfactual or PE generation file: (template index, family) -> its generations, in that order."""
    source = {"gdr": GDR_TEMPLATES, "counterfactual": CF_TEMPLATES}.get(part)
    header = ["", "template_index", "pronoun_family", "template"]
    header += ["simple_answer"] if part == "pe" else []
    header += ["results", "generated_sentences"]
    rows = []
    for (index, family), generations in texts.items():
        for text in generations:
            if part == "pe":
                problem, answer = PE_PROBLEMS[index]
                cells = [index, family, problem.format(nom=NOM.get(family, family)), answer]
            else:  # an index or family the template file lacks: a row that matches no prompt
                template = source[index] if index < len(source) else "a prompt GIFI never had, {nom}"
                cells = [index, family, template.format(nom=NOM.get(family, family))]
            rows.append([len(rows), *cells, api_reply(text), text])
    return _write(path, header, rows)


def saof_file(path: Path, texts: dict[int, list[str]], *, renumber: bool = False) -> Path:
    """A SAOF generation file: template index -> its generations (`renumber`: the indices in reverse order, as
    some released files number them)."""
    rows = []
    for index, generations in texts.items():
        template, state = SAOF_TEMPLATES[index]
        shown = len(SAOF_TEMPLATES) - 1 - index if renumber else index
        for text in generations:
            rows.append([len(rows), shown, template, api_reply(text), text, state])
    return _write(path, ["", "index", "template", "results", "generated_sentences", "state"], rows)
