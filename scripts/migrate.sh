#!/usr/bin/env bash
# Brings every service's schema up to date through the gateway's admin
# route `POST /ops/migrate` (docs/deploy.md, "Migrations on a new
# database"): the step after a deploy, safe to repeat. Prints the versions
# each service applied; exits non-zero, with the problem, when one did not.
#
#   scripts/migrate.sh [BASE_URL]   default http://127.0.0.1:3000
#
# The admin token is $ADMIN_TOKEN, else $SPIN_VARIABLE_ADMIN_TOKEN, else
# the development one scripts/dev.sh uses.
set -euo pipefail
base="${1:-http://127.0.0.1:3000}"
token="${ADMIN_TOKEN:-${SPIN_VARIABLE_ADMIN_TOKEN:-dev-admin-token}}"
curl -sS --fail-with-body --max-time 20 -X POST \
  -H "authorization: Bearer $token" \
  -H "x-meridian-timeout-ms: 10000" \
  "${base%/}/ops/migrate"
echo
