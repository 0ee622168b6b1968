#!/usr/bin/env bash
# Load benchmark of serenity-server on loopback (issue 6): throughput and
# latency of Plan calls and of Score batch streams at 1, 8 and 64
# concurrent clients for a DARTS cell and a RandWire stage, cache cold and
# warm.
# Usage: bench/load.sh [BUILD_DIR]   (default build; the server runs with
# --threads $(nproc)). Prints one line per run.
# The models come from ../shared/bench/models: the benchmark models placed
# beside this checkout, not part of the repository (SERENITY_MODELS_DIR
# points elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
source bench/start_server.sh
load="$BUILD_DIR/bench/serenity-load --server $address"

cell="$MODELS/darts_v2_cifar10_normal_cell.onnx"
stage="$MODELS/randwire_ws_cifar10_stage1.onnx"
for model in "$cell" "$stage"; do
  name=$(basename "$model" .onnx)
  cold_requests=$([ "$model" = "$cell" ] && echo 400 || echo 40)
  for mode in plan score; do
    for clients in 1 8 64; do
      cold=$((cold_requests > clients ? cold_requests : clients))
      echo "$name $mode cold: $($load --model "$model" --mode $mode --clients $clients --requests $cold --cache cold)"
      echo "$name $mode warm: $($load --model "$model" --mode $mode --clients $clients --requests 20000 --cache warm)"
    done
  done
done
