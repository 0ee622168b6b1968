#!/usr/bin/env bash
# Primitive selection (issue 19; docs/primitives.md) on the shared models,
# with the convolutions' alternatives from bench/make_primitives.py's cost
# model (the benchmark's assumption, not a device's measurements). For each
# model and each budget (1.0x, 1.25x and 1.5x the least peak with every op
# at its least-workspace alternative, i.e. the model as given), the total
# time of:
#   - together: --objective time (order and primitives chosen together),
#     with its certificate and lower bound;
#   - order first: the least-peak order, then the fastest primitive that
#     fits each of its steps (--order with that order);
#   - fastest everywhere: every conv at its fastest alternative, then the
#     least-peak order; "does not fit" when that peak exceeds the budget.
# Prints a markdown table.
# Usage: bench/primitives.sh [TIME_LIMIT_SECONDS] [MODEL.onnx...]   (10)
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
if [ $# -eq 0 ]; then set -- "$MODELS"/*.onnx; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | convs | budget | together (cert, lower bound) | order first | fastest everywhere | ms together |"
echo "|---|---:|---:|---|---:|---:|---:|"
for f in "$@"; do
  /usr/bin/python3 bench/make_primitives.py "$f" >"$dir/p.json"
  /usr/bin/python3 bench/make_primitives.py "$f" --only fastest >"$dir/fastest.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" >"$dir/plain.json"
  /usr/bin/python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1]))['order_names'], open(sys.argv[2], 'w'))" \
    "$dir/plain.json" "$dir/order.json"
  peak=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['peak_bytes'])" "$dir/plain.json")
  for factor in 1.0 1.25 1.5; do
    budget=$(/usr/bin/python3 -c "print(int($peak * $factor))")
    common=(--local --json --time-limit "$LIMIT" --objective time --budget "$budget")
    "$CLIENT" plan "$f" "${common[@]}" --primitives "$dir/p.json" >"$dir/together.json"
    "$CLIENT" plan "$f" "${common[@]}" --primitives "$dir/p.json" --order "$dir/order.json" >"$dir/order_first.json"
    "$CLIENT" plan "$f" "${common[@]}" --primitives "$dir/fastest.json" >"$dir/fastest_out.json"
    /usr/bin/python3 - "$dir" "$factor" <<'PY'
import json, sys
d, factor = sys.argv[1], sys.argv[2]
t, o, f = (json.load(open(f"{d}/{n}.json")) for n in ("together", "order_first", "fastest_out"))
def us(plan):
    return f"{plan['time']['time_us']:,.0f}" if plan["feasible"] else "does not fit"
cert = t["time"]["certificate"]
bound = "" if cert == "optimal" else f", >= {t['time']['lower_bound_us']:,.0f}"
print(f"| {t['model']} | {len(t['time']['primitives'])} | {t['memory_budget_bytes']:,} ({factor}x) | "
      f"{us(t)} ({cert}{bound}) | {us(o)} | {us(f)} | {t['stats']['total_ms']:.0f} |")
PY
  done
done
