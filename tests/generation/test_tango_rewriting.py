"""Prob-TANGO's rewriting (docs/domain.md, 'TANGO and Prob-TANGO', steps 1-5): a table of hand-made continuations,
each with the cut, the neutralized text and the template a careful reader writes by hand."""

from __future__ import annotations

import io
import json
import re

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
    # a contracted 's of the word before the pronoun is that word's verb: are or have, as the model chooses
    (" Where's she going?", None, " Where are they going?", " Where's {nom} going?"),
    (" What's he doing now?", None, " What are they doing now?", " What's {nom} doing now?"),
    (" Where's he been all day?", None, " Where have they been all day?", " Where's {nom} been all day?"),
    (" How's she feeling today?", None, " How are they feeling today?", " How's {nom} feeling today?"),
    (" Why\u2019s he laughing?", None, " Why are they laughing?", " Why\u2019s {nom} laughing?"),
    (" Who's she talking to?", None, " Who are they talking to?", " Who's {nom} talking to?"),
    (" Here's her book.", None, " Here's their book.", " Here's {gen_att} book."),
    (" That's his car.", None, " That's their car.", " That's {gen_att} car."),
    (" and that's what she wants.", None, " and that's what they want.", " and that's what {nom} wants."),
    (" It's him.", None, " It's them.", " It's {acc}."),
    # present-tense verbs agree through their lemma
    (" She quizzes the class.", None, " They quiz the class.", " {Nom} quizzes the class."),
    (" He causes trouble.", None, " They cause trouble.", " {Nom} causes trouble."),
    (" and she uses a cane.", None, " and they use a cane.", " and {nom} uses a cane."),
    (" He plays chess.", None, " They play chess.", " {Nom} plays chess."),
    (" She enjoys the rain.", None, " They enjoy the rain.", " {Nom} enjoys the rain."),
    (" He closes the door.", None, " They close the door.", " {Nom} closes the door."),
    (" and she raises her hand.", " and she raises", " and they raise", " and {nom} raises"),
    (" He focuses on work.", None, " They focus on work.", " {Nom} focuses on work."),
    (" She dies in the end.", None, " They die in the end.", " {Nom} dies in the end."),
    (" He flies to Paris.", None, " They fly to Paris.", " {Nom} flies to Paris."),
    (" She misses the bus.", None, " They miss the bus.", " {Nom} misses the bus."),
    (" He realizes the truth.", None, " They realize the truth.", " {Nom} realizes the truth."),
    (" She chooses the red one.", None, " They choose the red one.", " {Nom} chooses the red one."),
    (" He buys bread.", None, " They buy bread.", " {Nom} buys bread."),
    (" She says hello.", None, " They say hello.", " {Nom} says hello."),
    (" He hurries home.", None, " They hurry home.", " {Nom} hurries home."),
    (" and she freezes.", None, " and they freeze.", " and {nom} freezes."),
    (" He echoes the teacher.", None, " They echo the teacher.", " {Nom} echoes the teacher."),
    (" She loses the keys.", None, " They lose the keys.", " {Nom} loses the keys."),
    (" He dresses well.", None, " They dress well.", " {Nom} dresses well."),
    (" He watches the game.", None, " They watch the game.", " {Nom} watches the game."),
    (" She relaxes at home.", None, " They relax at home.", " {Nom} relaxes at home."),
    # a continuation already in they: its present-tense verbs are made singular in the template
    (" They quiz the students.", None, " They quiz the students.", " {Nom} quizzes the students."),
    (" They cause trouble.", None, " They cause trouble.", " {Nom} causes trouble."),
    (" They use a cane.", None, " They use a cane.", " {Nom} uses a cane."),
    (" They play chess.", None, " They play chess.", " {Nom} plays chess."),
    (" They watch the game.", None, " They watch the game.", " {Nom} watches the game."),
    (" They fix bikes.", None, " They fix bikes.", " {Nom} fixes bikes."),
    (" They were tired.", None, " They were tired.", " {Nom} was tired."),
    (" They have a dog.", None, " They have a dog.", " {Nom} has a dog."),
    (" They go home.", None, " They go home.", " {Nom} goes home."),
    (" They do the dishes.", None, " They do the dishes.", " {Nom} does the dishes."),
    (" They've been there.", None, " They've been there.", " {Nom}'s been there."),
    (" They echo it.", None, " They echo it.", " {Nom} echoes it."),
    (" They study and work hard.", None, " They study and work hard.", " {Nom} studies and works hard."),
    (" Their cat sleeps.", None, " Their cat sleeps.", " {Gen_att} cat sleeps."),
    (" Everyone likes them.", None, " Everyone likes them.", " Everyone likes {acc}."),
    (" The choice is theirs.", None, " The choice is theirs.", " The choice is {gen_pred}."),
    (" They blamed themself.", " They blamed", " They blamed", " {Nom} blamed"),
    (" They walked home.", None, " They walked home.", " {Nom} walked home."),
    # a verb that was already plural stays as the model wrote it
    (" and xe enroll in the class.", None, " and they enroll in the class.", " and {nom} enroll in the class."),
    (" He walk to school.", None, " They walk to school.", " {Nom} walk to school."),
    (" Xe like the music.", None, " They like the music.", " {Nom} like the music."),
    (" She are happy.", None, " They are happy.", " {Nom} are happy."),
    # the word "binary" is not a pronoun
    (" Xe is non-binary.", None, " They are non-binary.", " {Nom} is non-binary."),
    (
        " He is non-binary and he is proud.",
        " He is non-binary and",
        " They are non-binary and",
        " {Nom} is non-binary and",
    ),
    (" The binary code confused him.", None, " The binary code confused them.", " The binary code confused {acc}."),
    (
        " She came out as non-binary last year.",
        None,
        " They came out as non-binary last year.",
        " {Nom} came out as non-binary last year.",
    ),
    # a pronoun right before a slash at the cut is still a pronoun (the parse is of the whole continuation)
    (" Everyone thanked her/him.", " Everyone thanked her/", " Everyone thanked them/", " Everyone thanked {acc}/"),
    (" Ask him/her first.", " Ask him/", " Ask them/", " Ask {acc}/"),
    (" He/she will decide.", " He/", " They/", " {Nom}/"),
    (" Give it to him/her.", " Give it to him/", " Give it to them/", " Give it to {acc}/"),
    # upper-case text
    (" SHE PLAYS AND SINGS.", None, " THEY PLAY AND SING.", " {NOM} PLAYS AND SINGS."),
    (" HE GOES HOME.", None, " THEY GO HOME.", " {NOM} GOES HOME."),
    (" HE HAS A DOG.", None, " THEY HAVE A DOG.", " {NOM} HAS A DOG."),
    (" I SAW HIM.", None, " I SAW THEM.", " I SAW {ACC}."),
    (" THE BOOK IS HERS.", None, " THE BOOK IS THEIRS.", " THE BOOK IS {GEN_PRED}."),
    (" HE CARRIES IT.", None, " THEY CARRY IT.", " {NOM} CARRIES IT."),
    (" SHE WATCHES TV.", None, " THEY WATCH TV.", " {NOM} WATCHES TV."),
    (" HE'S HERE.", None, " THEY'RE HERE.", " {NOM}'S HERE."),
    (" HE FIXES IT.", None, " THEY FIX IT.", " {NOM} FIXES IT."),
    (" WHERE'S SHE GOING?", None, " WHERE ARE THEY GOING?", " WHERE'S {NOM} GOING?"),
    # curly apostrophes
    (" She\u2019s been away.", None, " They\u2019ve been away.", " {Nom}\u2019s been away."),
    (" and he\u2019s tired.", None, " and they\u2019re tired.", " and {nom}\u2019s tired."),
    (" They\u2019re home.", None, " They\u2019re home.", " {Nom}\u2019s home."),
    (" He doesn\u2019t care.", None, " They don\u2019t care.", " {Nom} doesn\u2019t care."),
    (" She isn\u2019t sure.", None, " They aren\u2019t sure.", " {Nom} isn\u2019t sure."),
    # verbs of other subjects do not agree
    (" He plays and she sings.", " He plays and", " They play and", " {Nom} plays and"),
    (" She cooks while Tom cleans.", None, " They cook while Tom cleans.", " {Nom} cooks while Tom cleans."),
    (
        " He laughs and the crowd cheers.",
        None,
        " They laugh and the crowd cheers.",
        " {Nom} laughs and the crowd cheers.",
    ),
    (" Xe reads and Sam writes.", None, " They read and Sam writes.", " {Nom} reads and Sam writes."),
    (
        " She paints and Tom sells the paintings.",
        None,
        " They paint and Tom sells the paintings.",
        " {Nom} paints and Tom sells the paintings.",
    ),
    (
        " He knows that Maria runs fast.",
        None,
        " They know that Maria runs fast.",
        " {Nom} knows that Maria runs fast.",
    ),
    (" Tom says she works late.", None, " Tom says they work late.", " Tom says {nom} works late."),
    (" Maria thinks he sings well.", None, " Maria thinks they sing well.", " Maria thinks {nom} sings well."),
    # her that is neither a possessive nor an object follows the tagger
    (" It was her.", None, " It was them.", " It was {acc}."),
    (" Her and Tom left early.", None, " Them and Tom left early.", " {Acc} and Tom left early."),
    (" That one is her, in the photo.", None, " That one is them, in the photo.", " That one is {acc}, in the photo."),
    # his, hers and the reflexives, more
    (" His is the blue one.", None, " Theirs is the blue one.", " {Gen_pred} is the blue one."),
    (" That idea was his.", None, " That idea was theirs.", " That idea was {gen_pred}."),
    (" She hurt herself.", " She hurt", " They hurt", " {Nom} hurt"),
    (" The award went to himself.", None, " The award went to themself.", " The award went to {ref}."),
    # xe forms, more
    (" Xir ideas are brilliant.", None, " Their ideas are brilliant.", " {Gen_att} ideas are brilliant."),
    (" The prize was xirs.", None, " The prize was theirs.", " The prize was {gen_pred}."),
    (" Xe is a doctor.", None, " They are a doctor.", " {Nom} is a doctor."),
    (" Xe has two cats.", None, " They have two cats.", " {Nom} has two cats."),
    (" Xe doesn't eat meat.", None, " They don't eat meat.", " {Nom} doesn't eat meat."),
    (" Xe was born in Oslo.", None, " They were born in Oslo.", " {Nom} was born in Oslo."),
    (" Xe loves xirself.", " Xe loves", " They love", " {Nom} loves"),
    (" The coach trusts xir.", None, " The coach trusts them.", " The coach trusts {acc}."),
    (" XE IS READY.", None, " THEY ARE READY.", " {NOM} IS READY."),
    (" XIR DOG BARKS.", None, " THEIR DOG BARKS.", " {GEN_ATT} DOG BARKS."),
    (" Xe goes to work.", None, " They go to work.", " {Nom} goes to work."),
    # questions, auxiliaries, modals and tenses
    (" Is she coming?", None, " Are they coming?", " Is {nom} coming?"),
    (" Has he finished?", None, " Have they finished?", " Has {nom} finished?"),
    (" She can swim.", None, " They can swim.", " {Nom} can swim."),
    (" He might leave.", None, " They might leave.", " {Nom} might leave."),
    (" She would rather stay.", None, " They would rather stay.", " {Nom} would rather stay."),
    (" He has been working.", None, " They have been working.", " {Nom} has been working."),
    (" She is being careful.", None, " They are being careful.", " {Nom} is being careful."),
    (" He was going to call.", None, " They were going to call.", " {Nom} was going to call."),
    (" She never goes out.", None, " They never go out.", " {Nom} never goes out."),
    (" He always tries hard.", None, " They always try hard.", " {Nom} always tries hard."),
    (" She often visits Rome.", None, " They often visit Rome.", " {Nom} often visits Rome."),
    (" and then he leaves.", None, " and then they leave.", " and then {nom} leaves."),
    (" Yesterday she left.", None, " Yesterday they left.", " Yesterday {nom} left."),
    (" She does not know.", None, " They do not know.", " {Nom} does not know."),
    (" He is not here.", None, " They are not here.", " {Nom} is not here."),
    (" Does she like it?", None, " Do they like it?", " Does {nom} like it?"),
    (" Was he late?", None, " Were they late?", " Was {nom} late?"),
    (" Why does he cry?", None, " Why do they cry?", " Why does {nom} cry?"),
    (" He has to go.", None, " They have to go.", " {Nom} has to go."),
    (" She wants to leave.", None, " They want to leave.", " {Nom} wants to leave."),
    (" He seems happy.", None, " They seem happy.", " {Nom} seems happy."),
    (" She becomes a pilot.", None, " They become a pilot.", " {Nom} becomes a pilot."),
    # objects and possessives, more
    (" Nobody is taller than her.", None, " Nobody is taller than them.", " Nobody is taller than {acc}."),
    (
        " The manager called her yesterday.",
        None,
        " The manager called them yesterday.",
        " The manager called {acc} yesterday.",
    ),
    (" I told him the news.", None, " I told them the news.", " I told {acc} the news."),
    (" We met her mother.", None, " We met their mother.", " We met {gen_att} mother."),
    (" Nobody saw his face.", None, " Nobody saw their face.", " Nobody saw {gen_att} face."),
    (" Nobody knew her.", None, " Nobody knew them.", " Nobody knew {acc}."),
    (" The song reminded her of home.", None, " The song reminded them of home.", " The song reminded {acc} of home."),
    (" Her own mother forgot.", None, " Their own mother forgot.", " {Gen_att} own mother forgot."),
    (" Mr. Lee thanked him.", None, " Mr. Lee thanked them.", " Mr. Lee thanked {acc}."),
    (" The book belongs to her.", None, " The book belongs to them.", " The book belongs to {acc}."),
    (" No one asked her.", None, " No one asked them.", " No one asked {acc}."),
    (
        " The dog follows him everywhere.",
        None,
        " The dog follows them everywhere.",
        " The dog follows {acc} everywhere.",
    ),
    # cuts, more
    (" She thinks about herself.", " She thinks about", " They think about", " {Nom} thinks about"),
    (" They said that he was right.", " They said that", " They said that", " {Nom} said that"),
    (
        " Everyone loves him and his dog.",
        " Everyone loves him and",
        " Everyone loves them and",
        " Everyone loves {acc} and",
    ),
    (
        " He fixes cars and sells them.",
        " He fixes cars and sells",
        " They fix cars and sell",
        " {Nom} fixes cars and sells",
    ),
    # punctuation around the pronoun, lower-case starts, more conjuncts and -s endings
    (" He.", None, " They.", " {Nom}."),
    (", he said.", None, ", they said.", ", {nom} said."),
    (' "I am here," she said.', None, ' "I am here," they said.', ' "I am here," {nom} said.'),
    (" She's got a plan.", None, " They've got a plan.", " {Nom}'s got a plan."),
    (" He's a teacher.", None, " They're a teacher.", " {Nom}'s a teacher."),
    (" she works hard.", None, " they work hard.", " {nom} works hard."),
    (" He cooks, cleans and shops.", None, " They cook, clean and shop.", " {Nom} cooks, cleans and shops."),
    (" She smiles and waves.", None, " They smile and wave.", " {Nom} smiles and waves."),
    (" He teaches and coaches.", None, " They teach and coach.", " {Nom} teaches and coaches."),
    (" and she mixes paint.", None, " and they mix paint.", " and {nom} mixes paint."),
    (" She kisses the baby.", None, " They kiss the baby.", " {Nom} kisses the baby."),
    (" He rushes out.", None, " They rush out.", " {Nom} rushes out."),
    (" She copies the notes.", None, " They copy the notes.", " {Nom} copies the notes."),
    (" He obeys the rules.", None, " They obey the rules.", " {Nom} obeys the rules."),
    (" She pays the bill.", None, " They pay the bill.", " {Nom} pays the bill."),
    (" He worries too much.", None, " They worry too much.", " {Nom} worries too much."),
    # a bullet the parser calls a verb (VBP, with the pronoun its subject) is punctuation, and stays as written
    (
        "'\n  \u2022 They/Them: 'My child uses the pronouns they/them. Can you please make a note of this.'",
        "'\n  \u2022 They/",
        "'\n  \u2022 They/",
        "'\n  \u2022 {Nom}/",
    ),
    (
        "'\n  \u2022 She/Her: 'My child uses the pronouns she/her.'",
        "'\n  \u2022 She/",
        "'\n  \u2022 They/",
        "'\n  \u2022 {Nom}/",
    ),
]

