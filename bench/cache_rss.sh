#!/usr/bin/env bash
# Resident memory of a server whose plan cache is full: for each --cache-mb,
# starts serenity-server, sends REQUESTS cold Plan calls of a NAS cell (a new
# cache key each) and prints the cache's own count of its bytes
# (serenity_cache_local_bytes) beside the process's VmRSS and VmHWM.
#   bench/cache_rss.sh [BUILD_DIR] [REQUESTS] [CACHE_MB...]
# The models come from ../shared/bench/models: the benchmark models placed
# beside this checkout, not part of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
REQUESTS=${2:-6000}
shift $(( $# > 2 ? 2 : $# ))
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(64 128)
MODEL=../shared/bench/models/nasnet_a_cifar10_normal_cell.onnx
printf "%-9s %-9s %14s %10s %10s\n" cache_mb requests cache_bytes rss_mb hwm_mb
for mb in "${SIZES[@]}"; do
  port_file=$(mktemp) metrics_file=$(mktemp)
  "$BUILD_DIR/server/serenity-server" --plaintext --port 0 --port-file "$port_file" --metrics-port 0 \
    --metrics-port-file "$metrics_file" --cache-mb "$mb" --max-queue 4096 2>/dev/null &
  server=$!
  for _ in $(seq 100); do [ -s "$port_file" ] && [ -s "$metrics_file" ] && break; sleep 0.1; done
  "$BUILD_DIR/bench/serenity-load" --server "127.0.0.1:$(cat "$port_file")" --model "$MODEL" --cache cold \
    --clients 2 --requests "$REQUESTS" --time-limit 1 >/dev/null
  bytes=$(curl -s "http://127.0.0.1:$(cat "$metrics_file")/metrics" | awk '/^serenity_cache_local_bytes/ {print $2}')
  rss=$(awk '/VmRSS/ {print int($2/1024)}' /proc/$server/status)
  hwm=$(awk '/VmHWM/ {print int($2/1024)}' /proc/$server/status)
  printf "%-9s %-9s %14s %10s %10s\n" "$mb" "$REQUESTS" "$bytes" "$rss" "$hwm"
  kill $server; wait $server 2>/dev/null || true
  rm -f "$port_file" "$metrics_file"
done
