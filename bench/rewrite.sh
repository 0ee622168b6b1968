#!/usr/bin/env bash
# What --rewrite (Concat -> Conv channel-wise partition, standard ONNX ops;
# issue 17) changes on the shared models: the best peak without and with
# rewriting and their certificates, the arena, Concat -> Conv sites found and
# applied, op counts, and wall time of the plan without and with (the
# client's total_ms). Prints a markdown table.
# Usage: bench/rewrite.sh [TIME_LIMIT_SECONDS] [EXTRA_FLAGS...]   (10)
# The models come from ../shared/bench/models (SERENITY_MODELS_DIR points
# elsewhere): the benchmark models placed
# beside this checkout, not part of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | peak without | cert | peak with | cert | arena with | sites found / applied | ops before -> after | ms without | ms with |"
echo "|---|---:|---|---:|---|---:|---:|---:|---:|---:|"
for f in "$MODELS"/*.onnx; do
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" "$@" >"$dir/without.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" --rewrite "$@" >"$dir/with.json"
  python3 - "$dir/without.json" "$dir/with.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); r = b["rewrite"]
print(f"| {a['model']} | {a['peak_bytes']:,} | {a['certificate']} | {b['peak_bytes']:,} | {b['certificate']} | "
      f"{b['arena']['size_bytes']:,} | {r['sites_found']} / {r['sites_applied']} | {r['ops_before']} -> {r['ops_after']} | "
      f"{a['stats']['total_ms']:.0f} | {b['stats']['total_ms']:.0f} |")
PY
done
