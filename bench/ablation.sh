#!/usr/bin/env bash
# The ablation of the paper's Table 2: each algorithm on the shared cells and
# RandWire stages, with the same time limit. Prints a markdown table.
# Usage: bench/ablation.sh [TIME_LIMIT_SECONDS]
# The models come from ../shared/bench/models: the benchmark models placed
# beside this checkout, not part of the repository (SERENITY_MODELS_DIR
# points elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
models=(darts_v2_cifar10_normal_cell darts_v2_cifar10_reduce_cell nasnet_a_cifar10_normal_cell
        nasnet_a_cifar10_reduce_cell amoebanet_a_cifar10_normal_cell amoebanet_a_cifar10_reduce_cell
        randwire_ws_cifar10_stage1 randwire_ws_cifar10_stage2 randwire_ws_cifar10_stage3)
echo "| model | algorithm | peak | lower bound | certificate | solve ms | states |"
echo "|---|---|---:|---:|---|---:|---:|"
for m in "${models[@]}"; do
  for a in dp dp+dc dp+dc+asb auto; do
    "$CLIENT" plan "$MODELS/$m.onnx" --local --json --algorithm "$a" --time-limit "$LIMIT" | python3 -c "
import json, sys
d = json.load(sys.stdin); s = d['stats']
print(f\"| {d['model']} | $a | {d['peak_bytes']:,} | {d['lower_bound_bytes']:,} | {d['certificate']} | {s['solve_ms']:.1f} | {s['states_explored']:,} |\")"
  done
done