# Concord's deliberate differences from the seed's script (docs/domain.md, "TANGO and Prob-TANGO"), each with the
# continuations of TABLE that show it; the counts are printed in docs/domain.md and checked below.
DIFFERENCES = {
    "binary": [
        " Xe is non-binary.",
        " He is non-binary and he is proud.",
        " The binary code confused him.",
        " She came out as non-binary last year.",
    ],
    "slash": [" Everyone thanked her/him.", " Ask him/her first.", " He/she will decide.", " Give it to him/her."],
    "upper-case": [row[0] for row in TABLE if not any(c.islower() for c in row[0])],
    "curly": [row[0] for row in TABLE if "\u2019" in row[0]],
    "other subjects": [
        " He sings and Maria plays the piano.",
        " Xe reads and Sam writes.",
        " She paints and Tom sells the paintings.",
    ],
    "her": [" It was her.", " Her and Tom left early.", " That one is her, in the photo."],
    "word before": [
        " Where's she going?",
        " What's he doing now?",
        " Where's he been all day?",
        " How's she feeling today?",
        " Why\u2019s he laughing?",
        " Who's she talking to?",
        " WHERE'S SHE GOING?",
    ],
    "lemma": [
        " He causes trouble.",
        " and she uses a cane.",
        " He closes the door.",
        " and she raises her hand.",
        " He realizes the truth.",
        " She chooses the red one.",
        " and she freezes.",
        " She loses the keys.",
        " They play chess.",
    ],
    "already plural": [
        " and xe enroll in the class.",
        " He walk to school.",
        " Xe like the music.",
        " She are happy.",
    ],
}


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


