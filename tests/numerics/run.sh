#!/usr/bin/env bash
# The identity rewrites' numerical and structural proof (issue 17;
# CTest: rewrite_numerics): numerics.py generates the cases with random
# weights, plans and exports them with BUILD_DIR's serenity-client, checks
# the exports with onnx.checker and a file-order re-plan, and runs original
# and rewritten models in ONNX Runtime (onnxruntime-node 1.30.0, this
# directory's package-lock.json; installed here with npm ci when missing, as
# scripts/install_deps.sh does).
# Usage: tests/numerics/run.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)"
if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  # --ignore-scripts: the package's install script downloads extras; the CPU
  # library ships inside it.
  (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --silent)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/numerics.py" --client "$build/client/serenity-client" --work "$work"
