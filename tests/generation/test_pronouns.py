"""Codebook spellings per dataset (checked against the datasets' own pronouns.csv) and the capitalisation rule."""

import csv

import pytest

from generation.contexts import build_context, fill_mask, mask_starts_sentence, pre_context
from generation.datasets.registry import codebook_for
from generation.pronouns import BASES
from tests.conftest import DATASETS

COLUMN_FOR_FORM = {
    "misgendered": {"nom": "nom", "acc": "acc", "pos_dep": "pos_dep", "pos_ind": "pos_indep", "ref": "ref"},
    "ruff": {"nom": "$NOM_PRONOUN", "acc": "$ACC_PRONOUN", "pos_dep": "$POSS_PRONOUN"},
}


@pytest.mark.parametrize("dataset", ["misgendered", "ruff"])
def test_it_spells_every_form_as_the_datasets_codebook_file_does(dataset):
    with (DATASETS / dataset / "pronouns.csv").open(newline="") as handle:
        rows = {row["gender"]: row for row in csv.DictReader(handle)}
    codebook = codebook_for(dataset)

    assert set(rows) == set(BASES)
    for base in BASES:
        for form, column in COLUMN_FOR_FORM[dataset].items():
            assert codebook.surface(base, form) == rows[base][column], (dataset, base, form)
    assert codebook.forms == tuple(COLUMN_FOR_FORM[dataset])


def test_it_keeps_tango_spellings_apart_from_misgendered():
    with (DATASETS / "tango" / "tango-pronouns.csv").open(newline="") as handle:
        text = handle.read()
    assert "xir" in text
    assert codebook_for("tango").surface("xe", "acc") == "xir"
    assert codebook_for("misgendered").surface("xe", "acc") == "xem"


def test_its_pronoun_sets_differ_by_dataset():
    assert {"hers", "himself", "xyrs", "themself"} <= codebook_for("misgendered").omega
    assert not {"hers", "himself", "xyrs", "themself"} & codebook_for("ruff").omega
    assert codebook_for("ruff").base_of["her"] == "she" and codebook_for("ruff").base_of["his"] == "he"


def test_it_capitalises_a_mask_that_starts_a_sentence():
    text = "Sol/'s pronouns are xe/xem/xyrs. Sol was tired. {mask_token} slept."
    assert mask_starts_sentence(text, "{mask_token}")
    assert fill_mask(text, "{mask_token}", "xe").endswith("Sol was tired. Xe slept.")


def test_it_leaves_a_mask_inside_a_sentence_lower_case():
    text = "The cook said that $NOM_PRONOUN was late."
    assert not mask_starts_sentence(text, "$NOM_PRONOUN")
    assert fill_mask(text, "$NOM_PRONOUN", "xe") == "The cook said that xe was late."


def test_it_looks_exactly_two_characters_back():
    # A full stop further back (or right before the mask, without the space) does not start a sentence.
    assert not mask_starts_sentence("Done.{m} again", "{m}")
    assert mask_starts_sentence(". {m}", "{m}")
    assert not mask_starts_sentence("{m} starts the text", "{m}")


def test_the_pre_context_keeps_its_trailing_space_and_post_fills_the_mask():
    text = "Ren/'s pronouns are they/them/theirs. Ren was kind. {mask_token} helped everyone."
    assert pre_context(text, "{mask_token}") == "Ren/'s pronouns are they/them/theirs. Ren was kind. "
    assert build_context(text, "{mask_token}", "they", "post").endswith("Ren was kind. They helped everyone.")
    with pytest.raises(ValueError, match="unknown setting 'middle'"):
        build_context(text, "{mask_token}", "they", "middle")
