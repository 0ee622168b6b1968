"""Generated models for numerics.py beyond Concat -> Conv read directly: a
Concat reaching its Convs through per-channel ops (BatchNormalization,
Relu, Mul by constants, pools, a spatial Slice), read by two Convs, or by a
depthwise Conv (the kernel-wise partition), and a sum of four tensors made
in another order than written (add_order).

Every case reads one input "in" [1, 2, 12, 12]; weights are random float32
scaled by 1/sqrt(fan_in), so activations stay O(1) and a float
reassociation stays far inside the comparison's tolerance. Each is built so
that the rewrite lowers the best peak (wide Concat inputs, narrow outputs),
or the planner would rightly leave it alone.

CASES: name -> (build(rng) -> ModelProto, expected: the forms of the Convs
split (ConvSplit.form, standard form), or ["add_order"]; whether the
accumulate form applies (group-1 Convs only)).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_DIMS = [1, 2, 12, 12]


class Builder:
    """A graph in the making: nodes in the order added, initializers."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.count = 0

    def tensor(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name, shape, fan_in):
        data = self.rng.standard_normal(shape) / np.sqrt(fan_in)
        return self.tensor(name, data.astype(np.float32))

    def node(self, op, inputs, name=None, **attrs):
        self.count += 1
        name = name or f"{op.lower()}{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def conv(self, x, cin, cout, kernel=1, group=1, stride=1, pad=0, bias=False, name=None):
        name = name or f"conv{self.count + 1}"
        inputs = [x, self.weight(f"{name}.w", [cout, cin // group, kernel, kernel], cin // group * kernel * kernel)]
        if bias:
            inputs.append(self.weight(f"{name}.b", [cout], 1))
        return self.node("Conv", inputs, name=name, group=group, kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[pad] * 4)

    def branches(self, channels, relu=False):
        """in -> one 1x1 Conv per entry (channels[i] outputs), each a Concat input."""
        xs = []
        for i, n in enumerate(channels):
            x = self.conv("in", INPUT_DIMS[1], n, name=f"branch{i}")
            xs.append(self.node("Relu", [x]) if relu else x)
        return xs

    def model(self, outputs):
        graph = helper.make_graph(self.nodes, "case",
                                  [helper.make_tensor_value_info("in", TensorProto.FLOAT, INPUT_DIMS)],
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        # State the outputs' shapes, as exporters do.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output
        del model.graph.output[:]
        model.graph.output.extend(inferred)
        assert all(d.HasField("dim_value") for o in inferred for d in o.type.tensor_type.shape.dim)
        onnx.checker.check_model(model, full_check=True)
        return model


def densenet(rng):
    """Concat -> BatchNormalization -> Relu -> 1x1 Conv (a DenseNet layer)."""
    b = Builder(rng)
    channels = [6, 9, 5, 8]
    c = sum(channels)
    cat = b.node("Concat", b.branches(channels, relu=True), name="cat", axis=1)
    scale = b.weight("bn.scale", [c], 1)
    bias = b.weight("bn.bias", [c], 1)
    mean = b.weight("bn.mean", [c], 1)
    var = b.tensor("bn.var", rng.uniform(0.5, 2.0, [c]).astype(np.float32))
    bn = b.node("BatchNormalization", [cat, scale, bias, mean, var], name="bn", epsilon=1e-3)
    y = b.conv(b.node("Relu", [bn], name="relu"), c, 3, bias=True, name="conv")
    return b.model([y])


def two_convs(rng):
    """Concat -> Relu -> two Convs (a NASNet cell output read by two cells)."""
    b = Builder(rng)
    channels = [7, 4, 9]
    c = sum(channels)
    r = b.node("Relu", [b.node("Concat", b.branches(channels), name="cat", axis=1)], name="relu")
    y1 = b.conv(r, c, 3, kernel=3, pad=1, bias=True, name="conv_a")
    y2 = b.conv(r, c, 2, stride=2, name="conv_b")
    return b.model([y1, y2])


def mul_constants(rng):
    """Concat -> Mul by a [C, 1, 1] constant -> Mul by a scalar -> Conv."""
    b = Builder(rng)
    channels = [5, 8, 6]
    c = sum(channels)
    cat = b.node("Concat", b.branches(channels), name="cat", axis=1)
    m1 = b.node("Mul", [cat, b.weight("scale.c11", [c, 1, 1], 1)], name="mul_channel")
    m2 = b.node("Mul", [b.tensor("scale.scalar", np.array(0.75, dtype=np.float32)), m1], name="mul_scalar")
    return b.model([b.conv(m2, c, 3, kernel=3, pad=1, bias=True, name="conv")])


def pools(rng):
    """Concat -> MaxPool -> AveragePool (padded, count_include_pad 0) -> Conv."""
    b = Builder(rng)
    channels = [6, 5, 7]
    c = sum(channels)
    cat = b.node("Concat", b.branches(channels), name="cat", axis=1)
    mp = b.node("MaxPool", [cat], name="maxpool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    ap = b.node("AveragePool", [mp], name="avgpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                count_include_pad=0)
    return b.model([b.conv(ap, c, 2, kernel=3, pad=1, name="conv")])


def spatial_slice(rng):
    """Concat -> Slice of the spatial axes (axes constant with data) -> Conv."""
    b = Builder(rng)
    channels = [8, 6, 7]
    c = sum(channels)
    cat = b.node("Concat", b.branches(channels), name="cat", axis=1)
    consts = [b.tensor(f"slice.{n}", np.array(v, dtype=np.int64))
              for n, v in (("starts", [1, 2]), ("ends", [11, 100]), ("axes", [2, -1]), ("steps", [1, 2]))]
    s = b.node("Slice", [cat] + consts, name="slice")
    return b.model([b.conv(s, c, 3, kernel=3, bias=True, name="conv")])


def depthwise(rng):
    """Concat -> depthwise Conv, channel multiplier 2, stride 2, with bias
    (the kernel-wise partition): its output is half its input's size."""
    b = Builder(rng)
    channels = [6, 4, 8]
    c = sum(channels)
    cat = b.node("Concat", b.branches(channels), name="cat", axis=1)
    return b.model([b.conv(cat, c, 2 * c, kernel=3, group=c, stride=2, pad=1, bias=True, name="conv")])


def sum_chain(rng):
    """((a + b) + c) + d, RandWire-like: each operand made by its own branch,
    3x3 Conv -> Relu -> 3x3 Conv, whose middle tensor is 8 channels wide for
    a, b, c and 14 for d. The best plan makes d's branch first, while nothing
    else is live, so the operands come in another order than written; adding
    each as it is made, ((d + a) + b) + c, frees it early (add_order)."""
    b = Builder(rng)
    operands = []
    for name, width in (("a", 8), ("b", 8), ("c", 8), ("d", 14)):
        t = b.node("Relu", [b.conv("in", INPUT_DIMS[1], width, kernel=3, pad=1, name=f"{name}.conv1")])
        operands.append(b.conv(t, width, 8, kernel=3, pad=1, bias=True, name=name))
    s = b.node("Add", operands[:2], name="add_ab")
    s = b.node("Add", [s, operands[2]], name="add_abc")
    s = b.node("Add", [s, operands[3]], name="add_abcd")
    return b.model([b.conv(s, 8, 2, name="head")])


CASES = [
    ("densenet_bn_relu", densenet, ["conv_sum"], True),
    ("nasnet_relu_two_convs", two_convs, ["conv_sum", "conv_sum"], True),
    ("mul_channel_scalar", mul_constants, ["conv_sum"], True),
    ("maxpool_avgpool", pools, ["conv_sum"], True),
    ("slice_spatial", spatial_slice, ["conv_sum"], True),
    ("depthwise_mult2", depthwise, ["kernel_wise"], False),
    ("sum_chain_randwire", sum_chain, ["add_order"], False),
]
