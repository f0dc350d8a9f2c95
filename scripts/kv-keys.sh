#!/usr/bin/env bash
# Keys in the key-value store for a stated deployment, as the Fermyon Cloud
# profile runs (its build: key-value `store` alone; one SQLite database):
# TENANTS tenants, TOKENS tokens in use, each reading two routes in three
# rounds a rate window apart, then the store's keys counted by family
# (tools/src/bin/kv_keys.rs; docs/storage.md).
#
#   scripts/kv-keys.sh [TENANTS TOKENS CACHE]   (default 75 1000 off; CACHE
#                                               is resolution_cache)
#
# Needs `spin` (PATH or SPIN_BIN). A measurement, not part of the test
# command; it fails when the store holds more than Cloud's 1,024 keys.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-for.sh cloud --locked >/dev/null
MERIDIAN_PROFILE=cloud cargo run -q --locked -p meridian-tools --bin kv_keys -- "$@"
