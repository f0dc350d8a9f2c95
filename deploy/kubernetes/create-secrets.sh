#!/usr/bin/env bash
# Creates (or replaces) Meridian's two Secrets in the current namespace,
# from fresh random values and your databases' addresses; no file in this
# repository holds a usable secret.
#
#   meridian-secrets         internal-token, admin-token, redis-password:
#                            64 random hex characters each
#   meridian-runtime-config  runtime-config.toml: deploy/runtime-config/
#                            libsql.toml with the Redis password and the
#                            libSQL/Turso URLs and tokens filled in
#
# The libSQL databases come from the environment:
#   IDENTITY_DB_URL IDENTITY_DB_TOKEN COMMUNITY_DB_URL COMMUNITY_DB_TOKEN
#   BILLING_DB_URL BILLING_DB_TOKEN
# (`turso db show --url meridian-identity`, `turso db tokens create
# meridian-identity`, ...). Prints the admin token once, for you to keep.
# With --dry-run, prints the Secrets instead of applying them.
set -euo pipefail
cd "$(dirname "$0")/../.."
apply=(kubectl apply -f -)
[ "${1:-}" = "--dry-run" ] && apply=(cat)

random() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
for v in IDENTITY_DB_URL IDENTITY_DB_TOKEN COMMUNITY_DB_URL COMMUNITY_DB_TOKEN BILLING_DB_URL BILLING_DB_TOKEN; do
  [ -n "${!v:-}" ] || { echo "set $v (see the top of $0)" >&2; exit 1; }
done
internal_token="$(random)"
admin_token="$(random)"
redis_password="$(random)"

config="$(mktemp)"
trap 'rm -f "$config"' EXIT
sed -e "s|REPLACE-with-the-redis-password|$redis_password|" \
    -e "s|https://meridian-identity-YOUR-ORG.turso.io|$IDENTITY_DB_URL|" \
    -e "s|REPLACE-with-the-identity-database-token|$IDENTITY_DB_TOKEN|" \
    -e "s|https://meridian-community-YOUR-ORG.turso.io|$COMMUNITY_DB_URL|" \
    -e "s|REPLACE-with-the-community-database-token|$COMMUNITY_DB_TOKEN|" \
    -e "s|https://meridian-billing-YOUR-ORG.turso.io|$BILLING_DB_URL|" \
    -e "s|REPLACE-with-the-billing-database-token|$BILLING_DB_TOKEN|" \
    deploy/runtime-config/libsql.toml >"$config"
if grep -q 'REPLACE-\|YOUR-ORG' "$config"; then
  echo "deploy/runtime-config/libsql.toml has a placeholder this script does not fill" >&2
  exit 1
fi

{
  kubectl create secret generic meridian-secrets --dry-run=client -o yaml \
    --from-literal=internal-token="$internal_token" \
    --from-literal=admin-token="$admin_token" \
    --from-literal=redis-password="$redis_password"
  echo "---"
  kubectl create secret generic meridian-runtime-config --dry-run=client -o yaml \
    --from-file=runtime-config.toml="$config"
} | "${apply[@]}"
echo "the platform admin token (shown once): $admin_token" >&2
