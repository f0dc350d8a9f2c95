#!/usr/bin/env bash
# Meridian's one test command: formatting, lints, host tests, the Wasm build
# of all four components, and the end-to-end suite against a real `spin up`
# when `spin` is on PATH (or at $SPIN_BIN). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# Every `cargo test` run is also written here, to total the results at the
# end. A failing run does not stop the script before the closing line: the
# totals must count the failures, and the exit status reports them.
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
failed_runs=0
run_tests() {
  if ! cargo test "$@" 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
}

step "toolchain: wasm32-wasip2 target, rustfmt, clippy"
if command -v rustup >/dev/null 2>&1; then
  rustup target add wasm32-wasip2
  rustup component add rustfmt clippy
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (host, all targets)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "clippy (wasm32-wasip2 components)"
cargo clippy --target wasm32-wasip2 --locked -p gateway -p identity -p community -p billing -p hang -p meridian-spin -p floor -p hello -- -D warnings

step "clippy (wasm32-wasip2: the builds for Fermyon Cloud and Akamai Functions, scripts/build-for.sh)"
for platform in cloud akamai; do
  cargo clippy --target wasm32-wasip2 --locked -p gateway -p identity -p community -p billing \
    --features "$(scripts/build-for.sh --features "$platform")" -- -D warnings
done

step "cargo doc --no-deps: the workspace's documentation builds without a warning"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked --quiet

step "host tests: platform, handlers over fakes, migrations on host SQLite, generated deploy files"
run_tests --workspace --exclude meridian-e2e --locked
run_tests -p meridian-e2e --lib --locked

step "build the four components (and the e2e suite's test component) for wasm32-wasip2"
cargo build --target wasm32-wasip2 --release --locked -p gateway -p identity -p community -p billing -p hang
for c in gateway identity community billing; do
  printf '  %-10s %8d bytes\n' "$c" "$(stat -c %s "target/wasm32-wasip2/release/$c.wasm")"
done

step "platforms: each platform's build, its imports against the interfaces the platform publishes"
scripts/build-for.sh cloud --locked
scripts/build-for.sh akamai --locked
if cargo run -q --locked -p meridian-tools --bin platforms; then
  echo "test result: ok. 1 passed; 0 failed (the platforms check)" >>"$results"
else
  failed_runs=$((failed_runs + 1))
  echo "test result: FAILED. 0 passed; 1 failed (the platforms check)" >>"$results"
fi

step "layers: the platform's modules import downward only, and no crate's files import in a circle (tools/src/bin/layers.rs)"
if cargo run -q --locked -p meridian-tools --bin layers; then
  echo "test result: ok. 1 passed; 0 failed (the layers check)" >>"$results"
else
  failed_runs=$((failed_runs + 1))
  echo "test result: FAILED. 0 passed; 1 failed (the layers check)" >>"$results"
fi

