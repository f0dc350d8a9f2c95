#!/usr/bin/env bash
# Meridian against the floor of a bare Spin app (docs/testing.md, "Benchmarks"):
# builds the release components and the floor apps (bench/), installs the
# load generator (wrk, from Debian) when missing, starts `spin up` on
# loopback and runs the perf driver (tools/src/bin/perf/), which writes
# docs/benchmarks.md's "Against the floor" section and docs/benchmarks.svg.
#
#   scripts/bench.sh                 the full run (~8 min: 10 s x 3 rounds per
#                                    target at 1 and 8 connections, 50 requests
#                                    per budget, overload 10 s)
#   scripts/bench.sh --slice         the bounded slice the test command runs
#                                    (~1 min; writes target/bench/perf.json only)
#   scripts/bench.sh -- ARGS         the driver's own arguments instead, e.g.
#                                    -- --only p2 --per-budget 30
#   scripts/bench.sh --postgres      GET /v1/{t}/residents with every service
#                                    on a throw-away PostgreSQL, against the
#                                    floor's same read through `pg4` on the
#                                    same server (~2 min; writes its section
#                                    of docs/benchmarks.md, docs/benchmarks-postgres.svg)
#   scripts/bench.sh --goodput [S]   goodput under overload beside the floor
#                                    (tools/src/bin/goodput.rs, S s per point,
#                                    default 5; ~13 min at 4): closed and open loop,
#                                    a quiet tenant beside a flood, recovery
#                                    (Meridian's, then the floor's)
#
# Needs `spin` on PATH or at $SPIN_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."

spin_bin="${SPIN_BIN:-$(command -v spin || true)}"
if [ -z "$spin_bin" ] || [ ! -x "$spin_bin" ]; then
  echo "bench: needs 'spin' on PATH or at SPIN_BIN (README, 'Spin')" >&2
  exit 2
fi

if ! command -v wrk >/dev/null 2>&1 && [ -z "${WRK_BIN:-}" ]; then
  echo "bench: installing wrk (Debian)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq wrk
fi

if command -v rustup >/dev/null 2>&1; then
  rustup target add wasm32-wasip2 >/dev/null
fi
cargo build -q --target wasm32-wasip2 --release --locked \
  -p gateway -p identity -p community -p billing -p hang -p floor -p hello

case "${1:-}" in
  --slice)
    args=(--seconds 1 --rounds 1 --per-budget 6 --budgets 100,400) ;;
  --)
    shift
    args=("$@") ;;
  --postgres)
    # shellcheck source=scripts/lib/postgres.sh
    . scripts/lib/postgres.sh
    start_postgres
    trap stop_postgres EXIT
    export MERIDIAN_DB=postgres
    args=(--postgres --seconds 10 --rounds 3 --write) ;;
  --goodput)
    exec env SPIN_BIN="$spin_bin" cargo run -q --locked -p meridian-tools --release --bin goodput -- \
      --seconds "${2:-5}" ;;
  "")
    args=(--seconds 10 --rounds 3 --per-budget 50 --write) ;;
  *)
    echo "bench: unknown argument $1 (see the top of scripts/bench.sh)" >&2
    exit 2 ;;
esac
SPIN_BIN="$spin_bin" cargo run -q --locked -p meridian-tools --release --bin perf -- "${args[@]}"
