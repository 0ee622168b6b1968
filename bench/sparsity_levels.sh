#!/usr/bin/env bash
# Nested sparse models (issue 20) on the shared benchmark models: writes a
# levels file per model with bench/make_levels.py (every Conv weight at 100%,
# 50%, 25%, 12.5%, made-up times, switch points at the ends of the quarters of
# the node list), plans it in-process with --levels and prints markdown
# tables: weight bytes nested vs separate, the peak per level (activations +
# that level's CSR weights resident), and the switch-point report.
# Usage: bench/sparsity_levels.sh [MODEL_NAME...] (default: darts_v2_cifar10
# nasnet_a_cifar10 tv_mobilenet_v3_small tv_googlenet); extra client flags in
# SPARSITY_FLAGS (e.g. "--budget 4MiB").
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENT=${SERENITY_BUILD_DIR:-build}/client/serenity-client
MODELS=${SERENITY_MODELS_DIR:-../shared/bench/models}
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(darts_v2_cifar10 nasnet_a_cifar10 tv_mobilenet_v3_small tv_googlenet)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for name in "${NAMES[@]}"; do
  /usr/bin/python3 bench/make_levels.py "$MODELS/$name.onnx" -o "$dir/$name.levels.json"
  # shellcheck disable=SC2086
  "$CLIENT" plan "$MODELS/$name.onnx" --local --json --levels "$dir/$name.levels.json" ${SPARSITY_FLAGS:-} \
    >"$dir/$name.json"
done
/usr/bin/python3 - "$dir" "${NAMES[@]}" <<'PY'
import json, os, sys
d, names = sys.argv[1], sys.argv[2:]
plans = [json.load(open(os.path.join(d, n + ".json"))) for n in names]
print("| model | ops | conv weights | all weights dense | separate CSR copies | nested CSR | saving | budget | densest level within it |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for p in plans:
    r = p["sparsity"]
    levels = json.load(open(os.path.join(d, p["model"] + ".levels.json")))
    print(f"| {p['model']} | {p['nodes']} | {len(levels['levels'][0]['density'])} | {p['weight_bytes']:,} | "
          f"{r['separate_weight_bytes']:,} | {r['nested_weight_bytes']:,} | {r['nested_saving_bytes']:,} "
          f"({100 * r['nested_saving_bytes'] / r['separate_weight_bytes']:.1f}%) | "
          f"{p['memory_budget_bytes']:,} | {(r['densest_fitting_level'] or 'none') if p['memory_budget_bytes'] else '-'} |")
print()
print("| model | activation peak | level | values only | CSR | activations + CSR | fits |")
print("|---|---:|---|---:|---:|---:|---|")
for p in plans:
    r = p["sparsity"]
    for l in r["levels"]:
        fits = ("yes" if l["fits_budget"] else "no") if p["memory_budget_bytes"] else "-"
        print(f"| {p['model']} | {r['activation_peak_bytes']:,} | {l['name']} | {l['dense_weight_bytes']:,} | "
              f"{l['csr_weight_bytes']:,} | {l['peak_bytes']:,} | {fits} |")
print()
print("| model | switch after (step / ops) | live tensors | live bytes | switch | peak | time us | fits |")
print("|---|---|---:|---:|---|---:|---:|---|")
for p in plans:
    for sp in p["sparsity"]["switch_points"]:
        for s in sp["switches"]:
            fits = ("yes" if s["fits_budget"] else "no") if p["memory_budget_bytes"] else "-"
            print(f"| {p['model']} | `{sp['op']}` ({sp['step']} / {p['nodes']}) | {len(sp['live'])} | "
                  f"{sp['live_bytes']:,} | {s['from_level']} -> {s['to_level']} | {s['peak_bytes']:,} | "
                  f"{s['time_us']:.1f} | {fits} |")
PY
