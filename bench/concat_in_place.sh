#!/usr/bin/env bash
# What --concat-in-place changes on the shared models: the peak of the best
# order and the arena, without and with the switch, and how many Concat slices
# the arena lays out back to back. Prints a markdown table.
# Usage: bench/concat_in_place.sh [TIME_LIMIT_SECONDS]   (10)
# The models come from ../shared/bench/models (SERENITY_MODELS_DIR points
# elsewhere): the benchmark models placed
# beside this checkout, not part of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | peak | peak, concat in place | arena | arena, concat in place | later slices | certificates |"
echo "|---|---:|---:|---:|---:|---:|---|"
for f in "$MODELS"/*.onnx; do
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" >"$dir/copy.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" --concat-in-place >"$dir/slices.json"
  python3 - "$dir/copy.json" "$dir/slices.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
slices = sum(1 for buffer in b["arena"]["buffers"] if buffer["slice_of"])
print(f"| {a['model']} | {a['peak_bytes']:,} | {b['peak_bytes']:,} | {a['arena']['size_bytes']:,} | "
      f"{b['arena']['size_bytes']:,} | {slices} | {a['certificate']} / {b['certificate']} |")
PY
done
