"""The project's modules parsed once per test process, for the tests that read the code's structure (imports, names,
constants): four tests walk every app module, and each module is parsed for the first of them. The trees are only
read."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def source_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
