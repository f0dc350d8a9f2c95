#!/usr/bin/env bash
# The end-to-end suite with every service on PostgreSQL: a real server
# (Debian's `postgresql`, installed when missing), started on loopback in a
# throw-away directory as an unprivileged user, each app's services on
# databases of their own, through Spin's outbound PostgreSQL (`pg4`).
# Then the PostgreSQL storage faults (tests/tests/postgres.rs).
#
#   scripts/postgres.sh [CARGO_TEST_ARGS...]
#   MERIDIAN_PG_RTT_MS=10 scripts/postgres.sh   the server 10 ms away, behind
#                                 the harness's delaying proxy (the test
#                                 command runs it so)
#
# Needs `spin` (PATH or SPIN_BIN) and the components built for wasm32-wasip2.
#
# Left out of the suite's run, and said so: the tests that fault or lock a
# SQLite file (storage.rs, the held-lock boundary) or bring their own SQLite
# runtime configuration (the libSQL deploy test) — postgres.rs holds the
# same claims for the server.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/postgres.sh
. scripts/lib/postgres.sh
start_postgres
trap stop_postgres EXIT
# shellcheck source=scripts/lib/skips.sh
. scripts/lib/skips.sh
args=()
skip_tests args "a SQLite file or runtime configuration" \
  "${SQLITE_FILE_FAULT_TESTS[@]}" "$SQLITE_LOCK_TEST" "$LIBSQL_CONFIG_TEST"
# Community as a test build with trap points, beside the others
# (tests/tests/postgres.rs traps it mid-transaction): built with the
# feature, kept as community_trap_points.wasm, then built again without.
wasm=target/wasm32-wasip2/release
cargo build -q --target wasm32-wasip2 --release -p community --features community/trap-points
cp "$wasm/community.wasm" "$wasm/community_trap_points.wasm"
cargo build -q --target wasm32-wasip2 --release -p community
# A server a round trip away leaves the tests waiting on the network
# more than on the two cores: more of them run at once.
threads=2
[ -n "${MERIDIAN_PG_RTT_MS:-}" ] && threads=3
status=0
MERIDIAN_DB=postgres cargo test -p meridian-e2e --test '*' --no-fail-fast "$@" -- --test-threads="$threads" "${args[@]}" || status=$?
echo "==> PostgreSQL storage faults (tests/tests/postgres.rs)"
MERIDIAN_DB=postgres cargo test -p meridian-e2e --test postgres "$@" -- --ignored --test-threads=1 || status=$?
exit "$status"
