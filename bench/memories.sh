#!/usr/bin/env bash
# Several memories (issue 18, docs/memories.md) on the shared models: each
# model is planned once without memories for its peak P, then with three
# memories: sram of P/4 (alignment 16), psram of P/2 and dram of 4P
# (alignment 64). Prints a markdown table: per memory the buffers it holds
# and its byte-steps as a share of the most any placement could hold there
# (byte_steps / byte_steps_bound), the share of all byte-steps each memory
# holds, and the placement's time (phase "memories").
# Usage: bench/memories.sh [SRAM_FRACTION_PERCENT]   (25)
set -euo pipefail
cd "$(dirname "$0")/.."
SRAM=${1:-25}
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | peak | buffers sram / psram / dram | sram of max | psram of max | byte-steps sram / psram / dram | ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for f in "$MODELS"/*.onnx; do
  "$CLIENT" plan "$f" --local --json --time-limit 10 >"$dir/plain.json"
  peak=$(/usr/bin/python3 -c "import json; print(json.load(open('$dir/plain.json'))['peak_bytes'])")
  sram=$((peak * SRAM / 100 / 16 * 16))
  "$CLIENT" plan "$f" --local --json --time-limit 10 --memory "sram:$sram:16" --memory "psram:$((peak / 2))" \
    --memory "dram:$((4 * peak))" >"$dir/memories.json" || { echo "| $(basename "$f" .onnx) | $peak | failed | | | | |"; continue; }
  /usr/bin/python3 - "$dir/memories.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["memories"]
total = sum(x["byte_steps"] for x in m) or 1
share = lambda x: f"{100.0 * x['byte_steps'] / x['byte_steps_bound']:.1f}%" if x["byte_steps_bound"] else "-"
counts = " / ".join(str(len(x["buffers"])) for x in m)
shares = " / ".join("%.0f%%" % (100.0 * x["byte_steps"] / total) for x in m)
print(f"| {d['model']} | {d['peak_bytes']:,} | {counts} | {share(m[0])} | {share(m[1])} | {shares} | "
      f"{d['stats']['phase_ms'].get('memories', 0):.1f} |")
PY
done
