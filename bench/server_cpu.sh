#!/usr/bin/env bash
# Server CPU per warm Plan call: starts serenity-server as bench/load.sh
# does, primes the cache, then reads the server's user+system CPU time from
# /proc around 20,000 warm Plan calls of the DARTS cell from 8 clients.
# Less noisy than a throughput figure when the load generator shares the
# cores. Usage: bench/server_cpu.sh [BUILD_DIR [LOAD_BUILD_DIR]]  (default
# build for both; give a second build's serenity-load to compare servers
# with the same client). Prints one line: rate and microseconds per call.
# The models come from ../shared/bench/models: the benchmark models placed
# beside this checkout, not part of the repository (SERENITY_MODELS_DIR
# points elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
LOAD_DIR=${2:-$BUILD_DIR}
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
source bench/start_server.sh
load="$LOAD_DIR/bench/serenity-load --server $address
  --model $MODELS/darts_v2_cifar10_normal_cell.onnx --cache warm"
$load --clients 8 --requests 2000 >/dev/null
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
before=$(cpu_ticks)
rate=$($load --clients 8 --requests 20000 | sed 's/.*= //; s/;.*//')
after=$(cpu_ticks)
echo "plan warm, 8 clients: $rate; server $(((after - before) * 1000000 / $(getconf CLK_TCK) / 20000)) us CPU per call"
