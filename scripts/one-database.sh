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
skipped=(
  a_database_that_cannot_be_reached_or_read_is_a_retryable_503_and_service_resumes_when_it_is_back
  a_write_on_a_full_disk_is_a_retryable_503_and_writes_once_when_room_is_made
  a_write_to_a_read_only_database_is_a_retryable_503_and_writes_once_when_it_is_writable_again
  spin_up_accepts_the_libsql_runtime_configuration_and_degrades_cleanly
)
args=()
for test in "${skipped[@]}"; do
  echo "left out: $test (one database file for every service)"
  args+=(--skip "$test")
done
MERIDIAN_DB=one exec cargo test -p meridian-e2e --test '*' --no-fail-fast "$@" -- --test-threads=2 "${args[@]}"
