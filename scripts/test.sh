#!/usr/bin/env bash
# The whole test suite, against the local PostgreSQL and Redis (plus a smoke test of the embedded SQLite default).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "==> installing Debian's chromium for the browser tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed; browser tests will fail"
  else
    echo "chromium is missing: install Debian's chromium package for the browser tests" >&2
  fi
fi
export HF_HUB_OFFLINE=1
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/concord}
export CONCORD_TEST_BROKER_URL=${CONCORD_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
unset CELERY_BROKER_URL
exec .venv/bin/python -m pytest "$@"
