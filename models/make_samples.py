#!/usr/bin/python3
"""Writes the small sample models in models/ that the README and
scripts/quickstart.sh plan, so that a fresh clone has something to run.

  /usr/bin/python3 models/make_samples.py [OUT_DIR]   (default: models/)

Needs the `onnx` Python package (Debian 12: python3-onnx); no network.
Every model is float32 at batch 1 with static shapes. Weights are
initializers with a name, a data type and dims whose data is "external" in
a file that does not exist (weights.not_shipped): the scheduler needs only
shapes, and weights are not activations, so each file stays a few KB. Load
them in Python with onnx.load(path, load_external_data=False); tools that
need weight values (onnxruntime) cannot run them.

  inception_cell.onnx  an Inception-style cell: four branches of 1x1, 3x3 and
                       pooling convolutions joined by a Concat, written in the
                       file layer by layer across the branches (as some
                       exporters order them).
  randwire_small.onnx  a RandWire-style random DAG (Xie et al. 2019): a
                       Watts-Strogatz WS(4, 0.75) graph of 12 nodes, each a
                       weighted sum of its predecessors, Relu and a 3x3 Conv.
  mobilenet_heads.onnx a MobileNetV2-style chain of inverted residual blocks
                       with SSD-style detection heads on three feature maps,
                       the heads written after the backbone in the file.

The output is deterministic (fixed seed), so rerunning the script rewrites
the same bytes.
"""
import os
import random
import sys

import onnx
from onnx import TensorProto, helper

# The RandWire generator's Watts-Strogatz DAG, shared with the benchmarks.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from make_randwire import watts_strogatz_dag  # noqa: E402

FLOAT = TensorProto.FLOAT
# Where the weights would be; never written.
WEIGHTS_FILE = "weights.not_shipped"


