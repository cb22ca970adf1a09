from generation.contexts import build_context, mask_starts_sentence
from generation.datasets.misgendered import MASK as MISGENDERED_MASK
from generation.datasets.registry import codebook_for
from generation.engines.hf.scoring import ScoreItem, candidate_texts

STARTS = f"Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {MISGENDERED_MASK} sold it at the market."
INSIDE = "The baker said that xe would open late. The baker announced that $NOM_PRONOUN had sold out."


class TestContexts:
    def test_it_keeps_the_trailing_space_of_the_pre_context(self):
        assert (
            build_context(STARTS, MISGENDERED_MASK, "xe", "pre")
            == "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
        )

    def test_it_capitalises_the_post_context_when_the_mask_starts_a_sentence(self):
        assert mask_starts_sentence(STARTS, MISGENDERED_MASK)
        assert build_context(STARTS, MISGENDERED_MASK, "xe", "post").endswith("bread. Xe sold it at the market.")

    def test_it_keeps_lower_case_inside_a_sentence(self):
        assert build_context(INSIDE, "$NOM_PRONOUN", "xe", "post").endswith("announced that xe had sold out.")

    def test_it_capitalises_every_candidate_by_the_same_rule(self):
        item = ScoreItem(
            text=STARTS, mask=MISGENDERED_MASK, form="nom", correct_form="xe", codebook=codebook_for("misgendered")
        )
        firsts = [text.split("bread. ")[1].split()[0] for _, text in candidate_texts(item)]
        assert firsts == ["He", "She", "They", "Xe"]
