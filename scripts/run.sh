#!/usr/bin/env bash
# The embedded default: SQLite under var/, tasks in-process, the CPU model, demo data, demo logins printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
.venv/bin/python manage.py migrate --no-input -v0
.venv/bin/python manage.py load_demo ${SKIP_DEMO_GENERATION:+--no-generate}
echo "==> Concord is at http://127.0.0.1:${PORT:-8000}/  (Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver "127.0.0.1:${PORT:-8000}" --noreload
