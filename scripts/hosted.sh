#!/usr/bin/env bash
# The end-to-end suite as a hosted platform runs Meridian, under that
# platform's constraints, on a local `spin up`:
#
#   scripts/hosted.sh cloud  [CARGO_TEST_ARGS...]   Fermyon Cloud: the `cloud`
#       build (key-value `store` alone), one SQLite database for the app,
#       no runtime configuration file.
#   scripts/hosted.sh akamai [CARGO_TEST_ARGS...]   Akamai Functions: the
#       `akamai` build (no SQLite, key-value `store` + `batch`), no SQLite
#       label granted, every service on PostgreSQL (a throw-away server, as
#       scripts/postgres.sh starts it) and the counts there too
#       (`counts_postgres`: no key-value write), no runtime configuration
#       file.
#
# Needs `spin` (PATH or SPIN_BIN). Builds the profile (scripts/build-for.sh)
# and the default build the suite's fixtures use.
#
# Left out, and said so:
# - in the cloud profile, what the build gives up by design without
#   `atomics` (a count is a read and a write; docs/deploy.md):
#   `concurrent_invocations_lose_no_count`;
#   the three tests that set a tenant concurrency limit of 2 (a lost
#   increment lets a third request in — seen: 4 of a burst of 6 served —
#   and a lost decrement holds a slot, which is why the profile turns the
#   limit off); and the failure memory's
#   sequential-client comparison, where a lost count can cost the memory
#   a request that the memory off serves (seen once in 20 runs);
# - in the akamai profile, the test of an answer that must not wait for a
#   service's thread-holding work after it
#   (`a_services_answer_reaches_the_caller_before_the_work_after_it`):
#   that work is SQLite closing its file, which the build has not, and
#   the gateway's own count-out in PostgreSQL can itself wait behind the
#   stand-in's busy thread (docs/known-limits.md);
# - what needs a SQLite file (the storage fault tests, the held-lock test,
#   the libSQL deploy test) — one-database.sh and postgres.sh say why.
# Tests that inspect the key-value store through a file, pin variables or
# place a database keep a runtime configuration naming it; every other app
# runs on Spin's defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
platform="${1:-}"
case "$platform" in
  cloud | akamai) shift ;;
  *) echo "usage: scripts/hosted.sh cloud|akamai [CARGO_TEST_ARGS...]" >&2; exit 2 ;;
esac
cargo_args=()
for arg in "$@"; do
  [ "$arg" = "--locked" ] && cargo_args+=(--locked)
done
scripts/build-for.sh "$platform" "${cargo_args[@]}" >/dev/null
cargo build --target wasm32-wasip2 --release "${cargo_args[@]}" -p hang >/dev/null
# shellcheck source=scripts/lib/skips.sh
. scripts/lib/skips.sh
args=()
if [ "$platform" = cloud ]; then
  skip_tests args "the build has no atomics: docs/deploy.md" \
    concurrent_invocations_lose_no_count \
    a_client_with_as_many_connections_as_the_limit_is_never_refused \
    a_tenant_at_its_limit_of_requests_in_progress_gets_a_429_and_another_tenant_does_not \
    a_vouched_callers_429s_at_the_limit_spend_none_of_its_rate \
    a_sequential_client_at_30_percent_failures_does_no_worse_with_the_failure_memory
fi
skip_tests args "a SQLite file or runtime configuration" \
  "${SQLITE_FILE_FAULT_TESTS[@]}" "$SQLITE_LOCK_TEST" "$LIBSQL_CONFIG_TEST"
export MERIDIAN_PROFILE="$platform"
if [ "$platform" = akamai ]; then
  # A layout of one SQLite database: the akamai build has no SQLite (it
  # answers 503 storage_unavailable, "this build has no SQLite").
  skip_tests args "the akamai build has no SQLite" one_database_serves_every_service_each_with_its_own_tables
  skip_tests args "its premise is SQLite's work after an answer; a busy thread can hold up a pg4 call (docs/known-limits.md)" \
    a_services_answer_reaches_the_caller_before_the_work_after_it
  # shellcheck source=scripts/lib/postgres.sh
  . scripts/lib/postgres.sh
  start_postgres
  trap stop_postgres EXIT
  export MERIDIAN_DB=postgres
fi
status=0
cargo test -p meridian-e2e --test '*' --no-fail-fast "$@" -- --test-threads=2 "${args[@]}" || status=$?
if [ "$platform" = cloud ]; then
  # The cloud deployment's own tests (ignored elsewhere): the services
  # reached through the app's public origin, strangers at the internal
  # prefix, the outbound requests each public request makes.
  cargo test -p meridian-e2e --test one_origin "$@" -- --ignored --test-threads=2 || status=$?
fi
exit "$status"
