#!/usr/bin/env bash
# The whole test suite, against the local PostgreSQL and Redis (plus a smoke test of the embedded SQLite default).
# Quick loop: bash scripts/test.sh -m "not slow". On SQLite: TEST_DATABASE_URL=sqlite:///var/test.sqlite3 bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
# Debian packages the tests drive: Chromium (browser tests), docker-compose (checks docker-compose.yml; no engine
# needed) and nginx (the compose proxy's configuration, run in front of the production server).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "==> installing ${missing[*]} from Debian"
    # Installed for its program only: no service is started (policy-rc.d answers "not now" while apt runs).
    policy_added=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy_added=1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    [ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
  else
    echo "missing Debian packages: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
# pdflatex, for the LaTeX export's compile test: TeX Live's LaTeX base and its recommended packages (booktabs), without
# their recommends (documentation, fonts), about 40 MB. Not root: the test skips.
if ! command -v pdflatex >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing texlive-latex-base texlive-latex-recommended from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    texlive-latex-base texlive-latex-recommended >/dev/null
fi
export HF_HUB_OFFLINE=1
# Python keeps the bytecode of Concord's modules and pytest's rewritten tests in __pycache__ (ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set: without it, each pytest worker compiles them all again on every run (about 5 s).
unset PYTHONDONTWRITEBYTECODE
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/concord}
export CONCORD_TEST_BROKER_URL=${CONCORD_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
export CONCORD_DEMO=${CONCORD_DEMO:-1}  # the demo app is the embedded default's; its tests run on PostgreSQL too
unset CELERY_BROKER_URL

# pytest-django drops its test databases when it ends cleanly; an interrupted run (Ctrl-C, a kill, a crash) would leave
# test_<name> (test_<name>_gw0, _gw1, ... with parallel workers) behind, so drop them on every exit, whatever happened.
drop_test_databases() {
  case "$DATABASE_URL" in
    postgres*://*)
      local name=${DATABASE_URL##*/}; name=${name%%\?*}
      local server=${DATABASE_URL%/*}
      local found
      found=$(psql "$server/postgres" -Atq -c "SELECT datname FROM pg_database WHERE datname = 'test_${name}' \
        OR datname ~ '^test_${name}_gw[0-9]+\$'" 2>/dev/null) || return 0
      for database in $found; do
        psql "$server/postgres" -q -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" >/dev/null 2>&1 || true
      done
      ;;
  esac
}
trap drop_test_databases EXIT
# One pytest worker per core (pytest-xdist); TEST_WORKERS=0 (or -n 0 after the command) runs in this one process.
# Work stealing: a worker that runs out takes tests queued for the other, so that the minute-long tests at the end of
# one worker's share do not leave the other core idle.
.venv/bin/python -m pytest -n "${TEST_WORKERS:-auto}" --dist worksteal "$@"
