#!/usr/bin/env python3
"""Writes RandWire-style stages (Xie et al. 2019) as serenity.v1.Graph text
files, for checking the scheduler on graphs it was not tuned on: other seeds,
widths and node counts than the shared models.

Each stage is a Watts-Strogatz WS(k, p) graph of N nodes oriented from lower
to higher index. A node sums its predecessors' outputs with learned weights
(one Mul per input, a chain of Adds), then runs Relu and a separable
convolution (depthwise, then pointwise). Nodes without predecessors read
Relu(input) with stride 2; the stage output is the mean of the nodes without
successors. This mirrors the structure of ../shared/bench/models/randwire_*
(the benchmark models placed beside this checkout, not part of the
repository; activations only: weights are not needed to schedule).

  bench/make_randwire.py OUT_DIR [--seeds 1,2,3] [--nodes 32] [--channels 78]
                         [--size 32] [--k 4] [--p 0.75]

Uses only the standard library.
"""
import argparse
import os
import random


def watts_strogatz_dag(n, k, p, rng):
    """Edges (u, v) with u < v of a WS(k, p) ring lattice after rewiring."""
    edges = set()
    for i in range(n):
        for j in range(1, k // 2 + 1):
            edges.add((i, (i + j) % n))
    rewired = set()
    for (u, v) in sorted(edges):
        if rng.random() < p:
            choices = [w for w in range(n) if w != u and (u, w) not in rewired and (w, u) not in rewired]
            if choices:
                v = rng.choice(choices)
        if (v, u) not in rewired:
            rewired.add((u, v))
    return sorted({(min(u, v), max(u, v)) for (u, v) in rewired if u != v})


def stage_graph(name, n, k, p, channels, size, seed):
    rng = random.Random(seed)
    edges = watts_strogatz_dag(n, k, p, rng)
    preds = {v: [] for v in range(n)}
    succs = {v: [] for v in range(n)}
    for u, v in edges:
        preds[v].append(u)
        succs[u].append(v)
    half = size // 2
    tensors, ops = {}, []

    def tensor(t, shape):
        tensors[t] = shape

    def op(op_name, op_type, inputs, output, shape):
        tensor(output, shape)
        ops.append((op_name, op_type, inputs, [output]))

    full = [1, channels, size, size]
    out = [1, channels, half, half]
    tensor("x", full)
    op("relu_in", "Relu", ["x"], "relu_in_out", full)
    node_out = {}
    for v in range(n):
        base = f"nodes.{v}"
        if not preds[v]:
            source = "relu_in_out"
        else:
            terms = []
            for i, u in enumerate(preds[v]):
                op(f"{base}/Mul_{i}", "Mul", [node_out[u]], f"{base}/Mul_{i}_out", out)
                terms.append(f"{base}/Mul_{i}_out")
            acc = terms[0]
            for i, term in enumerate(terms[1:]):
                op(f"{base}/Add_{i}", "Add", [acc, term], f"{base}/Add_{i}_out", out)
                acc = f"{base}/Add_{i}_out"
            op(f"{base}/Relu", "Relu", [acc], f"{base}/Relu_out", out)
            source = f"{base}/Relu_out"
        op(f"{base}/dw", "Conv", [source], f"{base}/dw_out", out)
        op(f"{base}/pw", "Conv", [f"{base}/dw_out"], f"{base}/pw_out", out)
        node_out[v] = f"{base}/pw_out"
    sinks = [node_out[v] for v in range(n) if not succs[v]]
    acc = sinks[0]
    for i, term in enumerate(sinks[1:]):
        op(f"out/Add_{i}", "Add", [acc, term], f"out/Add_{i}_out", out)
        acc = f"out/Add_{i}_out"
    op("out/Mul", "Mul", [acc], "y", out)

    lines = [f'name: "{name}"']
    for op_name, op_type, inputs, outputs in ops:
        ins = " ".join(f'inputs: "{t}"' for t in inputs)
        outs = " ".join(f'outputs: "{t}"' for t in outputs)
        lines.append(f'ops {{ name: "{op_name}" type: "{op_type}" {ins} {outs} }}')
    for t, shape in tensors.items():
        dims = " ".join(f"shape: {d}" for d in shape)
        lines.append(f'tensors {{ name: "{t}" {dims} dtype: 1 }}')
    lines.append('inputs: "x"')
    lines.append('outputs: "y"')
    return "\n".join(lines) + "\n", len(ops)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seeds", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--channels", type=int, default=78)
    parser.add_argument("--size", type=int, default=32, help="input height and width")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--p", type=float, default=0.75)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        name = f"randwire_ws_n{args.nodes}_c{args.channels}_s{args.size}_seed{seed}"
        text, count = stage_graph(name, args.nodes, args.k, args.p, args.channels, args.size, seed)
        path = os.path.join(args.out_dir, name + ".pbtxt")
        with open(path, "w") as f:
            f.write(text)
        print(f"{path}: {count} ops")


if __name__ == "__main__":
    main()
