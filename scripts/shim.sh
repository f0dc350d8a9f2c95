#!/usr/bin/env bash
# Meridian on the SpinKube runtime itself: containerd-shim-spin under
# Debian's containerd, the all-in-one app pulled from a local OCI registry
# (Debian's docker-registry) where `spin registry push` put it, run with
# `ctr run --runtime io.containerd.spin.v2` and what the SpinApp in
# deploy/kubernetes/all-in-one.yaml gives it: its variables as container
# environment variables (the shim maps INTERNAL_TOKEN to the app variable
# internal_token, as SpinKube sets them), and a runtime configuration at
# /runtime-config.toml with the key-value store on Redis and each SQLite
# label on its own libSQL server (sqld), as deploy/runtime-config/libsql.toml
# maps them. Then the smoke run (tools/src/bin/smoke.rs: a tenant, a keyed
# write and its replay, a read, a 422) against it, and again with billing
# hung (a 504 at the budget).
#
#   scripts/shim.sh /path/to/containerd-shim-spin-v2
#
# The shim is not built here: build containerd-shim-spin from its source
# (docs/deploy.md, "On the SpinKube runtime"). Needs root (containerd), `spin` on
# PATH or at SPIN_BIN (for `spin registry push`), and Debian's containerd,
# docker-registry and redis-server, installed when missing; sqld as
# scripts/libsql.sh installs it. Everything it starts listens on 127.0.0.1
# and is stopped when it ends; its files are under target/shim/. Not run
# by CI: it needs a shim built by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

shim="${1:?usage: scripts/shim.sh /path/to/containerd-shim-spin-v2}"
shim="$(realpath "$shim")"
[ -x "$shim" ] || { echo "not an executable: $shim" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "containerd needs root: run as root" >&2; exit 1; }
spin="${SPIN_BIN:-$(command -v spin || true)}"
[ -n "$spin" ] || { echo "spin is needed for 'spin registry push' (PATH or SPIN_BIN)" >&2; exit 1; }

missing=()
for pair in ctr:containerd docker-registry:docker-registry redis-server:redis-server curl:curl; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
# shellcheck source=scripts/lib/sqld.sh
. scripts/lib/sqld.sh
ensure_sqld
SQLD_BIN="$(realpath "$SQLD_BIN")"

work="$PWD/target/shim"
# A container left by an interrupted run keeps its rootfs mounted, and the
# shim its state under /run/containerd/spin/<namespace>/<id>.
rm -rf /run/containerd/spin/meridian
grep -o " $work/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
rm -rf "$work"
mkdir -p "$work/bin" "$work/registry" "$work/containerd"
ln -s "$shim" "$work/bin/containerd-shim-spin-v2"
pids=()
stop_all() {
  ctr -a "$work/containerd/containerd.sock" -n meridian task kill -s SIGKILL meridian >/dev/null 2>&1 || true
  sleep 0.5
  ctr -a "$work/containerd/containerd.sock" -n meridian container rm meridian >/dev/null 2>&1 || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  grep -o " $work/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
}
trap stop_all EXIT
wait_for() { # URL SECONDS
  for _ in $(seq 1 $(($2 * 10))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$1 did not answer within $2 s" >&2
  return 1
}
# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

echo "== shim: $("$shim" -v 2>&1 | head -1 || true)"
echo "== spin: $("$spin" --version)"
echo "== containerd: $(containerd --version)"

echo "== build the components"
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --target wasm32-wasip2 --release --locked -p gateway -p identity -p community -p billing
cargo build --release --locked -p meridian-tools --bin smoke
smoke=target/release/smoke

echo "== a local OCI registry (docker-registry) on 127.0.0.1:5055"
cat >"$work/registry.yml" <<EOF
version: 0.1
log: { level: warn }
storage: { filesystem: { rootdirectory: $work/registry } }
http: { addr: 127.0.0.1:5055 }
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
pids+=($!)
wait_for http://127.0.0.1:5055/v2/ 20

image=127.0.0.1:5055/meridian:smoke
echo "== spin registry push $image"
"$spin" registry push --insecure "$image"

echo "== containerd with the shim on its PATH"
cat >"$work/containerd/config.toml" <<EOF
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$work/containerd/containerd.sock"
EOF
PATH="$work/bin:$PATH" containerd -c "$work/containerd/config.toml" >"$work/containerd.log" 2>&1 &
pids+=($!)
ctr_() { ctr -a "$work/containerd/containerd.sock" -n meridian "$@"; }
for _ in $(seq 1 100); do ctr_ version >/dev/null 2>&1 && break; sleep 0.1; done
# A Spin OCI artifact's layers are Wasm, not file trees: containerd passes
# them to the shim from 1.6.25 and 1.7.7 on (containerd PR #9142); older
# ones refuse to unpack it ("mismatched image rootfs and manifest layers").
if ctr_ images pull --plain-http "$image" >"$work/pull-artifact.log" 2>&1; then
  run_image="$image"
else
  echo "   containerd $(containerd --version | awk '{print $3}') cannot unpack the Spin OCI artifact:"
  echo "   $(tail -1 "$work/pull-artifact.log")"
  echo "== the same app as an image of files (spin.toml and the components), through the registry"
  run_image=127.0.0.1:5055/meridian:files
  python3 - "$work/files-image.tar" <<'PY'
import hashlib, io, json, os, sys, tarfile
out = sys.argv[1]
files = ["spin.toml"] + [f"target/wasm32-wasip2/release/{c}.wasm" for c in ("gateway", "identity", "community", "billing")]
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
    for f in files:
        info = t.gettarinfo(f, arcname=f)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        with open(f, "rb") as fh:
            t.addfile(info, fh)
    # Spin's outbound HTTP client loads the platform's CA bundle on its
    # first call, service chaining included; without one in the rootfs the
    # shim's worker panics ("could not load platform certs").
    info = t.gettarinfo("/etc/ssl/certs/ca-certificates.crt", arcname="etc/ssl/certs/ca-certificates.crt")
    info.uid = info.gid = 0
    info.mtime = 0
    with open("/etc/ssl/certs/ca-certificates.crt", "rb") as fh:
        t.addfile(info, fh)
layer = layer.getvalue()
def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data
layer_digest, _ = blob(layer)
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Entrypoint": ["/"]},
                     "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}).encode()
config_digest, _ = blob(config)
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": len(layer)}]}).encode()
manifest_digest, _ = blob(manifest)
index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": manifest_digest, "size": len(manifest), "platform": {"architecture": "amd64", "os": "linux"},
    "annotations": {"org.opencontainers.image.ref.name": "files"}}]}).encode()
