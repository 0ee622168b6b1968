"""Fixtures: the package under test, a real serenity-server on loopback, small models.

Run through CTest (client/python/run_tests.sh installs the package into the
build tree first), or by hand:
  SERENITY_BUILD_DIR=build PYTHONPATH=<installed package> /usr/bin/python3 -m pytest client/python/tests
"""

import os
import subprocess
import tempfile
import time

import pytest

from serenity.v1 import graph_pb2

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.abspath(os.environ.get("SERENITY_BUILD_DIR", os.path.join(REPO, "build")))


def binary(name):
    path = os.path.join(BUILD, "server" if name == "serenity-server" else "client", name)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not built")
    return path


class Server:
    """serenity-server as a child process on a free loopback port."""

    def __init__(self, *args):
        self.dir = tempfile.TemporaryDirectory(prefix="serenity-pytest-")
        port_file = os.path.join(self.dir.name, "port")
        self.log = open(os.path.join(self.dir.name, "server.log"), "w")
        self.process = subprocess.Popen([binary("serenity-server"), "--plaintext", "--port", "0", "--port-file",
                                         port_file, *args], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.process.poll() is not None:
                raise RuntimeError(f"serenity-server exited: {open(self.log.name).read()}")
            time.sleep(0.05)
        self.port = int(open(port_file).read().strip())
        self.address = f"127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


def chain_graph(name="chain", widths=(4, 16, 8, 2)):
    """A Graph: input -> op0 -> op1 -> ... with the given tensor sizes in floats."""
    g = graph_pb2.Graph(name=name)
    tensors = [f"t{i}" for i in range(len(widths))]
    for t, w in zip(tensors, widths):
        g.tensors.add(name=t, shape=[w])
    for i in range(len(widths) - 1):
        g.ops.add(name=f"op{i}", type="Relu", inputs=[tensors[i]], outputs=[tensors[i + 1]])
    g.inputs.append(tensors[0])
    g.outputs.append(tensors[-1])
    return g


def diamond_graph(name="diamond", branches=3, big=1000, small=10):
    """Branches that each make a big tensor and reduce it: order matters for the peak."""
    g = graph_pb2.Graph(name=name)
    g.tensors.add(name="x", shape=[small])
    outs = []
    for b in range(branches):
        g.tensors.add(name=f"big{b}", shape=[big])
        g.tensors.add(name=f"red{b}", shape=[small])
        g.ops.add(name=f"expand{b}", type="Conv", inputs=["x"], outputs=[f"big{b}"])
        g.ops.add(name=f"reduce{b}", type="Conv", inputs=[f"big{b}"], outputs=[f"red{b}"])
        outs.append(f"red{b}")
    g.tensors.add(name="y", shape=[small * branches])
    g.ops.add(name="concat", type="Concat", inputs=outs, outputs=["y"])
    g.inputs.append("x")
    g.outputs.append("y")
    return g


def onnx_model(name="cell", big_weights=False, channels=8, size=16):
    """An ONNX model (conv branches concatenated) with real initializer data."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    nodes, inits = [], []
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])
    outs = []
    for b in range(3):
        w = numpy_helper.from_array(np.zeros((channels, channels, 1, 1), np.float32), f"w{b}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", ["x", f"w{b}"], [f"c{b}"], name=f"conv{b}"))
        nodes.append(helper.make_node("Relu", [f"c{b}"], [f"r{b}"], name=f"relu{b}"))
        outs.append(f"r{b}")
    nodes.append(helper.make_node("Concat", outs, ["y"], name="concat", axis=1))
    out_name, out_shape = "y", [1, 3 * channels, size, size]
    if big_weights:
        # An 88 MB convolution weight (4096 x 24 x 15 x 15 floats, zeros): more than the server's
        # 64 MB request limit unless the client strips it.
        w = numpy_helper.from_array(np.zeros((4096, 3 * channels, 15, 15), np.float32), "big_w")
        inits.append(w)
        nodes.append(helper.make_node("Conv", ["y", "big_w"], ["z"], name="conv_big", pads=[7, 7, 7, 7]))
        out_name, out_shape = "z", [1, 4096, size, size]
    y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)
    graph = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model


def branches_model(name="branches", branches=4, wide=16, out=2):
    """An ONNX model whose Concat -> Conv rewrite lowers the peak: `branches` Convs widen a 1-channel input
    to `wide` channels each, a Concat joins them, a Conv ("reduce") takes them down to `out` channels."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    nodes, inits, xs = [], [], []
    for b in range(branches):
        inits.append(numpy_helper.from_array(np.ones((wide, 1, 1, 1), np.float32), f"b{b}"))
        nodes.append(helper.make_node("Conv", ["in", f"b{b}"], [f"x{b}"], name=f"branch{b}"))
        xs.append(f"x{b}")
    inits.append(numpy_helper.from_array(np.ones((out, branches * wide, 1, 1), np.float32), "w"))
    nodes.append(helper.make_node("Concat", xs, ["c"], name="cat", axis=1))
    nodes.append(helper.make_node("Conv", ["c", "w"], ["y"], name="reduce"))
    x = helper.make_tensor_value_info("in", TensorProto.FLOAT, [1, 1, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out, 8, 8])
    graph = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
