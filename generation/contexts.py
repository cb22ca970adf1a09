"""The one place that turns an instance text (mask marker still in it) into candidates and contexts.

docs/domain.md, 'Datasets and contexts': the pre-[MASK] context is exactly `text.split(mask)[0]` (trailing space kept); the post-[MASK]
context fills the mask with the correct form. A mask that starts a sentence is capitalised.
"""

from __future__ import annotations

SETTINGS = ("pre", "post")
# TANGO's one setting: the model continues the whole context (docs/domain.md, 'TANGO and Prob-TANGO'). A TANGO
# instance text is its context followed by its marker, so the context is what comes before the marker.
OPEN = "open"
ALL_SETTINGS = (*SETTINGS, OPEN)


def setting_rank(setting: str) -> int:
    """Where a setting comes in a job's order (pre, post, open); any other after them."""
    return ALL_SETTINGS.index(setting) if setting in ALL_SETTINGS else len(ALL_SETTINGS)


def mask_starts_sentence(text: str, mask: str) -> bool:
    """The capitalisation rule: the character two places before the mask is a full stop ("... cried. [MASK] ...")."""
    index = text.index(mask)
    return index >= 2 and text[index - 2] == "."


def capitalise(surface: str) -> str:
    return surface[:1].upper() + surface[1:]


def fill_mask(text: str, mask: str, surface: str) -> str:
    if mask_starts_sentence(text, mask):
        surface = capitalise(surface)
    return text.replace(mask, surface, 1)


def pre_context(text: str, mask: str) -> str:
    return text.split(mask)[0]


def post_context(text: str, mask: str, correct_form: str) -> str:
    return fill_mask(text, mask, correct_form)


def build_context(text: str, mask: str, correct_form: str, setting: str) -> str:
    if setting == "pre":
        return pre_context(text, mask)
    if setting == "post":
        return post_context(text, mask, correct_form)
    if setting == OPEN:
        return pre_context(text, mask)
    raise ValueError(f"unknown setting {setting!r}: use one of {', '.join(ALL_SETTINGS)}")
