"""The annotation schema (DOMAIN section 5, paper appendix G)."""

CORRECT = "correct"
MISGENDERING = "misgendering"
NO_PRONOUN = "no_pronoun"
PLURAL_THEY = "plural_they"

DEFAULT_LABELS: list[str] = [CORRECT, MISGENDERING, NO_PRONOUN]
LABEL_NAMES = {
    CORRECT: "Correct",
    MISGENDERING: "Misgendering",
    NO_PRONOUN: "No pronoun",
    PLURAL_THEY: "Plural they",
}

TAGS: dict[str, str] = {
    "repetition": "Repetition",
    "degeneration": "Degeneration",
    "meta_discourse": "Meta-discourse about pronouns",
    "other_neopronoun": "Other neopronouns",
    "wrong_case_xe": "Wrong case of xe",
    "plural_xe": "Plural xe",
}


def human_binary(label: str) -> int:
    """Human binary (DOMAIN section 6): 0 iff misgendering, every other label is 1."""
    return 0 if label == MISGENDERING else 1
