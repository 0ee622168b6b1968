#!/usr/bin/env bash
# Validates deploy/ offline (CTest: deploy_manifests): yamllint, then the
# base rendered by `kubectl kustomize` when kubectl is installed (else by
# validate.mjs itself) and checked against the Kubernetes API schemas and
# the deployment's rules, with BUILD_DIR's serenity-server --help as the
# list of known flags. scripts/install_deps.sh installs yamllint and this
# directory's node_modules (npm ci).
# Usage: deploy/validate/run.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
deploy="$(dirname "$here")"
build="${1:?usage: run.sh BUILD_DIR}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
yamllint -c "$deploy/.yamllint" --strict "$deploy/base"
"$build/server/serenity-server" --help > "$work/help.txt"
if command -v kubectl >/dev/null && kubectl kustomize "$deploy/base" > "$work/rendered.yaml" 2>"$work/kustomize.err"; then
  echo "rendered with kubectl kustomize"
  target="$work/rendered.yaml"
else
  echo "kubectl kustomize not available: rendering the base in validate.mjs"
  target="$deploy/base"
fi
cd "$here"
node validate.mjs "$target" "$work/help.txt"
