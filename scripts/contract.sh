#!/usr/bin/env bash
# The API contract, checked: lints openapi.yaml with a real OpenAPI 3.1
# validator, then (when `spin` is on PATH or at $SPIN_BIN) runs
# Schemathesis against a real `spin up` with every check on.
#
#   scripts/contract.sh           lint + the bounded CI slice (fixed seed,
#                                 5 examples per operation: ~3,000 requests)
#   scripts/contract.sh --full    lint + the long run (100 examples per
#                                 operation, several seeds' worth of requests)
#   scripts/contract.sh --lint    lint only
#   scripts/contract.sh -- ARGS   lint + a run with your own `st run` ARGS
#
# Installs pinned Schemathesis and openapi-spec-validator into
# target/contract/venv (Python 3.9+ with venv and pip needed). Expects the
# components already built for wasm32-wasip2 (`scripts/test.sh` builds them;
# or `cargo build --target wasm32-wasip2 --release -p gateway -p identity
# -p community -p billing`).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION="4.32.5"
VALIDATOR_VERSION="0.9.0"

mode="ci"
extra=()
case "${1:-}" in
  --full) mode="full" ;;
  --lint) mode="lint" ;;
  --) shift; mode="custom"; extra=("$@") ;;
  "") ;;
  *) echo "usage: $0 [--full | --lint | -- ST_RUN_ARGS...]" >&2; exit 2 ;;
esac

venv="target/contract/venv"
if [ ! -x "$venv/bin/st" ] || ! "$venv/bin/st" --version | grep -q "$SCHEMATHESIS_VERSION" \
  || ! "$venv/bin/pip" show openapi-spec-validator 2>/dev/null | grep -q "^Version: $VALIDATOR_VERSION$"; then
  echo "installing Schemathesis $SCHEMATHESIS_VERSION and openapi-spec-validator $VALIDATOR_VERSION into $venv"
  mkdir -p target/contract
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$VALIDATOR_VERSION"
fi

echo "lint: openapi.yaml against the OpenAPI 3.1 schema (openapi-spec-validator $VALIDATOR_VERSION)"
"$venv/bin/openapi-spec-validator" --schema 3.1 openapi.yaml

[ "$mode" = "lint" ] && exit 0

spin_bin="${SPIN_BIN:-$(command -v spin || true)}"
if [ -z "$spin_bin" ] || [ ! -x "$spin_bin" ]; then
  echo "!!!!!!!! SCHEMATHESIS SKIPPED: no 'spin' on PATH and SPIN_BIN unset -- the contract was only linted !!!!!!!!"
  exit 0
fi

case "$mode" in
  ci) args=(--seed 1 --max-examples 5) ;;
  full) args=(--seed "${SEED:-1}" --max-examples 100) ;;
  custom) args=("${extra[@]}") ;;
esac
echo "schemathesis ${args[*]} against a real spin up ($("$spin_bin" --version))"
SPIN_BIN="$spin_bin" SCHEMATHESIS="$PWD/$venv/bin/st" \
  cargo run --quiet --locked -p meridian-tools --bin contract -- "${args[@]}"
