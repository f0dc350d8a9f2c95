#!/usr/bin/env bash
# Mutation testing of the platform's budget (config, steps, deadline,
# propagation, admission, context), retry and idempotency modules with cargo-mutants (installed from crates.io if
# missing): every mutant must make a test of the platform or of the host
# test kit fail. Results in mutants.out/ (caught.txt, missed.txt, …); the
# latest figures are in docs/reliability.md.
#
#   scripts/mutants.sh              # the whole set (~15 min on 2 cores)
#   scripts/mutants.sh --list       # just list the mutants
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null 2>&1 || cargo install cargo-mutants --locked
exec cargo mutants \
  --package meridian-platform \
  --file 'shared/platform/src/budget/*.rs' \
  --file 'shared/platform/src/http/retry/*.rs' \
  --file 'shared/platform/src/store/idempotency/*.rs' \
  --file 'shared/platform/src/http/idempotency/*.rs' \
  --test-package meridian-platform \
  --test-package meridian-testing \
  --jobs 2 \
  "$@"
