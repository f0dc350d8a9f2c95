#!/usr/bin/env bash
# Creates (or replaces) Meridian's Secrets in the current namespace, from
# fresh random values and your databases' addresses; no file in this
# repository holds a usable secret.
#
#   meridian-secrets         internal-token, admin-token, redis-password:
#                            64 random hex characters each
#   meridian-runtime-config  runtime-config.toml: the Redis password, and
#                            for libSQL the databases' URLs and tokens
#                            (deploy/runtime-config/libsql.toml, or with
#                            --postgres deploy/runtime-config/postgres.toml)
#   meridian-postgres        with --postgres: host, identity, community,
#                            billing (the services' database addresses)
#
# libSQL (the default) takes the databases from the environment:
#   IDENTITY_DB_URL IDENTITY_DB_TOKEN COMMUNITY_DB_URL COMMUNITY_DB_TOKEN
#   BILLING_DB_URL BILLING_DB_TOKEN
# (`turso db show --url meridian-identity`, `turso db tokens create
# meridian-identity`, ...). With --postgres (for
# deploy/kubernetes/postgres/all-in-one.yaml):
#   POSTGRES_HOST (postgres://host:port)
#   IDENTITY_POSTGRES COMMUNITY_POSTGRES BILLING_POSTGRES
#   (postgres://user:password@host:port/database, one database each,
#   created with LOCALE 'C': docs/storage.md)
# Prints the admin token once, for you to keep. With --dry-run, prints the
# Secrets instead of applying them.
set -euo pipefail
cd "$(dirname "$0")/../.."
apply=(kubectl apply -f -)
postgres=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) apply=(cat) ;;
    --postgres) postgres=1 ;;
    *) echo "usage: $0 [--postgres] [--dry-run]" >&2; exit 2 ;;
  esac
done

random() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
if [ -n "$postgres" ]; then
  needed=(POSTGRES_HOST IDENTITY_POSTGRES COMMUNITY_POSTGRES BILLING_POSTGRES)
  template=deploy/runtime-config/postgres.toml
else
  needed=(IDENTITY_DB_URL IDENTITY_DB_TOKEN COMMUNITY_DB_URL COMMUNITY_DB_TOKEN BILLING_DB_URL BILLING_DB_TOKEN)
  template=deploy/runtime-config/libsql.toml
fi
for v in "${needed[@]}"; do
  [ -n "${!v:-}" ] || { echo "set $v (see the top of $0)" >&2; exit 1; }
done
internal_token="$(random)"
admin_token="$(random)"
redis_password="$(random)"

config="$(mktemp)"
trap 'rm -f "$config"' EXIT
sed -e "s|REPLACE-with-the-redis-password|$redis_password|" \
    -e "s|https://meridian-identity-YOUR-ORG.turso.io|${IDENTITY_DB_URL:-}|" \
    -e "s|REPLACE-with-the-identity-database-token|${IDENTITY_DB_TOKEN:-}|" \
    -e "s|https://meridian-community-YOUR-ORG.turso.io|${COMMUNITY_DB_URL:-}|" \
    -e "s|REPLACE-with-the-community-database-token|${COMMUNITY_DB_TOKEN:-}|" \
    -e "s|https://meridian-billing-YOUR-ORG.turso.io|${BILLING_DB_URL:-}|" \
    -e "s|REPLACE-with-the-billing-database-token|${BILLING_DB_TOKEN:-}|" \
    "$template" >"$config"
if grep -q 'REPLACE-\|YOUR-ORG' "$config"; then
  echo "$template has a placeholder this script does not fill" >&2
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
  if [ -n "$postgres" ]; then
    echo "---"
    kubectl create secret generic meridian-postgres --dry-run=client -o yaml \
      --from-literal=host="$POSTGRES_HOST" \
      --from-literal=identity="$IDENTITY_POSTGRES" \
      --from-literal=community="$COMMUNITY_POSTGRES" \
      --from-literal=billing="$BILLING_POSTGRES"
  fi
} | "${apply[@]}"
echo "the platform admin token (shown once): $admin_token" >&2
