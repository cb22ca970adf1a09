"""JSON from a user's file, parsed with its nesting bounded (docs/domain.md, "Input that every reader can read").

Python's parser recurses once per nesting level: a line of 5,000 `[` (or a bundle's report of 100,000) ends in a
RecursionError, a traceback rather than `FILE:LINE: problem`. `json_loads` refuses a document nested deeper than
MAX_DEPTH levels before parsing it, as a `json.JSONDecodeError` (with its line and column), so every reader's own
"not JSON" message names the place. The check is one pass over the brackets outside strings, and is skipped when the
text holds fewer brackets than the bound: linear time, stopping at the first level too deep.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Concord's own files nest a few levels (a report's tables, rows, intervals); a user's file has no reason for more.
MAX_DEPTH = 64
_OPENING, _CLOSING = frozenset("[{"), frozenset("]}")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth_problem(text: str, *, limit: int = MAX_DEPTH) -> int | None:
    """The offset of the first bracket that opens a level past `limit`, or None."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in _OPENING:
            depth += 1
            if depth > limit:
                return token.start()
        elif bracket in _CLOSING:
            depth -= 1
    return None


def json_loads(text: str | bytes, **options: Any) -> Any:
    """`json.loads`, refusing a document nested deeper than MAX_DEPTH levels (a JSONDecodeError at that bracket)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    at = json_depth_problem(text)
    if at is not None:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, at)
    return json.loads(text, **options)
