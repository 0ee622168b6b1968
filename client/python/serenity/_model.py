"""Models as PlanRequests: onnx.ModelProto, a path, ONNX bytes or a Graph.

ONNX weights are stripped before sending, as serenity-client does: every
initializer (and Constant) payload larger than 1 KiB is dropped; names,
types and dims are all the planner reads, and small constants (Reshape
shapes) stay. The server refuses requests over 64 MB, so an unstripped
ResNet would not even arrive.
"""

import os

from .v1 import graph_pb2, scheduler_pb2

KEPT_PAYLOAD_BYTES = 1024
# ONNX TensorProto.DataType -> bytes per element (STRING has none).
_ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16,
                  16: 2}
_PAYLOAD_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data",
                   "uint64_data", "external_data")


def _strip_tensor(tensor):
    count = 1
    for d in tensor.dims:
        count *= d
    element = _ELEMENT_BYTES.get(tensor.data_type)
    if element is not None and all(d >= 0 for d in tensor.dims) and count * element <= KEPT_PAYLOAD_BYTES:
        return
    for name in _PAYLOAD_FIELDS:
        tensor.ClearField(name)
    tensor.ClearField("data_location")


def _onnx():
    try:
        import onnx  # noqa: F401  (Debian: python3-onnx)
        return onnx
    except ImportError:
        return None


def strip_onnx(model):
    """A copy of onnx.ModelProto `model` without its weight payloads."""
    onnx = _onnx()
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    graph = stripped.graph
    for init in graph.initializer:
        _strip_tensor(init)
    for init in graph.sparse_initializer:
        _strip_tensor(init.values)
        _strip_tensor(init.indices)
    for node in graph.node:
        if node.op_type != "Constant":
            continue
        for attr in node.attribute:
            if attr.HasField("t"):
                _strip_tensor(attr.t)
            if attr.HasField("sparse_tensor"):
                _strip_tensor(attr.sparse_tensor.values)
                _strip_tensor(attr.sparse_tensor.indices)
    return stripped


def _onnx_bytes(data, what):
    onnx = _onnx()
    if onnx is None:
        return data  # sent whole: install python3-onnx to strip weights
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as error:  # protobuf's DecodeError
        raise ValueError(f"{what} is not an ONNX model: {error}") from None
    return strip_onnx(model).SerializeToString()


def _is_onnx_model(model):
    onnx = _onnx()
    return onnx is not None and isinstance(model, onnx.ModelProto)


def model_request(model, name=None):
    """A PlanRequest carrying `model`; `name` (or the file's stem, or the
    graph's name) becomes the plan's model name.

    `model`: an onnx.ModelProto; a path (str or os.PathLike) to an .onnx file,
    a serenity.v1.Graph as .pb (binary) or .pbtxt/.textproto (text); the bytes
    of an ONNX model; or a serenity.v1.Graph (e.g. from serenity.from_torch).
    TypeError for anything else, ValueError for a file that is not what its
    name says, FileNotFoundError for a missing file."""
    request = scheduler_pb2.PlanRequest()
    if isinstance(model, graph_pb2.Graph):
        request.graph.CopyFrom(model)
        request.model_name = name or model.name
    elif _is_onnx_model(model):
        request.onnx_model = strip_onnx(model).SerializeToString()
        request.model_name = name or model.graph.name
    elif isinstance(model, (bytes, bytearray, memoryview)):
        request.onnx_model = _onnx_bytes(bytes(model), "the bytes given")
        request.model_name = name or ""
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith((".pbtxt", ".textproto")):
            from google.protobuf import text_format
            try:
                text_format.Parse(data.decode("utf-8"), request.graph)
            except (text_format.ParseError, UnicodeDecodeError) as error:
                raise ValueError(f"'{path}' is not a serenity.v1.Graph in text format: {error}") from None
        elif path.endswith(".pb"):
            try:
                request.graph.ParseFromString(data)
            except Exception as error:
                raise ValueError(f"'{path}' is not a binary serenity.v1.Graph: {error}") from None
        else:
            request.onnx_model = _onnx_bytes(data, f"'{path}'")
        request.model_name = name or stem
    else:
        raise TypeError("a model is an onnx.ModelProto, a path, ONNX bytes or a serenity.v1.Graph, "
                        f"not {type(model).__name__}")
    return request


def model_label(model):
    """A short label for error messages and results: a path, a graph name."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if isinstance(model, graph_pb2.Graph):
        return model.name
    if _is_onnx_model(model):
        return model.graph.name
    return f"<{type(model).__name__}>"
