#!/usr/bin/env bash
# The scheduler on RandWire stages it was not tuned on: bench/make_randwire.py
# stages with other seeds, in the shape of the shared stage 1 (78 channels at
# 32x32), planned in-process with a time limit. Prints a markdown table. (Every
# activation of a generated stage has one size, so other widths only scale all
# bytes: stage-2 and stage-3 shapes give the same orders and states.)
# Usage: bench/unseen_randwire.sh [TIME_LIMIT_SECONDS] [SEEDS] [extra serenity-client flags]
#   (defaults 10 and 1,2,3,4,5,6,7,8; e.g. `bench/unseen_randwire.sh 10 3,4,5,8 --algorithm relaxed`)
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
SEEDS=${2:-1,2,3,4,5,6,7,8}
shift 2 || shift $# || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 bench/make_randwire.py "$dir" --seeds "$SEEDS" --channels 78 --size 32 >/dev/null
echo "| graph | ops | file order | greedy | xla | serenity | lower bound | certificate | solve ms | states |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"
for f in "$dir"/*.pbtxt; do
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" "$@" >"$dir/out.json"
  python3 - "$dir/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); b = d["baselines"]; s = d["stats"]
print(f"| {d['model']} | {d['nodes']} | {b['file_order']['peak_bytes']:,} | {b['greedy']['peak_bytes']:,} | "
      f"{b['xla']['peak_bytes']:,} | {d['peak_bytes']:,} | {d['lower_bound_bytes']:,} | {d['certificate']} | "
      f"{s['solve_ms']:.0f} | {s['states_explored']:,} |")
PY
done
