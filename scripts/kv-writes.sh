#!/usr/bin/env bash
# Key-value writes per second at a steady 500 requests a second, as the
# Akamai Functions profile runs (its build, every service on a throw-away
# PostgreSQL, no SQLite): the counts in the key-value store, exact
# (`count_sample = 1`) and sampled (`count_sample = 64`), then in
# PostgreSQL (`counts_postgres`), as the profile deploys them
# (tools/src/bin/kv_writes.rs; docs/storage.md).
#
#   scripts/kv-writes.sh [RATE SECONDS SAMPLE]     (default 500 10 64)
#
# Needs `spin` (PATH or SPIN_BIN). A measurement, not part of the test
# command; it fails when the profile's app writes more than 50 in a second.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-for.sh akamai --locked >/dev/null
# shellcheck source=scripts/lib/postgres.sh
. scripts/lib/postgres.sh
start_postgres
trap stop_postgres EXIT
MERIDIAN_PROFILE=akamai MERIDIAN_DB=postgres cargo run -q --locked -p meridian-tools --bin kv_writes -- "$@"
