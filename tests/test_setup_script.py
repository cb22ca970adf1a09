"""scripts/setup.sh installs torch with pip (the CPU build on disk) and then the rest with uv, keeping that torch;
with pip throughout where uv cannot be had or NO_UV=1. Run against stand-in pip, python and uv that log their calls."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

PIP = """#!/usr/bin/env bash
echo "pip $*" >> "$LOG"
case "$*" in
  "config get global.extra-index-url") echo "file:///somewhere/simple" ;;
  "config get global.find-links") echo "/somewhere/wheels" ;;
  *"install --quiet --disable-pip-version-check uv=="*)
    [ -n "${UV_FROM_PYPI:-}" ] || exit 1
    printf '#!/usr/bin/env bash\\necho "uv $*" >> "$LOG"\\n' > "$(dirname "$0")/uv"; chmod +x "$(dirname "$0")/uv" ;;
esac
"""
PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-c" ]; then case "$2" in *torch*f\\"torch==*) echo "torch==2.13.0+cpu" ;; *torch*) echo "2.13.0+cpu" ;; esac; exit 0; fi
echo "python $*" >> "$LOG"
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _setup(tmp_path: Path, **env: str) -> list[str]:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    for name in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy(REPO / name, root / name)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    _executable(bin_dir / "pip", PIP)
    _executable(bin_dir / "python", PYTHON)
    path = tmp_path / "path"
    path.mkdir()
    for tool in ("bash", "cat", "sha256sum", "cut", "mkdir", "dirname", "chmod", "printf"):
        if found := shutil.which(tool):
            os.symlink(found, path / tool)
    log = tmp_path / "calls.log"
    full = {"PATH": str(path), "LOG": str(log), "HOME": str(tmp_path), **env}
    subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=full, check=True, capture_output=True, timeout=60)
    assert (root / ".venv" / ".concord-requirements").exists()
    return log.read_text().splitlines()


def test_it_installs_torch_with_pip_then_the_rest_with_uv_keeping_that_torch(tmp_path):
    calls = _setup(tmp_path, UV_FROM_PYPI="1")
    assert calls[0].startswith("pip install") and calls[0].endswith("torch==2.13.0")
    assert any(call.startswith("pip install --quiet --disable-pip-version-check uv==") for call in calls)
    uv = [call for call in calls if call.startswith("uv pip install")]
    assert len(uv) == 4 and "-r requirements-dev.txt" in uv[0]
    for call in uv:
        # torch pinned to the build pip installed; pip's indexes handed over, chosen among as pip does
        assert "--override .venv/.concord-torch" in call and "--index-strategy unsafe-best-match" in call
        assert "--extra-index-url file:///somewhere/simple" in call and "--find-links /somewhere/wheels" in call
    assert (tmp_path / "checkout/.venv/.concord-torch").read_text().strip() == "torch==2.13.0+cpu"
    assert not [call for call in calls if call.startswith("python -m pip")]


@pytest.mark.parametrize("env", [{}, {"UV_FROM_PYPI": "1", "NO_UV": "1"}], ids=["no-uv-to-be-had", "NO_UV=1"])
def test_it_falls_back_to_pip_where_uv_cannot_be_had(tmp_path, env):
    calls = _setup(tmp_path, **env)
    assert not [call for call in calls if call.startswith("uv ")]
    rest = [call for call in calls if call.startswith("python -m pip install")]
    assert len(rest) == 4 and "--progress-bar on -r requirements-dev.txt" in rest[0]
