#!/usr/bin/env python3
"""Writes RandWire stages (Xie et al. 2019, "Exploring Randomly Wired Neural
Networks for Image Recognition") as serenity.v1.Graph text files or as ONNX
models with stripped weights, for checking the scheduler on graphs it was not
tuned on: other seeds, generators, widths and node counts than the shared
models.

A stage is a random undirected graph of N nodes from one of the paper's three
generators, oriented from lower to higher node index (section 3.2):
  ws  Watts-Strogatz WS(k, p): a ring lattice, each node joined to its k/2
      neighbours on each side, each edge rewired with probability p (the
      generator the existing benchmarks use; edges rewired onto an edge that
      is already there are dropped, so a stage has up to N*k/2 edges);
  er  Erdos-Renyi ER(p): each pair of nodes joined with probability p;
  ba  Barabasi-Albert BA(m): m nodes without edges, then each new node joined
      to m distinct existing nodes chosen with probability proportional to
      their degree (the first new node to all m), m*(N-m) edges.
Everything but the random graph is the same for the three generators. A node
sums its predecessors' outputs with learned weights (one Mul by a sigmoid
weight per input, then a chain of Adds), then runs Relu and a separable
convolution (depthwise 3x3, then pointwise 1x1; the BatchNorm after it is
folded into the pointwise Conv, as in an inference export). Nodes without
predecessors read Relu(input) with stride 2 (the Relu shared, as the PyTorch
exporter merges it); the stage output is the mean of the nodes without
successors (a chain of Adds and a Mul by 1/count). This mirrors the structure
of ../shared/bench/models/randwire_* (the benchmark models placed beside this
checkout, not part of the repository). Only activations matter to the
schedule: the text format has no weights, and the ONNX files keep the
weights' shapes but point their data at a file "weights.stripped" that is not
written.

Shapes: the stage input is IN_CHANNELS x SIZE x SIZE (IN_CHANNELS defaults to
CHANNELS); every node output is CHANNELS x SIZE/2 x SIZE/2. The small regime
of the paper at CIFAR size (the shared stage 1): --channels 78 --size 32. The
regular regime (C = 109 or 154), its first 32-node stage (conv3): input C at
56x56, output 2C at 28x28, e.g. --channels 218 --in-channels 109 --size 56.

  bench/make_randwire.py OUT_DIR [--graph ws|er|ba] [--seeds 1,2,3]
                         [--nodes 32] [--channels 78] [--in-channels C]
                         [--size 32] [--k 4] [--p 0.75 (ws) / 0.2 (er)]
                         [--m 5] [--format pbtxt|onnx]

The text format uses only the standard library; --format onnx needs the
onnx package (Debian: python3-onnx). A seed gives the same graph on every
Python 3 (random.Random's random() and choice() are stable).
"""
import argparse
import os
import random
import sys


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


def erdos_renyi_dag(n, p, rng):
    """Edges (u, v) with u < v of an ER(p) graph: each pair with probability p."""
    return [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < p]


def barabasi_albert_dag(n, m, rng):
    """Edges (u, v) with u < v of a BA(m) graph: m*(n-m) edges, node v joined
    to m distinct earlier nodes chosen proportionally to their degree."""
    edges = []
    targets = list(range(m))  # the first new node joins all m initial nodes
    repeated = []  # each node once per edge end: sampling it is by degree
    for v in range(m, n):
        for u in targets:
            edges.append((u, v))
        repeated.extend(targets)
        repeated.extend([v] * m)
        chosen = set()
        while len(chosen) < m and v + 1 < n:
            chosen.add(rng.choice(repeated))
        targets = sorted(chosen)
    return sorted(edges)


def random_dag(graph, n, args, rng):
    if graph == "ws":
        return watts_strogatz_dag(n, args.k, args.p, rng)
    if graph == "er":
        return erdos_renyi_dag(n, args.p, rng)
    return barabasi_albert_dag(n, args.m, rng)


def width(n, edges):
    """The largest antichain of the DAG on nodes 0..n-1 with edges u < v
    (Dilworth: n minus a maximum matching of the bipartite graph of its
    transitive closure): how many RandWire nodes can be pending at once."""
    succ = {v: set() for v in range(n)}
    for u, v in sorted(edges, reverse=True):
        succ[u] |= {v} | succ[v]
    return _antichain(n, succ)


def op_width(st):
    """The largest antichain of the stage's op graph: how many ops can be
    ready or pending at once, what the search's frontier grows with."""
    index = {op[3]: i for i, op in enumerate(st.ops)}
    edges = [(index[t], i) for i, op in enumerate(st.ops) for t in op[2] if t in index]
    return width(len(st.ops), edges)


