#!/usr/bin/env bash
# Builds Meridian and runs it locally with `spin up` on the embedded SQLite
# (files under .spin/sqlite/), with development secrets unless you set your own.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v spin >/dev/null 2>&1 || { echo "spin (>= 3) is required: see README.md" >&2; exit 1; }
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --target wasm32-wasip2 --release -p gateway -p identity -p community -p billing
mkdir -p .spin/sqlite
export SPIN_VARIABLE_INTERNAL_TOKEN="${SPIN_VARIABLE_INTERNAL_TOKEN:-dev-internal-token}"
export SPIN_VARIABLE_ADMIN_TOKEN="${SPIN_VARIABLE_ADMIN_TOKEN:-dev-admin-token}"
# The development tokens above are published: only this switch lets a
# component serve with them (a deployment without it answers 503).
export SPIN_VARIABLE_ALLOW_DEV_SECRETS="${SPIN_VARIABLE_ALLOW_DEV_SECRETS:-on}"
exec spin up --runtime-config-file runtime-config.toml "$@"
