#!/usr/bin/env bash
# Planning time with and without rewriting (issue 17's 2x target): each
# model planned without, with `--rewrite` and with `--rewrite
# --rewrite-form accumulate` (`serenity-client plan MODEL --local --json
# --time-limit 10`), by each client binary given, all in turn, RUNS times;
# prints per model and binary the medians of stats.total_ms and their
# ratios to the plan without rewriting, and says when a peak or arena
# differed between runs.
# Usage: bench/rewrite_time.sh [RUNS] [MODELS] [CLIENT...]
#   (defaults 15; nasnet_a_cifar10,tv_densenet121,amoebanet_a_cifar10,
#   darts_v2_cifar10,randwire_ws_cifar10_stage1; build/client/serenity-client)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-15}
MODELS=${2:-nasnet_a_cifar10,tv_densenet121,amoebanet_a_cifar10,darts_v2_cifar10,randwire_ws_cifar10_stage1}
shift 2 || shift $# || true
CLIENTS=("$@")
[ ${#CLIENTS[@]} -gt 0 ] || CLIENTS=(build/client/serenity-client)
DIR=../shared/bench/models
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for m in ${MODELS//,/ }; do
  for _ in $(seq "$RUNS"); do
    for c in "${CLIENTS[@]}"; do
      for variant in none standard accumulate; do
        case $variant in
          none) flags=() ;;
          standard) flags=(--rewrite) ;;
          accumulate) flags=(--rewrite --rewrite-form accumulate) ;;
        esac
        "$c" plan "$DIR/$m.onnx" --local --json --time-limit 10 "${flags[@]}" 2>/dev/null |
          /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sys.argv[1], sys.argv[2], sys.argv[3], d["stats"]["total_ms"], d["peak_bytes"], d["arena"]["size_bytes"])' \
            "$m" "$c" "$variant" >>"$out"
      done
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    model, client, variant, ms, peak, arena = line.split()
    runs.setdefault((model, client), {}).setdefault(variant, []).append((float(ms), peak, arena))
print("| model | client | without / standard / accumulate ms | ratio standard / accumulate |")
print("|---|---|---|---|")
for (model, client), by in runs.items():
    med = {v: statistics.median(ms for ms, _, _ in by[v]) for v in by}
    varies = [v for v in by if len({(p, a) for _, p, a in by[v]}) > 1]
    note = f" (peak or arena varied: {', '.join(varies)})" if varies else ""
    print(f"| {model} | {client} | {med['none']:.1f} / {med['standard']:.1f} / {med['accumulate']:.1f} | "
          f"{med['standard'] / med['none']:.2f}x / {med['accumulate'] / med['none']:.2f}x{note} |")
PY
