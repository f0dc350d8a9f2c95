#!/usr/bin/env bash
# Meridian on PostgreSQL a round trip away (tools/src/bin/distance.rs): a
# throw-away PostgreSQL server, as scripts/postgres.sh starts it, and for
# each round-trip time (milliseconds; default 0 2 10) the app's databases
# behind a delaying proxy, a `GET` of a page and a keyed `POST` timed and
# their sends to the server counted.
#
#   scripts/distance.sh [RTT_MS ...]
#
# Needs `spin` (PATH or SPIN_BIN).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/postgres.sh
. scripts/lib/postgres.sh
cargo build --target wasm32-wasip2 --release -p gateway -p identity -p community -p billing -p floor >/dev/null
start_postgres
trap stop_postgres EXIT
MERIDIAN_DB=postgres cargo run -q -p meridian-tools --bin distance -- "$@"
