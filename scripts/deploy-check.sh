#!/usr/bin/env bash
# Validates every deploy file: the SpinApps in deploy/kubernetes/ against the
# SpinKube operator's CRD schema, the other Kubernetes objects against the
# Kubernetes API schema (both strictly: an unknown field is an error), the
# variables, Secret keys and components the SpinApps name against the
# manifests, and every runtime configuration (see deploy/check.py).
# `spin up` accepting the runtime configurations and the split manifests is
# proven by the end-to-end suite (tests/tests/deploy.rs, scripts/split.sh).
#
# Installs pinned jsonschema, PyYAML and kubernetes-validate into
# target/deploy-check/venv (Python 3.11+ with venv and pip needed).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="target/deploy-check/venv"
pins=(jsonschema==4.26.0 PyYAML==6.0.4 kubernetes-validate==1.37.0)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" freeze 2>/dev/null | grep -q '^kubernetes-validate==1.37.0$'; then
  echo "installing ${pins[*]} into $venv"
  mkdir -p target/deploy-check
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
fi
exec "$venv/bin/python" deploy/check.py
