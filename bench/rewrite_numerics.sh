#!/usr/bin/env bash
# The rewrite's numerical check (tests/numerics, issue 17) on the shared
# models: their stripped weights filled with random values
# (tests/numerics/bench_models.py says how; models whose integer constants
# were stripped cannot run and are listed as such), planned with --rewrite in
# both forms and exported with --export-ordered, the exports checked
# (onnx.checker / serenity_ops.py) and re-planned in file order, and original
# and rewritten run in ONNX Runtime (onnxruntime-node) on one random input.
# Prints a markdown table; exits 1 when a runnable model fails.
# Usage: bench/rewrite_numerics.sh [TIME_LIMIT_SECONDS] [MODEL.onnx...]   (10)
# The models come from ../shared/bench/models (SERENITY_MODELS_DIR points
# elsewhere), the client from build/ (SERENITY_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
if [ ! -d tests/numerics/node_modules/onnxruntime-node ]; then
  (cd tests/numerics && npm ci --ignore-scripts --no-audit --no-fund --silent)
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ $# -eq 0 ]; then
  set -- "$MODELS"/*.onnx
fi
/usr/bin/python3 tests/numerics/bench_models.py --client "$CLIENT" --work "$dir" --time-limit "$LIMIT" "$@"
