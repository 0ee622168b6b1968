#!/usr/bin/python3
"""Serenity's own ONNX domain in Python tools: checking and converting models
that use serenity.ConvAccumulate (core/onnx/serenity_ops.h has the contract).

serenity.ConvAccumulate(X, W, ACC) -> Y, domain "serenity", version 1:
Y = ACC + Conv(X, W) with Conv's attributes (auto_pad, dilations, group,
kernel_shape, pads, strides), no bias input, X/W/ACC of one element type, Y
of ACC's type and shape and written into ACC's memory. ACC must be an
activation some node produces (not a graph input, initializer or Constant
output), read by no other node or input, and not a graph output.

Python's onnx 1.12 (Debian's python3-onnx) cannot register a schema:
onnx.defs has get_schema / has_schema / get_all_schemas only (registration
from Python arrived in later releases). Its checker, even with
full_check=True, accepts a node of a domain it has no schema for as long as
the model imports that domain (opset_import domain "serenity"), and skips it
in shape inference, so it validates nothing about the node. check_model here
runs that checker and then checks the serenity nodes as the registered C++
schema and the importer do (onnx_import.cc): op and version, inputs and
outputs, attribute names and types, the accumulator rules, and the shapes,
by shape-inferring the standard form.

ONNX Runtime cannot run the op: to_standard_form rewrites each
ConvAccumulate(X, W, ACC) -> Y into Conv(X, W) -> Y/partial and
Add(ACC, Y/partial) -> Y, which any runtime runs, for numerical checks.

Usage: serenity_ops.py check MODEL.onnx
       serenity_ops.py to-standard IN.onnx OUT.onnx
"""
import sys

import onnx
from onnx import helper

DOMAIN = "serenity"
VERSION = 1
OP = "ConvAccumulate"
# Attribute name -> AttributeProto type, as Conv's.
ATTRIBUTES = {
    "auto_pad": onnx.AttributeProto.STRING,
    "dilations": onnx.AttributeProto.INTS,
    "group": onnx.AttributeProto.INT,
    "kernel_shape": onnx.AttributeProto.INTS,
    "pads": onnx.AttributeProto.INTS,
    "strides": onnx.AttributeProto.INTS,
}
ELEMENT_TYPES = {onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}


class SerenityOpError(ValueError):
    """A serenity node that breaks the op's contract."""


def _serenity_version(model):
    for opset in model.opset_import:
        if opset.domain == DOMAIN:
            return opset.version
    return None


def check_serenity_nodes(model):
    """The node-level rules (no shapes). Raises SerenityOpError."""
    graph = model.graph
    version = _serenity_version(model)
    not_produced = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    not_produced |= {t.values.name for t in graph.sparse_initializer}
    producer = {}
    for node in graph.node:
        for out in node.output:
            if out:
                producer.setdefault(out, node)
    outputs = {v.name for v in graph.output}
    for index, node in enumerate(graph.node):
        if node.domain != DOMAIN:
            continue
        name = node.name or f"{node.op_type}_{index}"
        where = f"op '{name}' ({node.domain}.{node.op_type})"
        if node.op_type != OP:
            raise SerenityOpError(f"{where}: the serenity domain has one op, {OP} (version {VERSION})")
        if version is None:
            raise SerenityOpError(f"{where}: the model does not import domain 'serenity'")
        if version != VERSION:
            raise SerenityOpError(f"{where}: the model imports domain 'serenity' at version {version}; "
                                  f"only version {VERSION} exists")
        if len(node.input) != 3 or len(node.output) != 1 or not all(node.input) or not node.output[0]:
            raise SerenityOpError(f"{where}: takes 3 inputs (X, W, ACC) and gives 1 output")
        for attr in node.attribute:
            if attr.name not in ATTRIBUTES:
                raise SerenityOpError(f"{where}: unknown attribute '{attr.name}'")
            if attr.type != ATTRIBUTES[attr.name]:
                raise SerenityOpError(f"{where}: attribute '{attr.name}' has the wrong type")
        acc = node.input[2]
        made = producer.get(acc)
        if acc in not_produced or made is None or (made.op_type == "Constant" and made.domain in ("", "ai.onnx")):
            raise SerenityOpError(f"{where}: the accumulator '{acc}' must be an activation that a node produces")
        if acc in outputs:
            raise SerenityOpError(f"{where}: the accumulator '{acc}' is a graph output")
        for other in graph.node:
            readers = [i for i, x in enumerate(other.input) if x == acc]
            if (other is node and readers != [2]) or (other is not node and readers):
                raise SerenityOpError(f"{where}: the accumulator '{acc}' has another reader")


