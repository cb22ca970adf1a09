#!/usr/bin/env bash
# The quick loop (or the whole suite) of two checkouts, taking turns, A B A B ...: the CPU seconds (user + sys of pytest
# and its workers, from /usr/bin/time, which counts the children pytest reaped), wall seconds, the load before each run
# and the count of tests. Runs pytest as scripts/test.sh does (2 workers, work stealing) but without setup.sh, so that an
# older checkout's requirements never touch the shared .venv.
# usage: bash benchmarks/bench_loop.sh OLD_CHECKOUT NEW_CHECKOUT [PAIRS] [-- PYTEST ARGS]   (default: 1 pair, -m "not slow")
#   OLD_CHECKOUT: git worktree add --detach ../old 5568a5a && ln -s "$PWD/.venv" ../old/.venv
#   BENCH_KEEP=DIR keeps each run's pytest output there (A-1.txt, B-1.txt, ...): add --durations=0 to see the costs.
#   BENCH_CPU=DIR: each run's CPU seconds per test as well, in DIR/A-1, DIR/B-1, ... (benchmarks/cpu_per_test.py;
#   the old checkout needs that file too: cp benchmarks/cpu_per_test.py OLD/benchmarks/).
#   each checkout gets its own database: concord_bench_a / concord_bench_b (Redis 12 / 13) unless BENCH_DB_A/B, BENCH_REDIS_A/B are set.
set -euo pipefail
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); pairs=${3:-1}
shift 2; [ $# -gt 0 ] && [ "$1" != -- ] && shift
[ "${1:-}" = -- ] && shift
args=("$@"); [ ${#args[@]} -eq 0 ] && args=(-m "not slow")
server=${BENCH_SERVER:-postgres://postgres@127.0.0.1:5432}
run() {  # label checkout database redis-index
  local label=$1 dir=$2 db=$3 idx=$4 out load
  out=$(mktemp)
  load=$(cut -d' ' -f1 /proc/loadavg)
  local plugin=()
  [ -z "${BENCH_CPU:-}" ] || plugin=(-p benchmarks.cpu_per_test)
  (cd "$dir" && unset PYTHONDONTWRITEBYTECODE CELERY_BROKER_URL && HF_HUB_OFFLINE=1 CONCORD_DEMO=1 \
    DATABASE_URL="$server/$db" CONCORD_TEST_BROKER_URL=redis://127.0.0.1:6379/$idx \
    CPU_PER_TEST_DIR=${BENCH_CPU:+$BENCH_CPU/$label-$pair} \
    /usr/bin/time -f "TIME %e %U %S" -o "$out.time" .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" \
    --dist worksteal -p no:cacheprovider "${plugin[@]}" -q "${args[@]}" >"$out" 2>&1) || true
  read -r _ wall user sys < <(grep "^TIME " "$out.time")
  printf '%-4s %-8s load %5s  wall %7.1f s  CPU %7.1f s (user %.1f, sys %.1f)  %s\n' "$label" "$(git -C "$dir" log -1 \
    --format=%h)" "$load" "$wall" "$(echo "$user + $sys" | bc)" "$user" "$sys" "$(grep -E ' in [0-9.]+s' "$out" | tail -1)"
  if [ -n "${BENCH_KEEP:-}" ]; then mkdir -p "$BENCH_KEEP" && mv "$out" "$BENCH_KEEP/$label-$pair.txt"; fi
  rm -f "$out" "$out.time"
}
for pair in $(seq "$pairs"); do
  run A "$old" "${BENCH_DB_A:-concord_bench_a}" "${BENCH_REDIS_A:-12}"
  run B "$new" "${BENCH_DB_B:-concord_bench_b}" "${BENCH_REDIS_B:-13}"
done
