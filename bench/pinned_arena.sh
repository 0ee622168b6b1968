#!/usr/bin/env bash
# Pinned arena instances (issue 18, section 3): for each MiniMalloc instance,
# `serenity-client arena` packs it and writes its packing (--output), then
# bench/make_pinned_instances.py pins a fraction of the buffers (seeded) at
# that packing's offsets, so each pinned instance is feasible at the
# packing's size: the target (the lower bound for the instances we pack at
# it; for the others, our packing's size). Then `serenity-client arena`
# plans each pinned instance. Prints a markdown table.
# Usage: bench/pinned_arena.sh [INSTANCE.csv...]
#   (default ../shared/bench/arena/minimalloc/challenging_*.csv)
# Env: PINNED_FRACTION (default 0.1), PINNED_SEED (default 1),
#   PACK_TIME_LIMIT (default 0.9) for the packings, PINNED_TIME_LIMIT
#   (default 0.9) for the pinned instances, PINNED_DIR keeps the packings and
#   the pinned instances there (default: a temporary directory, removed); a
#   packing already there is used again (the packings vary from run to run
#   where several exist at the bound: keep them to plan the same family).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
FRACTION=${PINNED_FRACTION:-0.1}
SEED=${PINNED_SEED:-1}
PACK_LIMIT=${PACK_TIME_LIMIT:-0.9}
LIMIT=${PINNED_TIME_LIMIT:-0.9}
if [ $# -eq 0 ]; then set -- ../shared/bench/arena/minimalloc/challenging_*.csv; fi
if [ -n "${PINNED_DIR:-}" ]; then
  dir=$PINNED_DIR
  mkdir -p "$dir"
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
echo "| instance | buffers | pinned | lower bound | target | ours | ours / target | ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for instance in "$@"; do
  name=$(basename "$instance" .csv)
  [ -s "$dir/${name}_packing.csv" ] ||
    "$CLIENT" arena "$instance" --time-limit "$PACK_LIMIT" --output "$dir/${name}_packing.csv" >/dev/null
  /usr/bin/python3 bench/make_pinned_instances.py "$instance" "$dir/${name}_packing.csv" \
    "$dir/${name}_pinned.csv" --fraction "$FRACTION" --seed "$SEED" 2>"$dir/${name}_pinned.txt"
  target=$(sed -n 's/^target //p' "$dir/${name}_pinned.txt")
  pinned=$(sed -n 's/^pinned \([0-9]*\) of.*/\1/p' "$dir/${name}_pinned.txt")
  "$CLIENT" arena "$dir/${name}_pinned.csv" --time-limit "$LIMIT" --json >"$dir/${name}_result.json"
  /usr/bin/python3 - "$name" "$pinned" "$target" "$dir/${name}_result.json" <<'PY'
import json, sys
name, pinned, target, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
size = r["size_bytes"]
print(f"| {name} | {len(r['buffers'])} | {pinned} | {r['lower_bound_bytes']} | {target} | {size} | "
      f"{size / target:.3f} | {r['solve_ms']:.1f} |")
PY
done
