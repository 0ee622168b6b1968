#!/usr/bin/python3
"""Writes a --levels file (issue 20, nested sparse models) for an ONNX model.

Lists the model's Conv weight initializers (a Conv's second input that is an
initializer) and gives every one of them the same made-up density per level,
100%, 50%, 25% and 12.5% by default, densest first, with made-up whole-
inference times. Switch points are the ops that end each quarter of the
model's node list (file order; the plan's report gives their step in its own
order), or the ops given with --switch-after.

  /usr/bin/python3 bench/make_levels.py MODEL.onnx -o levels.json

Needs python3-onnx (Debian); reads only the graph (load_external_data=False).
"""
import argparse
import json
import sys

import onnx


def conv_weights(graph):
    initializers = {i.name for i in graph.initializer}
    names = []
    for node in graph.node:
        if node.op_type == "Conv" and len(node.input) > 1 and node.input[1] in initializers:
            if node.input[1] not in names:
                names.append(node.input[1])
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("-o", "--out", default="-", help="output file (default: standard output)")
    parser.add_argument("--densities", default="1,0.5,0.25,0.125", help="one fraction per level, densest first")
    parser.add_argument("--names", default="100%,50%,25%,12.5%", help="one name per level")
    parser.add_argument("--time-us", default="1000,650,450,350", help="made-up time of one inference per level")
    parser.add_argument("--switch-after", action="append", default=None, metavar="OP",
                        help="an op name after which to switch (repeatable); default: the end of each quarter")
    args = parser.parse_args()

    densities = [float(d) for d in args.densities.split(",")]
    names = args.names.split(",")
    times = [float(t) for t in args.time_us.split(",")]
    if not (len(densities) == len(names) == len(times)):
        sys.exit("make_levels.py: --densities, --names and --time-us need one entry per level")

    graph = onnx.load(args.model, load_external_data=False).graph
    weights = conv_weights(graph)
    if args.switch_after:
        switch_points = args.switch_after
    else:
        n = len(graph.node)
        switch_points = [graph.node[n * q // 4 - 1].name for q in (1, 2, 3)]
    levels = {
        "levels": [
            {"name": name, "density": {w: d for w in weights}, "time_us": t}
            for name, d, t in zip(names, densities, times)
        ],
        "switch_points": switch_points,
    }
    text = json.dumps(levels, indent=1) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