spin_bin="${SPIN_BIN:-$(command -v spin || true)}"
e2e_skipped=""
if [ -n "$spin_bin" ] && [ -x "$spin_bin" ]; then
  if ! command -v haproxy >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    step "installing haproxy, curl and jq (Debian): the front proxy the suite puts in front of the app (deploy/haproxy/), and what docs/getting-started.md and scripts/migrate.sh run"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq haproxy curl jq
  fi
  step "end-to-end suite against $("$spin_bin" --version)"
  SPIN_BIN="$spin_bin" run_tests -p meridian-e2e --test '*' --locked --no-fail-fast -- --test-threads=2
  step "end-to-end suite again, in the split layout: four spin up processes (scripts/split.sh test)"
  MERIDIAN_LAYOUT=split SPIN_BIN="$spin_bin" run_tests -p meridian-e2e --test '*' --locked --no-fail-fast -- --test-threads=2
  step "end-to-end suite again, every database on a real libSQL server (scripts/libsql.sh)"
  if ! SPIN_BIN="$spin_bin" scripts/libsql.sh --locked 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
  step "end-to-end suite again, one SQLite database for the whole app (scripts/one-database.sh)"
  if ! SPIN_BIN="$spin_bin" scripts/one-database.sh --locked 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
  step "end-to-end suite again, every service on a real PostgreSQL server 10 ms away (MERIDIAN_PG_RTT_MS=10 scripts/postgres.sh)"
  if ! MERIDIAN_PG_RTT_MS=10 SPIN_BIN="$spin_bin" scripts/postgres.sh --locked 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
  step "end-to-end suite again, as Fermyon Cloud runs it: its build, one SQLite database, no runtime config (scripts/hosted.sh cloud)"
  if ! SPIN_BIN="$spin_bin" scripts/hosted.sh cloud --locked 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
  step "end-to-end suite again, as Akamai Functions runs it: its build, PostgreSQL, no SQLite, no runtime config (scripts/hosted.sh akamai)"
  if ! SPIN_BIN="$spin_bin" scripts/hosted.sh akamai --locked 2>&1 | tee -a "$results"; then
    failed_runs=$((failed_runs + 1))
  fi
  step "benchmark slice: the failure memory, 2 s per scenario (full: memory_bench 20 8, see docs/benchmarks.md)"
  if SPIN_BIN="$spin_bin" cargo run -q --locked -p meridian-tools --bin memory_bench 2 2; then
    echo "test result: ok. 1 passed; 0 failed (the failure-memory benchmark slice)" >>"$results"
  else
    failed_runs=$((failed_runs + 1))
    echo "test result: FAILED. 0 passed; 1 failed (the failure-memory benchmark slice)" >>"$results"
  fi
  step "benchmark slice: overload and tenant limits, 3 s (full: goodput, see docs/benchmarks.md)"
  if SPIN_BIN="$spin_bin" cargo run -q --locked -p meridian-tools --bin goodput -- --slice; then
    echo "test result: ok. 1 passed; 0 failed (the goodput benchmark slice)" >>"$results"
  else
    failed_runs=$((failed_runs + 1))
    echo "test result: FAILED. 0 passed; 1 failed (the goodput benchmark slice)" >>"$results"
  fi
  step "benchmark slice: against the floor app, 1 s per target (full: scripts/bench.sh, see docs/benchmarks.md)"
  if SPIN_BIN="$spin_bin" scripts/bench.sh --slice; then
    echo "test result: ok. 1 passed; 0 failed (the floor benchmark slice)" >>"$results"
  else
    failed_runs=$((failed_runs + 1))
    echo "test result: FAILED. 0 passed; 1 failed (the floor benchmark slice)" >>"$results"
  fi
else
  e2e_skipped="!!!!!!!! END-TO-END SUITE SKIPPED: the totals below are host tests only !!!!!!!!"
  echo
  echo "!!!!!!!! END-TO-END SUITE SKIPPED: no 'spin' on PATH and SPIN_BIN unset -- the app was NOT run; host tests only !!!!!!!!"
fi

step "API contract: lint openapi.yaml; Schemathesis against spin up when present"
# Python with venv is the one system package the contract check needs.
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq python3 python3-venv python3-pip
fi
if ! SPIN_BIN="${spin_bin}" scripts/contract.sh; then
  failed_runs=$((failed_runs + 1))
  echo "test result: FAILED. 0 passed; 1 failed (the API contract check)" >>"$results"
fi

step "generated clients: Python, TypeScript (openapi-fetch) and hey-api from the served contract, their workflows against spin up"
if ! SPIN_BIN="${spin_bin}" scripts/clients.sh; then
  failed_runs=$((failed_runs + 1))
  echo "test result: FAILED. 0 passed; 1 failed (the generated clients)" >>"$results"
elif [ -n "$spin_bin" ] && [ -x "$spin_bin" ]; then
  echo "test result: ok. 3 passed; 0 failed (the generated clients' workflows)" >>"$results"
fi

step "deploy files: SpinApps against the SpinKube CRD, Kubernetes objects, runtime configs"
if scripts/deploy-check.sh; then
  echo "test result: ok. 1 passed; 0 failed (the deploy file check)" >>"$results"
else
  failed_runs=$((failed_runs + 1))
  echo "test result: FAILED. 0 passed; 1 failed (the deploy file check)" >>"$results"
fi

# One closing line with the totals of every test that actually ran; a
# test binary that failed to build or crashed counts as a failure too. A
# skipped end-to-end suite is said again right above it.
[ -z "$e2e_skipped" ] || printf '\n%s\n' "$e2e_skipped"
awk -v runs="$failed_runs" '
  /^test result:/ { p += $4; f += $6 }
  END {
    if (runs > 0 && f == 0) f = runs
    printf "\ntests: %d passed, %d failed\n", p, f
  }' "$results"
[ "$failed_runs" -eq 0 ]
