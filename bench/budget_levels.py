#!/usr/bin/python3
"""Tensors that move between the levels of --budgets (docs/primitives.md,
"Several budgets"), against independent plans of each budget.

For each model: its primitives from bench/make_primitives.py, the budgets
the --pareto frontier's peaks (at most four, evenly picked), then
`plan --objective time --budgets ...` tightest first and loosest first,
and `plan --objective time --budget B` per budget (independent arenas);
prints per level the tensors (rows and aliases), the moved tensors of the
shared layout and of the independent arenas, and the arena sizes.

Usage: bench/budget_levels.py BUILD_DIR MODEL.onnx...
Debian's /usr/bin/python3 with python3-onnx.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(client, *args):
    r = subprocess.run([client, "plan", *args, "--local", "--json", "--time-limit", "10"], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.splitlines()[0])


def offsets(arena):
    out = {}
    for b in arena["buffers"]:
        key = ("w/" if b["kind"] == "workspace" else "t/") + b["tensor"]
        out.setdefault(key, b["offset"])
        for a in b.get("aliases", []):
            out.setdefault("t/" + a, b["offset"])
    return out


def moved(before, after):
    a, b = offsets(before), offsets(after)
    return sum(1 for k in b if a.get(k) != b[k]) + sum(1 for k in a if k not in b)


def main():
    client = os.path.join(sys.argv[1], "client", "serenity-client")
    for model in sys.argv[2:]:
        with tempfile.NamedTemporaryFile("w", suffix=".json") as prim:
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_primitives.py"), model], stdout=prim,
                           check=True)
            prim.flush()
            extra = ["--primitives", prim.name]
            peaks = [p["peak_bytes"] for p in run(client, model, "--pareto", *extra)["time"]["pareto"]]
            if len(peaks) > 4:
                peaks = [peaks[round(i * (len(peaks) - 1) / 3)] for i in range(4)]
            for order, budgets in (("tightest first", peaks), ("loosest first", peaks[::-1])):
                levels = run(client, model, "--objective", "time", "--budgets", ",".join(map(str, budgets)),
                             *extra)["time"]["levels"]
                alone = [run(client, model, "--objective", "time", "--budget", str(b), *extra) for b in budgets]
                print(f"{os.path.basename(model)}, {order}: budgets {budgets}")
                print(f"  tensors {[len(offsets(l['arena'])) for l in levels]}"
                      f"; moved {[len(l['moved_tensors']) for l in levels[1:]]}"
                      f", independent arenas {[moved(alone[k - 1]['arena'], alone[k]['arena']) for k in range(1, len(alone))]}")
                print(f"  arena bytes {[l['arena']['size_bytes'] for l in levels]}"
                      f", independent {[a['arena']['size_bytes'] for a in alone]}")


if __name__ == "__main__":
    main()
