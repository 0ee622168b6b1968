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
build="$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)"
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
version="$("$build/server/serenity-server" --version)"
node validate.mjs "$target" "$work/help.txt" "$version"
# The rules must reject what they describe: a plaintext server, a grace
# shorter than the drain, an unknown flag, an untagged image.
if [ "$target" = "$work/rendered.yaml" ]; then
  sed -e 's/terminationGracePeriodSeconds: 60/terminationGracePeriodSeconds: 10/' \
      -e 's/- --health-port/- --plaintext\n        - --no-such-flag\n        - --health-port/' \
      -e 's|image: registry.example.com/serenity:.*|image: registry.example.com/serenity:latest|' \
      "$target" > "$work/broken.yaml"
  if node validate.mjs "$work/broken.yaml" "$work/help.txt" "$version" > "$work/broken.out" 2>&1; then
    echo "validate.mjs accepted a broken deployment" >&2; exit 1
  fi
  for expected in "must serve TLS" "must exceed the drain" "has no flag --no-such-flag" "image tag latest"; do
    grep -q -- "$expected" "$work/broken.out" || { echo "validate.mjs did not report: $expected" >&2; cat "$work/broken.out" >&2; exit 1; }
  done
  echo "a broken deployment is rejected"
fi
