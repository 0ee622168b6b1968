#!/usr/bin/python3
"""Tests of serenity_ops.py (CTest: serenity_ops_py): Python's onnx 1.12
checker and serenity.ConvAccumulate, the helper's own checks, and the
conversion to standard ops, numerically against the Concat -> Conv it came
from (a small NumPy interpreter; also ONNX Runtime through run_ort.js when
this directory's node_modules has onnxruntime-node)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serenity_ops  # noqa: E402

CHANNELS = [4, 3, 2]  # x0, x1, x2
OUT = 5


def weights(rng):
    w = {f"a{i}": rng.standard_normal((c, 1, 1, 1)).astype(np.float32) for i, c in enumerate(CHANNELS)}
    w["W"] = rng.standard_normal((OUT, sum(CHANNELS), 3, 3)).astype(np.float32)
    w["B"] = rng.standard_normal((OUT,)).astype(np.float32)
    return w


def model(nodes, inits, opsets=(("", 13), ("serenity", 1))):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, OUT, 4, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8
    return m


def makers():
    return [helper.make_node("Conv", ["in", f"a{i}"], [f"x{i}"], name=f"mk{i}") for i in range(len(CHANNELS))]


def original(w):
    """in -> x0, x1, x2 -> Concat -> Conv(W, B, pads 1) -> y."""
    nodes = makers() + [
        helper.make_node("Concat", ["x0", "x1", "x2"], ["cat"], axis=1, name="cat"),
        helper.make_node("Conv", ["cat", "W", "B"], ["y"], pads=[1, 1, 1, 1], name="conv"),
    ]
    return model(nodes, w, opsets=(("", 13),))


def accumulate(w):
    """The channel-wise partition in the accumulate form: part0 = Conv(x0,
    W0, B), acc1 = ConvAccumulate(x1, W1, part0), y = ConvAccumulate(x2,
    W2, acc1)."""
    inits = {k: v for k, v in w.items() if k.startswith("a")}
    start = 0
    for i, c in enumerate(CHANNELS):
        inits[f"W{i}"] = np.ascontiguousarray(w["W"][:, start:start + c])
        start += c
    inits["B"] = w["B"]
    nodes = makers() + [
        helper.make_node("Conv", ["x0", "W0", "B"], ["part0"], pads=[1, 1, 1, 1], name="conv/part0"),
        helper.make_node("ConvAccumulate", ["x1", "W1", "part0"], ["acc1"], domain="serenity", pads=[1, 1, 1, 1],
                         name="conv/part1"),
        helper.make_node("ConvAccumulate", ["x2", "W2", "acc1"], ["y"], domain="serenity", pads=[1, 1, 1, 1],
                         name="conv/part2"),
    ]
    return model(nodes, inits)


def conv(x, w, b=None, pads=(0, 0, 0, 0)):
    """NCHW convolution, group 1, stride 1, no dilation."""
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    kh, kw = w.shape[2:]
    h, wd = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], h, wd), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def interpret(m, feeds):
    """Runs Conv (group 1, unit strides), Concat and Add nodes of `m`."""
    values = dict(feeds)
    values.update({t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer})
    for node in m.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        ins = [values[i] for i in node.input]
        assert node.domain in ("", "ai.onnx"), node.domain
        if node.op_type == "Conv":
            assert attrs.get("group", 1) == 1 and set(attrs.get("strides", [1, 1])) == {1}
            out = conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs.get("pads", [0, 0, 0, 0]))
        elif node.op_type == "Concat":
            out = np.concatenate(ins, axis=attrs["axis"])
        elif node.op_type == "Add":
            out = ins[0] + ins[1]
        else:
            raise AssertionError(node.op_type)
        values[node.output[0]] = out
    return values["y"]


class SerenityOpsTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(17)
        self.w = weights(self.rng)
        self.m = accumulate(self.w)

    def test_onnx_checker_accepts_the_accumulate_form_when_the_domain_is_imported(self):
        onnx.checker.check_model(self.m, full_check=True)
        serenity_ops.check_model(self.m)
        del self.m.opset_import[1]
        with self.assertRaises(onnx.checker.ValidationError):
            onnx.checker.check_model(self.m, full_check=True)

    def test_onnx_1_12_cannot_register_a_schema(self):
        # Why the helper checks the nodes itself: no schema, no registration.
        with self.assertRaises(onnx.defs.SchemaError):
            onnx.defs.get_schema("ConvAccumulate", 1, "serenity")
        import onnx.onnx_cpp2py_export.defs as cpp_defs
        for module in (onnx.defs, cpp_defs):
            self.assertFalse(any("register" in name.lower() for name in dir(module)), module)

    def test_helper_refuses_what_the_schema_and_the_importer_refuse(self):
        def refused(mutate, error=serenity_ops.SerenityOpError):
            m = accumulate(self.w)
            mutate(m)
            with self.assertRaises(error):
                serenity_ops.check_model(m)
            return m

        # An attribute Conv does not have: onnx's checker lets it through.
        m = refused(lambda m: m.graph.node[4].attribute.append(helper.make_attribute("bogus", 1)))
        onnx.checker.check_model(m, full_check=True)
        refused(lambda m: m.opset_import[1].__setattr__("version", 2))
        refused(lambda m: m.graph.node[5].__setattr__("op_type", "Mystery"))
        refused(lambda m: m.graph.node[5].input.__setitem__(2, "in"))  # a graph input accumulator
        refused(lambda m: m.graph.node[5].input.__setitem__(2, "W1"))  # a weight
        refused(lambda m: m.graph.output.append(helper.make_tensor_value_info("acc1", TensorProto.FLOAT, [1, OUT, 4, 4])))
        refused(lambda m: m.graph.node.append(helper.make_node("Relu", ["acc1"], ["r"])))
        refused(lambda m: m.graph.node[5].input.append("B"))
        # Conv(x2, W1) takes 3 channels, x2 has 2 (ONNX 1.12's inference
        # lets it through); a 2x2 output is not ACC's 4x4.
        refused(lambda m: m.graph.node[5].input.__setitem__(1, "W1"))
        refused(lambda m: m.graph.node[5].attribute.append(helper.make_attribute("strides", [2, 2])), Exception)

    def test_standard_form_computes_the_original_concat_conv(self):
        standard = serenity_ops.to_standard_form(self.m)
        onnx.checker.check_model(standard, full_check=True)
        self.assertFalse(any(n.domain == "serenity" for n in standard.graph.node))
        self.assertEqual([o.domain for o in standard.opset_import], [""])
        self.assertEqual([n.op_type for n in standard.graph.node][3:], ["Conv", "Conv", "Add", "Conv", "Add"])
        x = self.rng.standard_normal((1, 1, 4, 4))
        expected = interpret(original(self.w), {"in": x})
        got = interpret(standard, {"in": x})
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
        # A negative control: a slice shifted by one input channel differs.
        shifted = onnx.ModelProto()
        shifted.CopyFrom(standard)
        for t in shifted.graph.initializer:
            if t.name == "W1":
                t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(self.w["W"][:, 3:6]), "W1"))
        self.assertFalse(np.allclose(interpret(shifted, {"in": x}), expected, rtol=1e-4, atol=1e-5))

    @unittest.skipUnless(os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")) and shutil.which("node"),
                         "onnxruntime-node is not installed here (tests/numerics/run.sh installs it)")
    def test_standard_form_matches_in_onnx_runtime(self):
        with tempfile.TemporaryDirectory() as work:
            onnx.save(original(self.w), os.path.join(work, "a.onnx"))
            onnx.save(serenity_ops.to_standard_form(self.m), os.path.join(work, "b.onnx"))
            self.rng.standard_normal((1, 1, 4, 4)).astype(np.float32).tofile(os.path.join(work, "in.bin"))
            with open(os.path.join(work, "case.json"), "w") as f:
                json.dump({"a": "a.onnx", "b": "b.onnx", "rtol": 1e-4, "atol": 1e-5,
                           "inputs": {"in": {"dims": [1, 1, 4, 4], "data": "in.bin"}}}, f)
            run = subprocess.run(["node", os.path.join(HERE, "run_ort.js"), os.path.join(work, "case.json")],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


if __name__ == "__main__":
    unittest.main()
