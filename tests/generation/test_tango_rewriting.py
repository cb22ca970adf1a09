"""Prob-TANGO's rewriting (docs/domain.md, 'TANGO and Prob-TANGO', steps 1-5): a table of hand-made continuations,
each with the cut, the neutralized text and the template a careful reader writes by hand."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from generation import rewriting
from generation.rewriting import (
    SpacyPipelineMissing,
    rewrite_continuations,
    template_fill,
    verb_plural,
    verb_singular,
)


def prefer_theyve_before_participles(options):
    """A stand-in for the language model: they've before "been"/"got", else they're."""
    return [1 if " been" in with_ve or " got" in with_ve else 0 for _, _, with_ve in options]


# (continuation, cut, neutralized, template); the cut equals the continuation unless a second pronoun ends it.
TABLE = [
    # he and she, nominative, and the verbs whose subject they are
    (" and he walks to the market.", None, " and they walk to the market.", " and {nom} walks to the market."),
    (" She sings every morning.", None, " They sing every morning.", " {Nom} sings every morning."),
    # him, her as objects (dobj, pobj, dative), her as a possessive, his both ways, hers, the reflexives
    (
        " The teacher thanked him warmly.",
        None,
        " The teacher thanked them warmly.",
        " The teacher thanked {acc} warmly.",
    ),
    (" Everyone admires her.", None, " Everyone admires them.", " Everyone admires {acc}."),
    (" The dog ran toward her.", None, " The dog ran toward them.", " The dog ran toward {acc}."),
    (" The clerk gave her a receipt.", None, " The clerk gave them a receipt.", " The clerk gave {acc} a receipt."),
    (" Her garden is full of roses.", None, " Their garden is full of roses.", " {Gen_att} garden is full of roses."),
    (
        " and the storm damaged her roof.",
        None,
        " and the storm damaged their roof.",
        " and the storm damaged {gen_att} roof.",
    ),
    (" His brother lives in Lyon.", None, " Their brother lives in Lyon.", " {Gen_att} brother lives in Lyon."),
    (" His old car broke down.", None, " Their old car broke down.", " {Gen_att} old car broke down."),
    (" The red bicycle is his.", None, " The red bicycle is theirs.", " The red bicycle is {gen_pred}."),
    (" The blue coat is hers.", None, " The blue coat is theirs.", " The blue coat is {gen_pred}."),
    (
        " and the photo of himself was framed.",
        None,
        " and the photo of themself was framed.",
        " and the photo of {ref} was framed.",
    ),
    (
        " The poem was written by herself.",
        None,
        " The poem was written by themself.",
        " The poem was written by {ref}.",
    ),
    # xe forms go through the she form of their case
    (" and xe walks home.", None, " and they walk home.", " and {nom} walks home."),
    (" Xe laughs loudly.", None, " They laugh loudly.", " {Nom} laughs loudly."),
    (" Everyone thanked xir.", None, " Everyone thanked them.", " Everyone thanked {acc}."),
    (" Xir sister paints murals.", None, " Their sister paints murals.", " {Gen_att} sister paints murals."),
    (" The green umbrella is xirs.", None, " The green umbrella is theirs.", " The green umbrella is {gen_pred}."),
    (
        " The letter was addressed to xirself.",
        None,
        " The letter was addressed to themself.",
        " The letter was addressed to {ref}.",
    ),
    # capitalised and upper-case pronouns (and upper-case verbs)
    (" HE WORKS LATE.", None, " THEY WORK LATE.", " {NOM} WORKS LATE."),
    (" SHE LIKES TEA.", None, " THEY LIKE TEA.", " {NOM} LIKES TEA."),
    (" HER CAT IS ASLEEP.", None, " THEIR CAT IS ASLEEP.", " {GEN_ATT} CAT IS ASLEEP."),
    (" WAS HE THERE?", None, " WERE THEY THERE?", " WAS {NOM} THERE?"),
    # the irregular agreements: is/was/has/does/goes
    (" and she is a nurse.", None, " and they are a nurse.", " and {nom} is a nurse."),
    (" He was tired after the trip.", None, " They were tired after the trip.", " {Nom} was tired after the trip."),
    (" and he has a small boat.", None, " and they have a small boat.", " and {nom} has a small boat."),
    (" She does the crossword daily.", None, " They do the crossword daily.", " {Nom} does the crossword daily."),
    (
        " and he goes fishing on Sundays.",
        None,
        " and they go fishing on Sundays.",
        " and {nom} goes fishing on Sundays.",
    ),
    # regular agreements: -ies -> -y, -es dropped after s/z/x/ch/sh, else -s dropped
    (
        " She carries the groceries upstairs.",
        None,
        " They carry the groceries upstairs.",
        " {Nom} carries the groceries upstairs.",
    ),
    (" and he washes the dishes.", None, " and they wash the dishes.", " and {nom} washes the dishes."),
    (
        " She teaches history at the school.",
        None,
        " They teach history at the school.",
        " {Nom} teaches history at the school.",
    ),
    (" He fixes old radios.", None, " They fix old radios.", " {Nom} fixes old radios."),
    (" and she passes the ball.", None, " and they pass the ball.", " and {nom} passes the ball."),
    (" He buzzes the doorbell twice.", None, " They buzz the doorbell twice.", " {Nom} buzzes the doorbell twice."),
    (" He runs every evening.", None, " They run every evening.", " {Nom} runs every evening."),
    # auxiliaries, negation and questions agree; past tense and modals do not change
    (
        " and she has finished the book.",
        None,
        " and they have finished the book.",
        " and {nom} has finished the book.",
    ),
    (" He doesn't like rain.", None, " They don't like rain.", " {Nom} doesn't like rain."),
    (" She isn't ready yet.", None, " They aren't ready yet.", " {Nom} isn't ready yet."),
    (" Does he know the way?", None, " Do they know the way?", " Does {nom} know the way?"),
    (" She walked to the station.", None, " They walked to the station.", " {Nom} walked to the station."),
    (" He will call tomorrow.", None, " They will call tomorrow.", " {Nom} will call tomorrow."),
    # conjunct verbs agree (even when the tagger calls them nouns); a verb with its own subject does not
    (" He cooks and cleans every day.", None, " They cook and clean every day.", " {Nom} cooks and cleans every day."),
    (" and he cries and hugs Sarah.", None, " and they cry and hug Sarah.", " and {nom} cries and hugs Sarah."),
    (
        " and he paints and sells the portraits.",
        None,
        " and they paint and sell the portraits.",
        " and {nom} paints and sells the portraits.",
    ),
    (
        " He sings and Maria plays the piano.",
        None,
        " They sing and Maria plays the piano.",
        " {Nom} sings and Maria plays the piano.",
    ),
    (" Maria calls him daily.", None, " Maria calls them daily.", " Maria calls {acc} daily."),
    # he's / she's: they're or they've, as the language model chooses; the template keeps 's
    (" and he's happy today.", None, " and they're happy today.", " and {nom}'s happy today."),
    (" She's been to Rome twice.", None, " They've been to Rome twice.", " {Nom}'s been to Rome twice."),
    (" and he\u2019s here.", None, " and they\u2019re here.", " and {nom}\u2019s here."),
    (" and xe's been busy.", None, " and they've been busy.", " and {nom}'s been busy."),
    # the cut before the second pronoun, trailing whitespace dropped
    (" He said that she would come.", " He said that", " They said that", " {Nom} said that"),
    (" Xe called xir mother.", " Xe called", " They called", " {Nom} called"),
    (" and he waves.   ", " and he waves.", " and they wave.", " and {nom} waves."),
    # already they: the text stays, the template's verbs are singular again
    (" and they are happy.", None, " and they are happy.", " and {nom} is happy."),
    (" They study at night.", None, " They study at night.", " {Nom} studies at night."),
    (" They're late again.", None, " They're late again.", " {Nom}'s late again."),
    (" Their dog barks.", None, " Their dog barks.", " {Gen_att} dog barks."),
    # only the finite word of a verb group agrees: a base form after a modal or do, or a participle, stays
    (" They don't go there.", None, " They don't go there.", " {Nom} doesn't go there."),
    (" They can do it.", None, " They can do it.", " {Nom} can do it."),
    (" Did they go home?", None, " Did they go home?", " Did {nom} go home?"),
    (" Do they have a car?", None, " Do they have a car?", " Does {nom} have a car?"),
    (" They will have finished.", None, " They will have finished.", " {Nom} will have finished."),
    (" They could've gone.", None, " They could've gone.", " {Nom} could've gone."),
    (" HE DOES NOT FOCUS ON WORK.", None, " THEY DO NOT FOCUS ON WORK.", " {NOM} DOES NOT FOCUS ON WORK."),
    # an upper-case negation is one token ("DON'T") and agrees as its verb does
    (" SHE ISN'T HERE.", None, " THEY AREN'T HERE.", " {NOM} ISN'T HERE."),
    (" THEY DON'T GO.", None, " THEY DON'T GO.", " {NOM} DOESN'T GO."),
]


@pytest.fixture(scope="module")
def rewrites():
    texts = [row[0] for row in TABLE]
    return dict(
        zip(texts, rewrite_continuations(texts, choose_contraction=prefer_theyve_before_participles), strict=True)
    )


@pytest.mark.parametrize(("continuation", "cut", "neutralized", "template"), TABLE, ids=[row[0] for row in TABLE])
def test_it_rewrites_each_continuation_as_written_by_hand(rewrites, continuation, cut, neutralized, template):
    rewrite = rewrites[continuation]

    assert rewrite.cut == (continuation.rstrip() if cut is None else cut)
    assert rewrite.neutralized == neutralized
    assert rewrite.template == template
    assert rewrite.failed is False


def test_the_table_covers_at_least_forty_continuations():
    assert len(TABLE) >= 40


def test_it_fails_a_continuation_without_a_pronoun_and_keeps_its_text():
    [rewrite] = rewrite_continuations([" The weather stayed cold all week, and Rowan stayed in."])

    assert rewrite.failed is True
    assert rewrite.template is None
    assert rewrite.cut == rewrite.neutralized == " The weather stayed cold all week, and Rowan stayed in."


def test_it_does_not_count_words_outside_tangos_pronouns_as_slots():
    # "xem" and "themselves" are other datasets' or plural forms, not TANGO's: no slot, so the template fails.
    [rewrite] = rewrite_continuations([" Everyone waved at xem, and the twins hid themselves."])

    assert rewrite.failed is True


def test_it_asks_the_model_only_for_contractions_with_both_spellings():
    asked = []

    def choose(options):
        asked.extend(options)
        return [1] * len(options)

    results = rewrite_continuations([" He walks.", " and she's got a plan."], choose_contraction=choose)

    assert asked == [(1, " and they're got a plan.", " and they've got a plan.")]
    assert results[1].neutralized == " and they've got a plan."


def test_it_needs_a_chooser_for_contractions_only():
    assert rewrite_continuations([" He walks."])[0].neutralized == " They walk."
    with pytest.raises(ValueError, match="they're"):
        rewrite_continuations([" He's here."])


@pytest.mark.parametrize(
    ("template", "family", "filled"),
    [
        (" {Nom} walks with {gen_att} dog.", "xe", " Xe walks with xir dog."),
        (" The coat is {gen_pred}.", "xe", " The coat is xirs."),
        (" The coat is {gen_pred}.", "she", " The coat is hers."),
        (" {NOM} WORKS.", "he", " HE WORKS."),
        (" thanked {acc} and {ref}", "she", " thanked her and herself"),
        (" {Gen_att} garden", "he", " His garden"),
    ],
)
def test_it_fills_a_template_with_tangos_spelling_of_each_case(template, family, filled):
    assert template_fill(template, family) == filled


@pytest.mark.parametrize(
    ("singular", "plural"),
    [
        ("is", "are"),
        ("was", "were"),
        ("has", "have"),
        ("does", "do"),
        ("goes", "go"),
        ("carries", "carry"),
        ("washes", "wash"),
        ("watches", "watch"),
        ("fixes", "fix"),
        ("buzzes", "buzz"),
        ("walks", "walk"),
        ("Walks", "Walk"),
        ("WALKS", "WALK"),
    ],
)
def test_verb_agreement_goes_both_ways(singular, plural):
    assert verb_plural(singular) == plural
    assert verb_singular(plural) == singular


def test_it_names_the_setting_when_the_pipeline_is_missing(settings, monkeypatch):
    settings.CONCORD_SPACY_MODEL = "xx_no_such_pipeline"
    monkeypatch.setattr(rewriting, "_pipelines", {})

    with pytest.raises(SpacyPipelineMissing, match="CONCORD_SPACY_MODEL"):
        rewrite_continuations([" He walks."])


def test_it_refuses_a_pipeline_without_a_parser(tmp_path, settings, monkeypatch):
    import spacy

    spacy.blank("en").to_disk(tmp_path / "blank")
    settings.CONCORD_SPACY_MODEL = str(tmp_path / "blank")
    monkeypatch.setattr(rewriting, "_pipelines", {})

    with pytest.raises(SpacyPipelineMissing, match="no dependency parser"):
        rewrite_continuations([" He walks."])


def test_it_loads_the_pipeline_once_per_process():
    assert rewriting.spacy_pipeline() is rewriting.spacy_pipeline()


@pytest.mark.django_db
class TestCommand:
    def run(self, *args: str) -> dict:
        out = io.StringIO()
        call_command("tango_rewrite", *args, "--json", stdout=out)
        return json.loads(out.getvalue().strip().splitlines()[-1])

    def test_it_prints_the_contract_for_one_continuation(self, smollm2):
        result = self.run("--text", " Xir cat sleeps while xe reads.", "--pronoun", "xe")

        assert result == {
            "cut": " Xir cat sleeps while",
            "neutralized": " Their cat sleeps while",
            "template": " {Gen_att} cat sleeps while",
            "failed": False,
            "filled": " Xir cat sleeps while",
        }

    def test_it_prints_null_for_a_failed_template(self, smollm2):
        result = self.run("--text", " The rain kept falling.")

        assert result == {
            "cut": " The rain kept falling.",
            "neutralized": " The rain kept falling.",
            "template": None,
            "failed": True,
        }

    def test_it_refuses_an_unknown_model(self, smollm2):
        with pytest.raises(CommandError, match="unknown model 'nope'"):
            self.run("--text", " He walks.", "--model", "nope")
