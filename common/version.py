"""Concord's version, and the commit it runs from (a study bundle's manifest names both)."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

VERSION = "1.0.0"
_REPO = Path(__file__).resolve().parent.parent  # common/ sits at the top of the repository


@cache
def concord_commit() -> str:
    """CONCORD_COMMIT when the deployment sets it (an image has no .git), else git's HEAD, else "unknown"."""
    if os.environ.get("CONCORD_COMMIT"):
        return os.environ["CONCORD_COMMIT"]
    try:
        done = subprocess.run(
            ["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"
