#!/usr/bin/python3
"""Writes a primitives file (docs/primitives.md) for the convolutions of an
ONNX model from a simple cost model: the benchmark's assumption, not a
measurement of any device. Serenity's built-in catalogue
(core/onnx/primitive_catalogue.h; docs/primitives.md, "The built-in
catalogue") uses exactly this Conv model (same names, times, workspaces and
rules) for requests that ask for time without --no-catalogue, and adds Gemm
and MatMul; ops this file names keep the file's alternatives, the others
(Gemm, MatMul) get the catalogue's unless --no-catalogue is given.

For each Conv (shapes by onnx shape inference; weights may be stripped),
with MACs = N * M * Ho * Wo * (C / group) * kh * kw:
  direct      MACs / 2,000 us (2 GMAC/s), no workspace;
  im2col      MACs / 8,000 us (GEMM at 8 GMAC/s), workspace the patch
              matrix of one group, N * (C / group) * kh * kw * Ho * Wo
              floats; not for 1x1 stride-1 kernels (no patch matrix needed);
  winograd23  F(2,3): 3x3, stride 1, dilation 1, group 1 only; 2.25x fewer
              multiplications than im2col, workspace the transformed input
              and output tiles, 16 * (C + M) * tiles floats with
              tiles = N * ceil(Ho / 2) * ceil(Wo / 2);
  winograd43  F(4,3): the same kernels, 4x fewer, 36 * (C + M) * tiles
              floats with tiles = N * ceil(Ho / 4) * ceil(Wo / 4).
Depthwise and other grouped convolutions get direct and im2col only; a
1x1 stride-1 kernel, direct alone (listed, so that its time counts).
Transformed weights: winograd23 and winograd43 keep the filter W
transformed (16 and 36 values for each 9): their weight_bytes is the op's
own weights (initializers and Constant outputs only it reads, not graph
outputs, sized by their own type) with W's bytes F replaced by ceil(16 F / 9) and 4 F, the
others (the bias) unchanged; left out when another node reads W too or W is
not a weight. The other alternatives keep the weights as given.

Usage: bench/make_primitives.py MODEL.onnx [--only fastest|least] [--layouts] > primitives.json
  --only fastest: each op's fastest alternative alone (the "fastest
  everywhere" baseline); --only least: the least-workspace one alone.
  --layouts: direct and im2col read and write NCHW, the Winograd kernels
  NHWC, and converting between them is a copy at 10 GB/s (100 us and a
  copy of the tensor per MiB, layout_transforms in docs/primitives.md);
  the ops that work in either layout (elementwise, BatchNormalization,
  pooling, Concat: LAYOUT_FREE below) get two alternatives of no time and
  no workspace, one per layout, so that a layout passes through them
  (Serenity compares layouts only between ops that both name one).
Debian's /usr/bin/python3 with python3-onnx.
"""

import argparse
import json
import math
import sys

import onnx
from onnx import shape_inference


# Ops that run in either layout at the same cost (--layouts).
LAYOUT_FREE = {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "Add", "BatchNormalization",
               "MaxPool", "AveragePool", "Concat"}


def dims(value_info):
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else 1 for d in shape.dim]


# Bytes an element of each ONNX data type (core/graph/dtype.cc); string 0.
DTYPE_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 8: 0, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16,
               16: 2}
INT64_MAX = 2**63 - 1


def tensor_bytes(dims, data_type):
    """The bytes the importer gives a weight, or None (no fixed size)."""
    if data_type == 8:
        return 0
    size = DTYPE_BYTES.get(data_type)
    if not size or any(d < 0 for d in dims):
        return None
    bytes_ = size * math.prod(dims)
    return bytes_ if bytes_ <= INT64_MAX else None


def constant_bytes(node):
    """The bytes of a Constant node's output (core/onnx/onnx_import.cc's
    ConstantSpec), or None when no attribute tells."""
    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            return tensor_bytes(list(a.t.dims), a.t.data_type)
        if a.name == "sparse_value" and a.HasField("sparse_tensor"):
            return tensor_bytes(list(a.sparse_tensor.dims), a.sparse_tensor.values.data_type)
        if a.name == "value_float":
            return 4
        if a.name == "value_floats":
            return 4 * len(a.floats)
        if a.name == "value_int":
            return 8
        if a.name == "value_ints":
            return 8 * len(a.ints)
        if a.name in ("value_string", "value_strings"):
            return 0
    return None


def weight_sizes(graph):
    """The bytes of every weight by name, in the importer's order (the first
    of a name counts): initializers, sparse initializers, Constant outputs."""
    weights = {}
    for init in graph.initializer:
        weights.setdefault(init.name, tensor_bytes(list(init.dims), init.data_type))
    for init in graph.sparse_initializer:
        weights.setdefault(init.values.name, tensor_bytes(list(init.dims), init.values.data_type))
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for out in node.output:
                if out and out not in weights:
                    weights[out] = constant_bytes(node)
    return weights


