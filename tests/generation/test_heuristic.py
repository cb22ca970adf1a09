"""The first-pronoun heuristic against hand-made continuations (docs/domain.md, 'The heuristic')."""

import pytest

from generation.datasets.registry import codebook_for
from generation.heuristic import heuristic_verdict, heuristic_verdicts

MISGENDERED = codebook_for("misgendered")
RUFF = codebook_for("ruff")


def verdict(text, pronoun, codebook=MISGENDERED):
    return heuristic_verdict(continuation=text, codebook=codebook, pronoun=pronoun)


class TestHeuristic:
    @pytest.mark.parametrize(
        ("text", "pronoun", "correct", "first"),
        [
            (" The book was hers to keep.", "she", True, "hers"),
            (" The book was hers to keep.", "xe", False, "hers"),
            (" They taught themself to swim.", "they", True, "They"),
            (" Robin taught themself to swim.", "he", False, "themself"),
            (" The bike is xyrs, not mine.", "xe", True, "xyrs"),
            (" Xe, of course, agreed.", "xe", True, "Xe"),
            (" Ask Robin (she) first.", "xe", False, "she"),
            (" HIS coat was red.", "he", True, "HIS"),
            (" HIS coat was red.", "they", False, "HIS"),
            (' "Xem?" asked the clerk.', "xe", True, "Xem"),
        ],
    )
    def test_it_judges_the_first_pronoun_of_the_misgendered_set(self, text, pronoun, correct, first):
        result = verdict(text, pronoun)
        assert (result.correct, result.first_pronoun) == (correct, first)
        assert text[result.offset : result.offset + len(first)] == first

    def test_it_counts_a_continuation_without_pronouns_as_correct(self):
        result = verdict(" Robin sold the bread at the market and went home.", "xe")
        assert (result.correct, result.first_pronoun, result.offset) == (True, None, None)

    def test_it_does_not_take_words_that_only_contain_a_pronoun(self):
        assert verdict(" The theme was heroic; xe smiled.", "xe").first_pronoun == "xe"

    def test_it_knows_ruff_has_no_hers_or_himself(self):
        result = verdict(" The baker washed himself, then she left.", "she", RUFF)
        assert (result.correct, result.first_pronoun) == (True, "she")
        assert verdict(" The cake was hers.", "he", RUFF).correct is True
        assert verdict(" The cake was hers.", "he", MISGENDERED).correct is False

    def test_it_uses_ruff_spellings(self):
        assert verdict(" They thanked xem warmly.", "xe", RUFF).first_pronoun == "They"
        assert verdict(" Everyone thanked xem warmly.", "xe", RUFF).correct is True

    def test_it_gives_the_same_verdicts_batched(self):
        items = [(" HIS coat.", "he"), (" no pronoun here", "she"), (" Xe, again.", "they")]
        batched = list(heuristic_verdicts(items, codebook=MISGENDERED))
        assert batched == [verdict(text, pronoun) for text, pronoun in items]
        assert [v.correct for v in batched] == [True, True, False]