with tarfile.open(out, "w") as t:
    def add(name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    add("index.json", index)
    for digest, data in ((layer_digest, layer), (config_digest, config), (manifest_digest, manifest)):
        add("blobs/sha256/" + digest.split(":")[1], data)
PY
  ctr_ images import --base-name 127.0.0.1:5055/meridian "$work/files-image.tar"
  ctr_ images push --plain-http "$run_image"
  ctr_ images rm "$run_image" >/dev/null
  ctr_ images pull --plain-http "$run_image"
fi

echo "== Redis and one libSQL server per SQLite label"
redis-server --port 6399 --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
{
  echo '[key_value_store.default]'
  echo 'type = "redis"'
  echo 'url = "redis://127.0.0.1:6399"'
} >"$work/runtime-config.toml"
port=8091
for label in identity community billing; do
  "$SQLD_BIN" --db-path "$work/sqld-$label" --http-listen-addr "127.0.0.1:$port" \
    --grpc-listen-addr "127.0.0.1:$((port + 100))" >"$work/sqld-$label.log" 2>&1 &
  pids+=($!)
  printf '\n[sqlite_database.%s]\ntype = "libsql"\nurl = "http://127.0.0.1:%s"\ntoken = "none"\n' \
    "$label" "$port" >>"$work/runtime-config.toml"
  wait_for "http://127.0.0.1:$port/health" 20
  port=$((port + 1))
done

internal_token="shim-internal-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
admin_token="shim-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
url=http://127.0.0.1:3355
# Runs the app as SpinKube would; extra arguments are more --env flags.
run_app() {
  ctr_ container rm meridian >/dev/null 2>&1 || true
  local started
  started=$(now_ms)
  ctr_ run --rm --net-host --runtime io.containerd.spin.v2 \
    --mount "type=bind,src=$work/runtime-config.toml,dst=/runtime-config.toml,options=rbind:ro" \
    --env SPIN_HTTP_LISTEN_ADDR=127.0.0.1:3355 \
    --env INTERNAL_TOKEN="$internal_token" \
    --env ADMIN_TOKEN="$admin_token" \
    --env REQUEST_BUDGET_MS=3000 \
    --env MAX_REQUEST_BUDGET_MS=10000 \
    "$@" "$run_image" meridian / >>"$work/app.log" 2>&1 &
  pids+=($!)
  wait_for "$url/healthz" 60
  echo "   answering $(( $(now_ms) - started )) ms after ctr run"
}
stop_app() {
  ctr_ task kill -s SIGTERM meridian >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do ctr_ task ls -q 2>/dev/null | grep -qx meridian || break; sleep 0.1; done
  ctr_ task kill -s SIGKILL meridian >/dev/null 2>&1 || true
  ctr_ container rm meridian >/dev/null 2>&1 || true
}

echo "== the app as deployed"
run_app
"$smoke" --url "$url" --admin-token "$admin_token"
stop_app

echo "== the app with billing hung"
"$smoke" --hang-on 127.0.0.1:3366 >"$work/hang.log" 2>&1 &
pids+=($!)
run_app --env BILLING_URL=http://127.0.0.1:3366
"$smoke" --hung --url "$url" --admin-token "$admin_token"
stop_app

if grep -n -e "$internal_token" -e "$admin_token" "$work/app.log"; then
  echo "a secret reached the app's log" >&2
  exit 1
fi
echo "== the SpinKube runtime ran Meridian: every smoke check held (logs under target/shim/)"
