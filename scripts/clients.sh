#!/usr/bin/env bash
# Generated clients, checked against a real `spin up`: fetches the contract
# the gateway serves (/openapi.json), generates
#   - a Python client with openapi-python-client (--fail-on-warning), and
#     type-checks and runs clients/python/workflow.py with it;
#   - TypeScript types with openapi-typescript, and type-checks and runs
#     clients/typescript/workflow.ts over openapi-fetch;
#   - an SDK with @hey-api/openapi-ts, and checks it has a function for
#     every operation and makes a live round trip (clients/typescript/hey-api.ts).
# Each workflow creates a tenant, a resident, a keyed invoice and its replay,
# a payment, a filtered list and a 422, as a new user of the API would.
#
#   scripts/clients.sh
#
# Installs pinned generators into target/clients (Python 3.9+ with venv,
# and Node.js 18+ with npm). Without `spin` (PATH or SPIN_BIN) it generates
# and type-checks from openapi.yaml alone and says loudly that the
# workflows were skipped. Expects the components built for wasm32-wasip2.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON_CLIENT_VERSION="0.29.1"
RUFF_VERSION="0.17.6"
MYPY_VERSION="2.4.1"
out="$PWD/target/clients"
venv="$out/venv"
ts="$PWD/clients/typescript"

# The half that runs with the app up: MERIDIAN_URL set by the `against` tool.
if [ "${1:-}" = "--inside" ]; then
  live="${MERIDIAN_URL:+yes}"
  contract="$out/openapi.json"
  if [ -n "$live" ]; then
    "$venv/bin/python" - "$MERIDIAN_URL/openapi.json" "$contract" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1]) as r:
    open(sys.argv[2], "wb").write(r.read())
EOF
  else
    "$venv/bin/python" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open("openapi.yaml")), open(sys.argv[1], "w"))' "$contract"
  fi
  echo "contract: $contract ($([ -n "$live" ] && echo "served by the gateway" || echo "openapi.yaml"))"

  echo "==> openapi-python-client $PYTHON_CLIENT_VERSION"
  rm -rf "$out/python"
  (cd "$out" && PATH="$venv/bin:$PATH" "$venv/bin/openapi-python-client" generate \
    --path "$contract" --output-path "$out/python" --fail-on-warning)
  MYPYPATH="$out/python" "$venv/bin/mypy" --strict --cache-dir "$out/mypy-cache" clients/python/workflow.py

  echo "==> openapi-typescript + openapi-fetch, @hey-api/openapi-ts"
  rm -rf "$ts/generated" "$ts/dist"
  (cd "$ts" && MERIDIAN_CONTRACT="$contract" npx --no-install openapi-typescript "$contract" --output generated/meridian.d.ts)
  (cd "$ts" && npx --no-install openapi-ts --input "$contract" --output generated/hey-api >/dev/null)
  (cd "$ts" && npx --no-install tsc)

  if [ -z "$live" ]; then
    echo "!!!!!!!! CLIENT WORKFLOWS SKIPPED: no 'spin' on PATH and SPIN_BIN unset -- clients generated and type-checked only !!!!!!!!"
    exit 0
  fi
  PYTHONPATH="$out/python" "$venv/bin/python" clients/python/workflow.py
  (cd "$ts" && node dist/workflow.js)
  (cd "$ts" && MERIDIAN_CONTRACT="$contract" node dist/hey-api.js)
  exit 0
fi

mkdir -p "$out"
if [ ! -x "$venv/bin/openapi-python-client" ] \
  || ! "$venv/bin/openapi-python-client" --version | grep -q "$PYTHON_CLIENT_VERSION"; then
  echo "installing openapi-python-client $PYTHON_CLIENT_VERSION, ruff $RUFF_VERSION, mypy $MYPY_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "openapi-python-client==$PYTHON_CLIENT_VERSION" "ruff==$RUFF_VERSION" "mypy==$MYPY_VERSION" pyyaml
fi
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq nodejs npm
fi
(cd "$ts" && npm ci --no-audit --no-fund --silent)

spin_bin="${SPIN_BIN:-$(command -v spin || true)}"
if [ -z "$spin_bin" ] || [ ! -x "$spin_bin" ]; then
  exec "$0" --inside
fi
echo "client workflows against a real spin up ($("$spin_bin" --version))"
SPIN_BIN="$spin_bin" cargo run --quiet --locked -p meridian-tools --bin against -- "$PWD/scripts/clients.sh" --inside