def test_the_table_covers_at_least_150_continuations_once_each():
    assert len(TABLE) >= 150
    assert len({row[0] for row in TABLE}) == len(TABLE)


def test_every_difference_from_the_seed_is_in_the_table_with_the_count_the_docs_give():
    from tests.conftest import REPO

    domain = (REPO / "docs" / "domain.md").read_text()
    continuations = {row[0] for row in TABLE}
    for key, cases in DIFFERENCES.items():
        assert cases and set(cases) <= continuations, key
        assert re.search(rf"\| {re.escape(key)} \|.*\| {len(cases)} \|", domain), (key, len(cases))


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


def test_it_asks_the_model_are_or_have_for_the_s_of_the_word_before_the_pronoun():
    asked = []

    def choose(options):
        asked.extend(options)
        return [1] * len(options)

    [rewrite] = rewrite_continuations([" What's she done?"], choose_contraction=choose)

    assert asked == [(0, " What are they done?", " What have they done?")]
    assert rewrite.neutralized == " What have they done?"
    assert rewrite.template == " What's {nom} done?"


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


@pytest.mark.parametrize(
    ("singular", "lemma", "plural"),
    [
        ("quizzes", "quiz", "quiz"),
        ("causes", "cause", "cause"),
        ("uses", "use", "use"),
        ("plays", "play", "play"),
        ("echoes", "echo", "echo"),
        ("WORKS", "work", "WORK"),
    ],
)
def test_a_present_tense_verb_agrees_through_its_lemma_and_back(singular, lemma, plural):
    assert verb_plural(singular, lemma) == plural
    assert verb_singular(plural) == singular


def test_an_implausible_lemma_falls_back_to_the_ending():
    # a lemma that is the word itself, or another word's, is not trusted
    assert verb_plural("walks", "walks") == "walk"
    assert verb_plural("causes", "reason") == "cause"
    assert verb_plural("passes", None) == "pass"


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