def _antichain(n, succ):
    """n minus a maximum matching of left u -> right v for v in succ[u]."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * n + 100))
    match = {}  # right node -> left node

    def augment(u, seen):
        for v in succ[u]:
            if v not in seen:
                seen.add(v)
                if v not in match or augment(match[v], seen):
                    match[v] = u
                    return True
        return False

    return n - sum(augment(u, set()) for u in range(n))


class Stage:
    """The ops and tensors of one stage, in a topological (file) order."""

    def __init__(self):
        self.tensors = {}  # name -> shape (activations only)
        self.ops = []  # (name, type, inputs, output, attrs, weights)

    def op(self, name, op_type, inputs, output, shape, attrs=None, weights=()):
        self.tensors[output] = shape
        self.ops.append((name, op_type, inputs, output, attrs or {}, list(weights)))


def stage_graph(edges, n, channels, in_channels, size):
    """Builds the stage of a DAG on nodes 0..n-1 (edges u < v)."""
    preds = {v: [] for v in range(n)}
    succs = {v: [] for v in range(n)}
    for u, v in edges:
        preds[v].append(u)
        succs[u].append(v)
    half = size // 2
    st = Stage()
    out = [1, channels, half, half]
    st.tensors["x"] = [1, in_channels, size, size]
    st.op("relu_in", "Relu", ["x"], "relu_in_out", [1, in_channels, size, size])
    node_out = {}
    for v in range(n):
        base = f"nodes.{v}"
        if not preds[v]:
            source, width, stride = "relu_in_out", in_channels, 2
        else:
            terms = []
            for i, u in enumerate(preds[v]):
                st.op(f"{base}/Mul_{i}", "Mul", [node_out[u]], f"{base}/Mul_{i}_out", out,
                      weights=[(f"{base}.w{i}", [])])
                terms.append(f"{base}/Mul_{i}_out")
            acc = terms[0]
            for i, term in enumerate(terms[1:]):
                st.op(f"{base}/Add_{i}", "Add", [acc, term], f"{base}/Add_{i}_out", out)
                acc = f"{base}/Add_{i}_out"
            st.op(f"{base}/Relu", "Relu", [acc], f"{base}/Relu_out", out)
            source, width, stride = f"{base}/Relu_out", channels, 1
        st.op(f"{base}/dw", "Conv", [source], f"{base}/dw_out", [1, width, half, half],
              attrs={"group": width, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                     "strides": [stride, stride]},
              weights=[(f"{base}.dw.weight", [width, 1, 3, 3])])
        st.op(f"{base}/pw", "Conv", [f"{base}/dw_out"], f"{base}/pw_out", out,
              attrs={"group": 1, "kernel_shape": [1, 1], "pads": [0, 0, 0, 0], "strides": [1, 1]},
              weights=[(f"{base}.pw.weight", [channels, width, 1, 1]), (f"{base}.pw.bias", [channels])])
        node_out[v] = f"{base}/pw_out"
    sinks = [node_out[v] for v in range(n) if not succs[v]]
    acc = sinks[0]
    for i, term in enumerate(sinks[1:]):
        st.op(f"out/Add_{i}", "Add", [acc, term], f"out/Add_{i}_out", out)
        acc = f"out/Add_{i}_out"
    st.op("out/Mul", "Mul", [acc], "y", out, weights=[("out.scale", [])])
    return st


def to_text(st, name):
    lines = [f'name: "{name}"']
    for op_name, op_type, inputs, output, _, _ in st.ops:
        ins = " ".join(f'inputs: "{t}"' for t in inputs)
        lines.append(f'ops {{ name: "{op_name}" type: "{op_type}" {ins} outputs: "{output}" }}')
    for t, shape in st.tensors.items():
        dims = " ".join(f"shape: {d}" for d in shape)
        lines.append(f'tensors {{ name: "{t}" {dims} dtype: 1 }}')
    lines.append('inputs: "x"')
    lines.append('outputs: "y"')
    return ("\n".join(lines) + "\n").encode()


def to_onnx(st, name):
    from onnx import TensorProto, helper

    nodes, initializers, offset = [], [], 0
    for op_name, op_type, inputs, output, attrs, weights in st.ops:
        for w_name, dims in weights:
            t = TensorProto(name=w_name, data_type=TensorProto.FLOAT, dims=dims)
            length = 4
            for d in dims:
                length *= d
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "weights.stripped"), ("offset", str(offset)),
                               ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            offset += length
            initializers.append(t)
        nodes.append(helper.make_node(op_type, inputs + [w for w, _ in weights], [output],
                                      name=op_name, **attrs))
    info = lambda t: helper.make_tensor_value_info(t, TensorProto.FLOAT, st.tensors[t])
    graph = helper.make_graph(nodes, name, [info("x")], [info("y")], initializer=initializers,
                              value_info=[info(t) for t in st.tensors if t not in ("x", "y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="bench/make_randwire.py")
    model.ir_version = 7
    return model.SerializeToString()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--graph", choices=("ws", "er", "ba"), default="ws")
    parser.add_argument("--seeds", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--channels", type=int, default=78)
    parser.add_argument("--in-channels", type=int, help="stage input channels (default: --channels)")
    parser.add_argument("--size", type=int, default=32, help="input height and width")
    parser.add_argument("--k", type=int, default=4, help="WS: lattice degree")
    parser.add_argument("--p", type=float, help="WS: rewiring probability (0.75); ER: edge probability (0.2)")
    parser.add_argument("--m", type=int, default=5, help="BA: edges per new node")
    parser.add_argument("--format", choices=("pbtxt", "onnx"), default="pbtxt")
    args = parser.parse_args()
    if args.p is None:
        args.p = 0.2 if args.graph == "er" else 0.75
    in_channels = args.in_channels or args.channels
    os.makedirs(args.out_dir, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        rng = random.Random(seed)
        edges = random_dag(args.graph, args.nodes, args, rng)
        shape = f"c{args.channels}" + (f"_in{in_channels}" if in_channels != args.channels else "")
        name = f"randwire_{args.graph}_n{args.nodes}_{shape}_s{args.size}_seed{seed}"
        st = stage_graph(edges, args.nodes, args.channels, in_channels, args.size)
        data = to_onnx(st, name) if args.format == "onnx" else to_text(st, name)
        path = os.path.join(args.out_dir, f"{name}.{args.format}")
        with open(path, "wb") as f:
            f.write(data)
        print(f"{path}: {len(st.ops)} ops, {len(edges)} edges, width {width(args.nodes, edges)}, "
              f"op width {op_width(st)}")


if __name__ == "__main__":
    main()
