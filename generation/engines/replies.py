"""From a judge's reply to the option it names (docs/domain.md, 'Machine raters' and 'Models behind an endpoint').

Two rules, one per kind of reply:

- `answer_label`, for the few tokens a local judge samples after its prompt ("Answer:"): the option whose text
  appears first in it, as whole words;
- `reply_label`, for a reply from an endpoint (a chat model writes what it likes): stripped, case-folded, trailing
  punctuation removed, it must equal one option's text; or, where the endpoint took a JSON schema, the reply is
  `{"label": ...}` with one of the options. Anything else is unparsed (None), never mapped to the nearest option.
"""

from __future__ import annotations

import json
import re
import string


def answer_label(answer: str, options: dict[str, str]) -> str | None:
    """The option an answer names: the one whose text (as whole words, any case) appears first in it; at the same
    place the longer text wins ("no pronoun" before a hypothetical "no")."""
    found: list[tuple[int, int, str]] = []
    for label, text in options.items():
        words = text.strip().lower()
        match = re.search(r"(?<!\w)" + re.escape(words) + r"(?!\w)", answer.lower())
        if match:
            found.append((match.start(), -len(words), label))
    return min(found)[2] if found else None


def _normal(text: str) -> str:
    return text.strip().casefold().rstrip(string.punctuation + " \t\r\n").strip()


def reply_label(reply: str, options: dict[str, str], *, structured: bool = False) -> str | None:
    """The option an endpoint's reply is (the module docstring); `structured`: the reply is the JSON object the
    schema asked for, whose `label` is an option's text or its label."""
    if structured:
        try:
            value = json.loads(reply)
        except (json.JSONDecodeError, TypeError):
            return None
        if not isinstance(value, dict) or not isinstance(value.get("label"), str):
            return None
        reply = value["label"]
    wanted = _normal(reply)
    if not wanted:
        return None
    for label, text in options.items():
        if wanted == _normal(text) or (structured and wanted == _normal(label)):
            return label
    return None


def label_schema(options: dict[str, str]) -> dict:
    """The JSON schema of a structured reply: `{"label": ...}`, one of the options' texts."""
    return {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": [text.strip() for text in options.values()]}},
        "required": ["label"],
        "additionalProperties": False,
    }
