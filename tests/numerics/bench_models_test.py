#!/usr/bin/python3
"""Tests of bench_models.py's filling of stripped models (CTest:
bench_models_py): float weights filled at random, the integer constants of
Slice and Pad derived from the stated shapes, every other integer constant
left missing, and a derived model running as the shapes say."""
import os
import sys
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_models  # noqa: E402


def stripped(name, dims, data_type=TensorProto.INT64):
    """An initializer with dims and type but no data, as the shared models'."""
    t = onnx.TensorProto(name=name, data_type=data_type, dims=dims)
    return t


def value(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def model(nodes, initializers, value_info, output):
    graph = helper.make_graph(nodes, "g", [value("x", [1, 4, 6, 6])], [output], initializers, value_info=value_info)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


class FillTest(unittest.TestCase):
    def test_slice_and_pad_constants_come_from_the_shapes(self):
        nodes = [
            helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"]),       # 6 -> 5 on axis 2
            helper.make_node("Pad", ["y", "p"], ["z"], mode="constant"),        # [1,4,5,6] -> [1,4,7,9]
            helper.make_node("Mul", ["z", "k"], ["out"]),
        ]
        inits = [stripped(n, [1]) for n in ("s", "e", "a", "st")] + [stripped("p", [8]),
                                                                       stripped("k", [1], TensorProto.FLOAT)]
        m = model(nodes, inits, [value("y", [1, 4, 5, 6]), value("z", [1, 4, 7, 9])], value("out", [1, 4, 7, 9]))
        missing, derived = bench_models.fill(m, np.random.default_rng(1))
        self.assertEqual(missing, [])
        self.assertEqual(sorted(derived), ["a", "e", "p", "s", "st"])
        got = {t.name: numpy_helper.to_array(t).tolist() for t in m.graph.initializer}
        self.assertEqual((got["s"], got["e"], got["a"], got["st"]), ([1], [6], [2], [1]))
        self.assertEqual(got["p"], [0, 0, 1, 1, 0, 0, 1, 2])
        self.assertTrue(0.5 <= got["k"][0] <= 1.5)
        # The filled model computes shapes as stated.
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
        self.assertEqual(dims["y"], [1, 4, 5, 6])
        self.assertEqual(dims["z"], [1, 4, 7, 9])

    def test_constants_the_shapes_do_not_determine_stay_missing(self):
        nodes = [
            helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]),             # two axes shrink
            helper.make_node("Reshape", ["y", "shape"], ["out"]),
        ]
        inits = [stripped(n, [1]) for n in ("s", "e", "a")] + [stripped("shape", [2])]
        m = model(nodes, inits, [value("y", [1, 4, 5, 5])], value("out", [4, 25]))
        missing, derived = bench_models.fill(m, np.random.default_rng(1))
        self.assertEqual(derived, [])
        self.assertEqual(sorted(name for name, _ in missing), ["a", "e", "s", "shape"])
        # A constant two Slices read gets a value only when both agree.
        nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]),
                 helper.make_node("Slice", ["x", "s", "e2", "a2"], ["w"])]
        inits = [stripped(n, [1]) for n in ("s", "e", "a", "e2", "a2")]
        m = model(nodes, inits, [value("y", [1, 4, 5, 6]), value("w", [1, 4, 6, 4])], value("w", [1, 4, 6, 4]))
        missing, derived = bench_models.fill(m, np.random.default_rng(1))
        self.assertIn("s", [name for name, _ in missing])  # 1 for y, 2 for w
        self.assertEqual(sorted(derived), ["a", "a2", "e", "e2"])


if __name__ == "__main__":
    unittest.main()
