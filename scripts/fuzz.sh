#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that face untrusted input (the
# invariants are in shared/platform/src/checks.rs). Runs every target for
# SECONDS_PER_TARGET (default 60) and keeps what it finds new in
# fuzz/corpus/<target>/ — commit the corpus, and the host tests replay it
# on every run (scripts/test.sh). Needs a nightly toolchain (cargo-fuzz
# builds with sanitizer flags) and installs cargo-fuzz from crates.io.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   SECONDS_PER_TARGET=600 scripts/fuzz.sh json_body
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${SECONDS_PER_TARGET:-60}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzzing needs a nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  echo "==> $target for ${seconds}s"
  # -max_total_time bounds the run; a crash stops it with the input saved
  # under fuzz/artifacts/<target>/ and fails this script.
  log="$(mktemp)"
  if ! cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 >"$log" 2>&1; then
    # The panic (the components' log lines are JSON on the same stream).
    grep -v '^{"ts"' "$log" | grep -A12 -m1 'panicked' || true
    tail -20 "$log"
    echo "FUZZ FAILURE in $target: the input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -E 'stat::number_of_executed_units|stat::new_units_added' "$log" || tail -5 "$log"
  rm -f "$log"
done
# Keep the corpus small: only inputs that add coverage.
for target in "${targets[@]}"; do
  cargo +nightly fuzz cmin -O "$target" "corpus/$target" >/dev/null 2>&1 || true
done
