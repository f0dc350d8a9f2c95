#!/usr/bin/env bash
# The end-to-end suite as a hosted platform runs Meridian, under that
# platform's constraints, on a local `spin up`:
#
#   scripts/hosted.sh cloud  [CARGO_TEST_ARGS...]   Fermyon Cloud: the `cloud`
#       build (key-value `store` alone, no PostgreSQL), one SQLite database
#       for the app, no runtime configuration file, and no service chaining:
#       its manifest grants no `*.spin.internal` host and has no private
#       route, so the gateway reaches the services through the app's own
#       origin (the harness sets `public_origin` to the app's port), and a
#       chained call would be refused by Spin itself; then the cloud
#       deployment's own tests (tests/one_origin.rs, ignored elsewhere).
#   scripts/hosted.sh akamai [CARGO_TEST_ARGS...]   Akamai Functions: the
#       `akamai` build (no SQLite, key-value `store` + `batch`), no SQLite
#       label granted, every service on PostgreSQL (a throw-away server, as
#       scripts/postgres.sh starts it) and the counts there too
#       (`counts_postgres`: no key-value write), no runtime configuration
#       file; then the counts' own tests (tests/counts_postgres.rs, ignored
#       elsewhere).
#
# Needs `spin` (PATH or SPIN_BIN). Builds the profile (scripts/build-for.sh)
# and the default build the suite's fixtures use.
#
# Left out, and said so:
# - in the cloud profile, the tests that point one service's URL variable
#   at a stand-in (there is no such variable: every service is the app's
#   one origin; what an edge's failure does is one_origin.rs');
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
if [ "$platform" = cloud ]; then
  skip_tests args "it points one service's URL at a stand-in; on Fermyon Cloud every service is the app's one origin (an edge that fails is one_origin.rs')" \
    a_concurrent_duplicate_is_refused_while_the_first_is_in_progress \
    a_lost_acknowledgement_means_redelivery_and_still_one_notification \
    a_write_is_answered_before_its_event_is_delivered \
    an_unkeyed_write_to_a_failing_service_fails_once_with_a_problem \
    the_relay_delivers_after_a_failed_inline_delivery_and_repeats_change_nothing \
    a_consumer_that_never_answers_costs_the_event_not_the_committed_invoice \
    a_downstream_answer_that_is_not_meridians_never_reaches_the_client \
    a_failing_community_is_retried_by_billing_alone \
    a_keyed_write_whose_answer_is_lost_on_the_way_back_is_retried_and_written_once \
    the_relay_stops_within_its_budget_part_way_and_finishes_later \
    a_body_that_stalls_midway_still_gets_a_504_at_the_budget \
    a_downstream_gets_the_budget_and_the_real_identity_never_the_spoofed_one \
    a_failing_write_without_a_key_is_sent_once \
    a_hung_downstream_gives_a_504_at_the_budget_not_later \
    an_unreachable_downstream_is_a_502_after_retrying_a_read \
    the_gateway_in_front_of_a_faulty_billing \
    billing_in_front_of_a_faulty_community \
    a_failing_downstream_opens_the_breaker_for_every_invocation_and_a_probe_closes_it \
    a_retry_the_shared_budget_refuses_is_not_made_and_the_answer_says_so \
    a_stranger_is_judged_by_the_route_never_by_the_tenant_it_names \
    a_tenants_backlog_does_not_hold_back_another_tenants_event_beyond_one_relay_run
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
if [ "$platform" = akamai ]; then
  # The counts in PostgreSQL: their round trips and their bound (ignored
  # elsewhere; one at a time, one holds a lock on the counts' table).
  cargo test -p meridian-e2e --test counts_postgres "$@" -- --ignored --test-threads=1 || status=$?
fi
if [ "$platform" = cloud ]; then
  # The cloud deployment's own tests (ignored elsewhere): the services
  # reached through the app's public origin, strangers at the internal
  # prefix, the outbound requests each public request makes.
  cargo test -p meridian-e2e --test one_origin "$@" -- --ignored --test-threads=2 || status=$?
fi
exit "$status"
