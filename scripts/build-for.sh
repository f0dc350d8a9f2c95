#!/usr/bin/env bash
# Builds the four components for one platform, with what that platform's
# host offers, and says where the Wasm is.
#
#   scripts/build-for.sh spin     spin up and SpinKube: SQLite, PostgreSQL,
#                                 key-value store + atomics + batch
#                                 (target/wasm32-wasip2/release, as spin.toml)
#   scripts/build-for.sh cloud    Fermyon Cloud: key-value `store` alone
#                                 (target/platforms/cloud)
#   scripts/build-for.sh akamai   Akamai Functions: no SQLite (PostgreSQL
#                                 only), key-value `store` + `batch`
#                                 (target/platforms/akamai)
#
#   scripts/build-for.sh --features PLATFORM   prints that build's cargo
#                                 features (the test command lints with them)
#
# docs/deploy.md says what each build gives up; the test command checks
# every build's imports against its platform (tools/src/bin/platforms.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
print_features=""
if [ "${1:-}" = "--features" ]; then
  print_features=1
  shift
fi
platform="${1:-spin}"
shift || true
case "$platform" in
  spin) features="" ;;
  cloud) features="gateway/without-atomics,gateway/without-batch,gateway/without-postgres,identity/without-batch,identity/without-postgres,community/without-postgres,billing/without-atomics,billing/without-batch,billing/without-postgres" ;;
  akamai) features="gateway/without-atomics,billing/without-atomics,identity/without-sqlite,community/without-sqlite,billing/without-sqlite" ;;
  *) echo "usage: scripts/build-for.sh spin|cloud|akamai" >&2; exit 2 ;;
esac
if [ -n "$print_features" ]; then
  echo "$features"
  exit 0
fi
components=(-p gateway -p identity -p community -p billing)
if [ -z "$features" ]; then
  cargo build --target wasm32-wasip2 --release "$@" "${components[@]}"
  echo "built for $platform: target/wasm32-wasip2/release/{gateway,identity,community,billing}.wasm"
  exit 0
fi
cargo build --target wasm32-wasip2 --release "$@" "${components[@]}" --features "$features"
out="target/platforms/$platform"
mkdir -p "$out"
for c in gateway identity community billing; do
  cp "target/wasm32-wasip2/release/$c.wasm" "$out/$c.wasm"
done
# The default build is what spin.toml and the test suite run: restore it.
cargo build --target wasm32-wasip2 --release "$@" "${components[@]}"
echo "built for $platform: $out/{gateway,identity,community,billing}.wasm"