def to_standard_form(model):
    """A copy of `model` with every ConvAccumulate(X, W, ACC) -> Y replaced by
    Conv(X, W) -> Y/partial and Add(ACC, Y/partial) -> Y (same attributes on
    the Conv), and the serenity opset import dropped when no node uses it."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = []
    for node in out.graph.node:
        if node.domain != DOMAIN or node.op_type != OP:
            nodes.append(node)
            continue
        x, w, acc = node.input
        y = node.output[0]
        partial = f"{y}/partial"
        conv = helper.make_node("Conv", [x, w], [partial], name=f"{node.name}/conv" if node.name else "")
        conv.attribute.extend(node.attribute)
        add = helper.make_node("Add", [acc, partial], [y], name=f"{node.name}/add" if node.name else "")
        nodes.extend([conv, add])
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    if not any(n.domain == DOMAIN for n in out.graph.node):
        kept = [o for o in out.opset_import if o.domain != DOMAIN]
        del out.opset_import[:]
        out.opset_import.extend(kept)
    return out


def _shape(value_info):
    t = value_info.type.tensor_type
    return [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim], t.elem_type


def check_model(model):
    """onnx.checker.check_model(full_check=True), then the serenity nodes:
    their rules, and their shapes through the standard form's shape
    inference (strict): X's channels are W's dim 1 times group (ONNX 1.12's
    Conv inference does not check it), Conv(X, W) has ACC's shape, and X, W,
    ACC share one of Conv's element types. Raises onnx.checker.ValidationError,
    onnx.shape_inference.InferenceError or SerenityOpError."""
    onnx.checker.check_model(model, full_check=True)
    check_serenity_nodes(model)
    standard = to_standard_form(model)
    inferred = onnx.shape_inference.infer_shapes(standard, check_type=True, strict_mode=True)
    values = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.input) +
              list(inferred.graph.output)}
    types = dict(values)
    for init in inferred.graph.initializer:
        types[init.name] = helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
    for node in model.graph.node:
        if node.domain != DOMAIN:
            continue
        x, w, acc = node.input
        partial = f"{node.output[0]}/partial"
        missing = [n for n in (x, w, acc, partial) if n not in types]
        if missing:
            raise SerenityOpError(f"op '{node.name}': no inferred shape for {missing}")
        (conv_shape, _), (acc_shape, acc_type) = _shape(types[partial]), _shape(types[acc])
        elem = {_shape(types[n])[1] for n in (x, w, acc)}
        if len(elem) != 1 or acc_type not in ELEMENT_TYPES:
            raise SerenityOpError(f"op '{node.name}': X, W and ACC must share one of Conv's element types")
        (x_shape, _), (w_shape, _) = _shape(types[x]), _shape(types[w])
        group = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "group"), 1)
        if len(x_shape) < 3 or len(w_shape) != len(x_shape) or group < 1 or x_shape[1] != w_shape[1] * group or \
                w_shape[0] % group != 0:
            raise SerenityOpError(f"op '{node.name}': X {x_shape} and W {w_shape} do not make a Conv of group {group} "
                                  "(X's channels must be W's dim 1 times group, W's dim 0 a multiple of group)")
        if conv_shape != acc_shape:
            raise SerenityOpError(f"op '{node.name}': Conv(X, W) has shape {conv_shape} but ACC has {acc_shape}")


def main(argv):
    if len(argv) == 3 and argv[1] == "check":
        check_model(onnx.load(argv[2]))
        print(f"{argv[2]}: ok")
        return 0
    if len(argv) == 4 and argv[1] == "to-standard":
        standard = to_standard_form(onnx.load(argv[2]))
        onnx.checker.check_model(standard, full_check=True)
        onnx.save(standard, argv[3])
        return 0
    print(__doc__.split("Usage: ")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