def winograd_filter_bytes(tile, filter_bytes):
    """A 3x3 filter's bytes transformed for F(tile, 3): (tile + 2)^2 / 9 of
    them, rounded up."""
    return -(-filter_bytes * (tile + 2) ** 2 // 9)


def set_winograd_weights(node, alts, weights, readers):
    """Gives the Winograd alternatives their weight_bytes (the op's own
    weights with W transformed); False when a number does not fit."""
    def own(name):
        return name in weights and readers.get(name) == 1

    if len(node.input) < 2 or not own(node.input[1]) or not any(a["name"].startswith("winograd") for a in alts):
        return True
    names = [name for i, name in enumerate(node.input) if own(name) and name not in node.input[:i]]
    if any(weights[name] is None for name in names):
        return False
    total = sum(weights[name] for name in names)
    filter_bytes = weights[node.input[1]]
    for a in alts:
        tile = {"winograd23": 2, "winograd43": 4}.get(a["name"])
        if tile is None:
            continue
        a["weight_bytes"] = total - filter_bytes + winograd_filter_bytes(tile, filter_bytes)
        if total > INT64_MAX or a["weight_bytes"] > INT64_MAX:
            return False
    return True


def alternatives(node, shapes):
    x, w, y = shapes.get(node.input[0]), shapes.get(node.input[1]), shapes.get(node.output[0])
    if not x or not w or not y or len(x) != 4 or len(w) != 4 or len(y) != 4:
        return []
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    group = attrs.get("group", 1)
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    n, c, _, _ = x
    m, cg, kh, kw = w
    _, _, ho, wo = y
    macs = n * m * ho * wo * cg * kh * kw
    out = [{"name": "direct", "time_us": macs / 2000.0, "workspace_bytes": 0}]
    if not (kh == 1 and kw == 1 and strides == [1, 1]):
        out.append({"name": "im2col", "time_us": macs / 8000.0, "workspace_bytes": 4 * n * cg * kh * kw * ho * wo})
    if (kh, kw) == (3, 3) and strides == [1, 1] and dilations == [1, 1] and group == 1:
        tiles2 = n * math.ceil(ho / 2) * math.ceil(wo / 2)
        tiles4 = n * math.ceil(ho / 4) * math.ceil(wo / 4)
        out.append({"name": "winograd23", "time_us": macs / (8000.0 * 2.25),
                    "workspace_bytes": 4 * 16 * (c + m) * tiles2})
        out.append({"name": "winograd43", "time_us": macs / (8000.0 * 4),
                    "workspace_bytes": 4 * 36 * (c + m) * tiles4})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--only", choices=["fastest", "least"])
    parser.add_argument("--layouts", action="store_true")
    args = parser.parse_args()
    model = shape_inference.infer_shapes(onnx.load(args.model, load_external_data=False))
    shapes = {}
    for v in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        shapes[v.name] = dims(v)
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    weights = weight_sizes(model.graph)
    readers = {}  # how many nodes read each value
    for node in model.graph.node:
        for name in set(node.input):
            readers[name] = readers.get(name, 0) + 1
    for output in model.graph.output:  # a graph output is nobody's own weight
        readers[output.name] = readers.get(output.name, 0) + 1
    ops = []
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Conv":
            continue
        alts = alternatives(node, shapes)
        if not alts or not set_winograd_weights(node, alts, weights, readers):
            continue
        if args.only == "fastest":
            alts = [min(alts, key=lambda a: (a["time_us"], a["workspace_bytes"]))]
        elif args.only == "least":
            alts = [min(alts, key=lambda a: (a["workspace_bytes"], a["time_us"]))]
        if not node.name:  # the file names ops; an unnamed node is left as it is
            print(f"node {i} ({node.op_type}) has no name: no alternatives", file=sys.stderr)
            continue
        ops.append({"op": node.name, "alternatives": alts})
    out = {"ops": ops}
    if args.layouts:
        for entry in ops:
            for a in entry["alternatives"]:
                a["layout"] = "NHWC" if a["name"].startswith("winograd") else "NCHW"
        for node in model.graph.node:
            if node.name and node.op_type in LAYOUT_FREE:
                ops.append({"op": node.name, "alternatives": [
                    {"name": "nchw", "time_us": 0, "workspace_bytes": 0, "layout": "NCHW"},
                    {"name": "nhwc", "time_us": 0, "workspace_bytes": 0, "layout": "NHWC"}]})
        copy = {"time_us_per_mb": 100.0, "workspace_bytes_per_mb": 1048576}
        out["layout_transforms"] = [{"from": "NCHW", "to": "NHWC", **copy}, {"from": "NHWC", "to": "NCHW", **copy}]
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