class Builder:
    """Collects nodes, weight initializers (dims only) and shapes."""

    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.shapes = {}

    def input(self, name, shape):
        self.shapes[name] = shape
        self.inputs.append(helper.make_tensor_value_info(name, FLOAT, shape))
        return name

    def output(self, name):
        self.outputs.append(helper.make_tensor_value_info(name, FLOAT, self.shapes[name]))

    def weight(self, name, dims):
        # Dims but no data: the importer sizes weights from their dims. The
        # data is marked external, in a file that is not shipped (as in the
        # benchmark models), so that onnx.checker, which serenity-client
        # --export-ordered runs, accepts the tensor without its values.
        t = TensorProto()
        t.name = name
        t.data_type = FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        entry = t.external_data.add()
        entry.key = "location"
        entry.value = WEIGHTS_FILE
        self.inits.append(t)
        return name

    def conv(self, name, x, out_ch, k=1, stride=1, group=1):
        n, c, h, w = self.shapes[x]
        weight = self.weight(name + ".weight", [out_ch, c // group, k, k])
        bias = self.weight(name + ".bias", [out_ch])
        pad = k // 2
        self.nodes.append(helper.make_node(
            "Conv", [x, weight, bias], [name], name=name, kernel_shape=[k, k],
            pads=[pad] * 4, strides=[stride] * 2, group=group))
        self.shapes[name] = [n, out_ch, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1]
        return name

    def unary(self, op, name, x, **attrs):
        self.nodes.append(helper.make_node(op, [x], [name], name=name, **attrs))
        self.shapes[name] = list(self.shapes[x])
        return name

    def maxpool(self, name, x, k=3, stride=1):
        n, c, h, w = self.shapes[x]
        pad = k // 2
        self.nodes.append(helper.make_node("MaxPool", [x], [name], name=name, kernel_shape=[k, k],
                                           pads=[pad] * 4, strides=[stride] * 2))
        self.shapes[name] = [n, c, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1]
        return name

    def binary(self, op, name, a, b):
        self.nodes.append(helper.make_node(op, [a, b], [name], name=name))
        self.shapes[name] = list(self.shapes[a])
        return name

    def concat(self, name, xs):
        shape = list(self.shapes[xs[0]])
        shape[1] = sum(self.shapes[x][1] for x in xs)
        self.nodes.append(helper.make_node("Concat", xs, [name], name=name, axis=1))
        self.shapes[name] = shape
        return name

    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, producer_name="serenity models/make_samples.py",
                                  opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        return model


def inception_cell():
    """Four branches over one 64-channel 32x32 input, joined by a Concat.

    Each branch widens to 128 channels and narrows again to 16 before the
    Concat. The file lists the first layer of every branch, then the
    second, then the third: in that order every branch's wide intermediate
    is live at once, while running one branch to its end before the next
    keeps one.
    """
    b = Builder("inception_cell")
    x = b.input("input", [1, 64, 32, 32])
    names = ["branch1x1", "branch3x3", "branch5x5", "branch_pool"]
    # Layer 1 of every branch: widen (the pool branch pools first).
    h = [b.conv(f"{n}/expand", x, 128) for n in names[:3]]
    h.append(b.maxpool("branch_pool/pool", x))
    # Layer 2.
    h = [b.unary("Relu", f"{n}/relu", t) for n, t in zip(names[:3], h[:3])] + [
        b.conv("branch_pool/expand", h[3], 128)]
    # Layer 3: narrow to 16 channels.
    h = [b.conv(f"{names[0]}/project", h[0], 16),
         b.conv(f"{names[1]}/conv3x3", h[1], 16, k=3),
         b.conv(f"{names[2]}/conv5x5", h[2], 16, k=5),
         b.unary("Relu", "branch_pool/relu", h[3])]
    h[3] = b.conv("branch_pool/project", h[3], 16)
    y = b.concat("concat", h)
    y = b.conv("output/proj", y, 64)
    b.output(y)
    return b.model()


def randwire_small(nodes=12, channels=32, size=16, seed=3):
    """A RandWire stage: node v = Conv3x3(Relu(sum_u w_uv * node u)).

    Nodes without predecessors read the stage input; the output is the sum
    of the nodes without successors. Nodes are written in index order.
    """
    rng = random.Random(seed)
    edges = watts_strogatz_dag(nodes, 4, 0.75, rng)
    preds = {v: [u for (u, w) in edges if w == v] for v in range(nodes)}
    succs = {u: [w for (v, w) in edges if v == u] for u in range(nodes)}
    b = Builder("randwire_small")
    x = b.input("input", [1, channels, size, size])
    out = {}
    for v in range(nodes):
        if preds[v]:
            terms = []
            for u in preds[v]:
                scale = b.weight(f"node{v}/w{u}", [1])
                terms.append(b.binary("Mul", f"node{v}/in{u}", out[u], scale))
            acc = terms[0]
            for i, t in enumerate(terms[1:], 1):
                acc = b.binary("Add", f"node{v}/sum{i}", acc, t)
        else:
            acc = x
        acc = b.unary("Relu", f"node{v}/relu", acc)
        out[v] = b.conv(f"node{v}/conv", acc, channels, k=3)
    sinks = [out[v] for v in range(nodes) if not succs[v]]
    y = sinks[0]
    for i, s in enumerate(sinks[1:], 1):
        y = b.binary("Add", f"output/sum{i}", y, s)
    b.output(y)
    return b.model()


def mobilenet_heads():
    """Inverted residual blocks (MobileNetV2: 1x1 expand x6, Relu, depthwise
    3x3, Relu, 1x1 project, a residual Add where shapes allow) at 32x32,
    16x16 and 8x8, and an SSDLite-style head (a 3x3 Conv to box and class
    channels) on the expanded tensor of each stage's last block, as SSDLite
    taps MobileNetV2's expansion layers. Widths grow 4x at each stride-2
    stage, so every stage's expanded tensor has the same size. The heads
    come last in the file, so the file order keeps the tapped tensors live
    until the end; running each head as soon as its tap exists does not.
    """
    b = Builder("mobilenet_heads")
    x = b.input("input", [1, 3, 64, 64])
    x = b.unary("Relu", "stem/relu", b.conv("stem/conv", x, 16, k=3, stride=2))
    taps = []
    stages = [(16, 1), (64, 2), (256, 2)]  # (channels, stride of the first block); two blocks each
    for stage, (ch, stride) in enumerate(stages):
        for r in range(2):
            name = f"block{stage}_{r}"
            c_in = b.shapes[x][1]
            s = stride if r == 0 else 1
            wide = b.unary("Relu", f"{name}/expand_relu", b.conv(f"{name}/expand", x, c_in * 6))
            h = b.unary("Relu", f"{name}/dw_relu",
                        b.conv(f"{name}/dw", wide, c_in * 6, k=3, stride=s, group=c_in * 6))
            h = b.conv(f"{name}/project", h, ch)
            if s == 1 and c_in == ch:
                h = b.binary("Add", f"{name}/residual", x, h)
            x = h
        taps.append(wide)
    for i, t in enumerate(taps):
        # 4 anchors x (4 box coordinates + 8 classes) per position.
        b.output(b.conv(f"head{i}/conv", t, 48, k=3))
    return b.model()


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for make in (inception_cell, randwire_small, mobilenet_heads):
        model = make()
        path = os.path.join(out_dir, make.__name__ + ".onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        print(f"{path}: {len(model.graph.node)} nodes, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
