#!/usr/bin/env bash
# Primitive selection (issue 19; docs/primitives.md) on the shared models,
# with the convolutions' alternatives from bench/make_primitives.py's cost
# model (the benchmark's assumption, not a device's measurements). For each
# model and each budget (1.0x, 1.25x and 1.5x the least peak with every op
# at its least-workspace alternative, i.e. the model as given), one run of
# --objective time --primitive-baselines gives the total time in us of:
#   - together: order and primitives chosen together, with its certificate
#     (and lower bound when not optimal);
#   - order first: the least-peak order, then the fastest primitive that
#     fits each of its steps;
#   - primitives first: the fastest primitives, downgraded until their least
#     peak fits, then that order's best primitives;
#   - fastest: every conv at its fastest alternative, then the least-peak
#     order ("fastest primitive everywhere, then schedule");
#   - file order: the model's own order with the fastest primitive that fits
#     each step ("fixed order, ILP primitives": exact for that order);
#   - summed: the summed-footprint model's optimum (every activation and
#     workspace at once, the PACT 2019 poster's); "needs N" when no choice's
#     summed footprint is within the budget (N: the least footprint);
# "does not fit" when the baseline's peak is above the budget ("none found"
# when its least-peak search stopped before finding an order that fits);
# and the time together saves against the best separate choice (order first
# or primitives first) and against the file order, where they fit.
# Prints a markdown table. The plan gets the time limit; the baselines up to
# half of it more. With LAYOUTS=1, the alternatives state layouts and
# converting between them costs (make_primitives.py --layouts); together's
# cell then adds the time spent converting ("conv. N"). With WEIGHTS=1,
# weights are counted (--count-weights, in the least peak the budgets are
# drawn from too), so the Winograd kernels' transformed weights
# (weight_bytes) are resident; together's cell then adds how many ops keep
# transformed weights ("tw. N").
# Usage: [LAYOUTS=1] [WEIGHTS=1] bench/primitives.sh [TIME_LIMIT_SECONDS] [MODEL.onnx...]   (10)
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-10}
shift || true
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
if [ $# -eq 0 ]; then set -- "$MODELS"/*.onnx; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "| model | convs | budget | together (cert) | order first | primitives first | fastest | file order | summed | saved vs separate | saved vs file order | ms |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for f in "$@"; do
  /usr/bin/python3 bench/make_primitives.py "$f" ${LAYOUTS:+--layouts} >"$dir/p.json"
  "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" ${WEIGHTS:+--count-weights} >"$dir/plain.json"
  peak=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['peak_bytes'])" "$dir/plain.json")
  for factor in 1.0 1.25 1.5; do
    budget=$(/usr/bin/python3 -c "print(int($peak * $factor))")
    "$CLIENT" plan "$f" --local --json --time-limit "$LIMIT" --objective time --budget "$budget" ${WEIGHTS:+--count-weights} \
      --primitives "$dir/p.json" --no-catalogue --primitive-baselines >"$dir/together.json"
    /usr/bin/python3 - "$dir" "$factor" <<'PY'
import json, sys
d, factor = sys.argv[1], sys.argv[2]
t = json.load(open(f"{d}/together.json"))
time, budget = t["time"], t["memory_budget_bytes"]
b = {x["name"]: x for x in time["baselines"]}
def us(x):
    if x["fits"]:
        return f"{x['time_us']:,.0f}"
    # best_found: its search found no order that fits, not a proof.
    return "does not fit" if x["certificate"] != "best_found" else "none found"
def summed(x):
    if x["summed_footprint_bytes"] > budget:
        return f"needs {x['summed_footprint_bytes'] / 2**20:,.1f} MiB"
    return f"{x['time_us']:,.0f}" + ("" if x["certificate"] == "optimal" else f" ({x['certificate']})")
def saved(others):
    fitting = [x["time_us"] for x in others if x["fits"]]
    if not t["feasible"] or not fitting:
        return "-"
    best = min(fitting)
    saved = best - time["time_us"]
    if abs(saved) < 1e-6 * best:  # the same sum, added in another order
        saved = 0.0
    return f"{saved:,.0f} ({100 * saved / best:.1f}%)"
cert = time["certificate"]
bound = "" if cert == "optimal" else f", >= {time['lower_bound_us']:,.0f}"
converting = f", conv. {time['transform_time_us']:,.0f}" if time["transform_time_us"] > 0 else ""
transformed = sum(1 for p in time["primitives"] if p["weight_bytes"] > 0)
converting += f", tw. {transformed}" if transformed > 0 else ""
together = f"{time['time_us']:,.0f} ({cert}{bound}{converting})" if t["feasible"] else f"does not fit ({cert})"
print(f"| {t['model']} | {len(time['primitives'])} | {budget:,} ({factor}x) | {together} | "
      f"{us(b['order_first'])} | {us(b['primitives_first'])} | {us(b['fastest'])} | {us(b['file_order'])} | "
      f"{summed(b['summed_footprint'])} | {saved([b['order_first'], b['primitives_first']])} | "
      f"{saved([b['file_order']])} | {t['stats']['total_ms']:.0f} |")
PY
  done
done
