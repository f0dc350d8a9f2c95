#!/usr/bin/env bash
# The split layout: each service in its own `spin up`, from the manifests in
# deploy/split/ (generated from spin.toml).
#
#   scripts/split.sh up [PORT]      run it: gateway on PORT (default 3000),
#                                   identity/community/billing on the next three
#   scripts/split.sh test [ARGS]    the end-to-end suite across four processes
#   scripts/split.sh generate       rewrite deploy/split/ after editing spin.toml
set -euo pipefail
cd "$(dirname "$0")/.."
command -v spin >/dev/null 2>&1 || [ -n "${SPIN_BIN:-}" ] || { echo "spin (>= 3) is required: see README.md" >&2; exit 1; }
build() {
  rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
  cargo build --target wasm32-wasip2 --release -p gateway -p identity -p community -p billing -p hang
}
case "${1:-}" in
  up)
    shift
    build
    export SPIN_VARIABLE_INTERNAL_TOKEN="${SPIN_VARIABLE_INTERNAL_TOKEN:-dev-internal-token}"
    export SPIN_VARIABLE_ADMIN_TOKEN="${SPIN_VARIABLE_ADMIN_TOKEN:-dev-admin-token}"
    export SPIN_VARIABLE_ALLOW_DEV_SECRETS="${SPIN_VARIABLE_ALLOW_DEV_SECRETS:-on}"
    exec cargo run -q -p meridian-tools --bin split -- up "$@"
    ;;
  test)
    shift
    build
    MERIDIAN_LAYOUT=split exec cargo test -p meridian-e2e --test '*' "$@" -- --test-threads=2
    ;;
  generate)
    exec cargo run -q -p meridian-tools --bin split -- generate
    ;;
  *)
    sed -n '2,8p' "$0" >&2
    exit 2
    ;;
esac
