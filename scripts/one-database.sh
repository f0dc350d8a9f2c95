#!/usr/bin/env bash
# The end-to-end suite with one SQLite database for the whole app, as a
# platform that allows one gives it (Fermyon Cloud's plans): every service
# is granted the label `default` and opens it (the variable
# `sqlite_database`), each with its own tables and migration ledger by name.
#
#   scripts/one-database.sh [CARGO_TEST_ARGS...]
#
# Needs `spin` (PATH or SPIN_BIN) and the components built for wasm32-wasip2.
#
# Left out, and said so: the storage fault tests fault one service's
# database file and check that the other services are unaffected, which one
# shared file rules out by construction; and the libSQL deploy test, which
# brings its own runtime configuration with a label per service.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/skips.sh
. scripts/lib/skips.sh
args=()
skip_tests args "one database file for every service" \
  "${SQLITE_FILE_FAULT_TESTS[@]}" "$LIBSQL_CONFIG_TEST"
MERIDIAN_DB=one exec cargo test -p meridian-e2e --test '*' --no-fail-fast "$@" -- --test-threads=2 "${args[@]}"
