"""The LaTeX export as a paper takes it: numbers in right-aligned columns, a `\\label{tab:...}` per
table, no `-- $\\pm$ --` cells, and the whole export compiles with pdflatex (booktabs and graphicx, as
docs/guide-researcher.md says)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from analysis.report.exports.latex import report_latex
from analysis.services import report_build
from tests.analysis.factories import study_build
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

PREAMBLE = "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"


@pytest.fixture
def study(annotator, second_annotator):
    pool = study_build(ana=annotator, bo=second_annotator)
    item = PoolItemFactory(
        pool=pool,
        model_name="m_2#",
        pronoun="xe",
        context="Robin $5 & 50% {cost}: ",
        continuation=" xe paid \\ the ~fee^2 #now_",
        first_pronoun="xe",
    )
    AnnotationFactory(item=item, annotator=annotator, label="misgendering", extraneous=True)
    return pool


@pytest.fixture
def imported(annotator):
    """A pool imported from files: no generation job, so no probability or generation side."""
    pool = PoolFactory(name="imported")
    for pronoun in ("he", "xe", "xe"):
        item = PoolItemFactory(pool=pool, model_name="their-model", pronoun=pronoun)
        AnnotationFactory(item=item, annotator=annotator, label="correct")
    return pool


def tabulars(tex: str) -> list[tuple[str, str]]:
    """(column spec, header row) of each tabular."""
    return re.findall(r"\\begin\{tabular\}\{([^}]*)\}\n\\toprule\n(.*?) \\\\\n", tex)


def test_numbers_sit_in_right_aligned_columns_and_words_in_left_aligned_ones(study):
    tex = report_latex(report=report_build(pool=study), table="accuracy")

    [(spec, header)] = tabulars(tex)

    assert header.split(" & ")[:5] == ["Model", "Dataset", "Setting", "Pronoun", "Instances"]
    assert spec == "llll" + "r" * (len(header.split(" & ")) - 4)


def test_every_table_has_its_own_label(study):
    tex = report_latex(report=report_build(pool=study))

    labels = re.findall(r"\\label\{(tab:[a-z0-9-]+)\}", tex)

    assert len(labels) == tex.count(r"\begin{table}") >= 7
    assert len(set(labels)) == len(labels)
    assert {"tab:accuracy", "tab:inter-annotator", "tab:examples-disagreement-misgendered-pre"} <= set(labels)


def test_no_cell_reads_dash_plus_minus_dash(study, imported):
    for pool in (study, imported):
        tex = report_latex(report=report_build(pool=pool))
        assert r"-- $\pm$ --" not in tex
        assert not re.search(r"(^|& )-- \$\\pm\$", tex, flags=re.M)


def test_an_imported_pools_columns_without_values_are_left_out_and_said_so(imported):
    tex = report_latex(report=report_build(pool=imported), table="accuracy")

    [(spec, header)] = tabulars(tex)

    assert "Probability" not in header and "Human" in header
    assert "No values in this pool, left out: Probability, Generation, First sample." in tex


def pdflatex_or_skip() -> str:
    found = shutil.which("pdflatex")
    if found is None:
        if os.geteuid() == 0:
            pytest.fail("pdflatex is missing: scripts/test.sh installs texlive-latex-base and -recommended as root")
        pytest.skip("needs pdflatex (apt-get install texlive-latex-base texlive-latex-recommended)")
    return found


@pytest.mark.slow  # starts pdflatex in a process; the full suite runs it
@pytest.mark.parametrize("which", ["study", "imported"])
def test_the_whole_export_compiles_with_pdflatex(request, tmp_path, which):
    pdflatex = pdflatex_or_skip()
    pool = request.getfixturevalue(which)
    source = tmp_path / "report.tex"
    source.write_text(
        PREAMBLE + "\\begin{document}\n" + report_latex(report=report_build(pool=pool)) + "\\end{document}\n"
    )

    run = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", source.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    log = (tmp_path / "report.log").read_text(errors="replace")
    assert run.returncode == 0, log[-3000:]
    assert (tmp_path / "report.pdf").stat().st_size > 0
    assert not re.search(r"^! ", log, flags=re.M)
