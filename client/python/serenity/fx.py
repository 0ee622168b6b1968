"""serenity.from_torch: a serenity.v1.Graph from a torch.fx trace, without ONNX export.

The module is traced with torch.fx.symbolic_trace and run once on
`example_inputs` (ShapeProp) so that every tensor has its shape and dtype.
Each call_module / call_function / call_method node that makes tensors
becomes an op; placeholders are graph inputs; module parameters and
get_attr constants are weight tensors (Graph.Tensor.is_weight), as an ONNX
export's initializers are. Op types follow ONNX names where one matches
(Conv, Relu, Concat, Add, ...), so that the memory model's switches
(alias_views, in_place, concat_in_place) treat them as they treat the ONNX
path's ops; other ops keep their torch name.

Where the ONNX path differs: torch.onnx.export folds BatchNormalization
into the preceding convolution in eval mode and may add Shape/Gather/
Unsqueeze ops around reshapes, and in-place modules (ReLU(inplace=True))
are one tensor in fx but two in ONNX. On networks without those, both
paths give the same ops, tensors and peak (tests/test_torch.py).
"""

import operator

from .v1 import graph_pb2

_MODULE_TYPES = {
    "Conv1d": "Conv", "Conv2d": "Conv", "Conv3d": "Conv", "ConvTranspose2d": "ConvTranspose",
    "BatchNorm1d": "BatchNormalization", "BatchNorm2d": "BatchNormalization", "ReLU": "Relu", "ReLU6": "Clip",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "GELU": "Gelu", "SiLU": "Mul", "Hardswish": "HardSwish",
    "Hardsigmoid": "HardSigmoid", "LeakyReLU": "LeakyRelu", "Linear": "Gemm", "MaxPool2d": "MaxPool",
    "AvgPool2d": "AveragePool", "AdaptiveAvgPool2d": "GlobalAveragePool", "Dropout": "Identity",
    "Identity": "Identity", "Flatten": "Flatten", "Softmax": "Softmax", "LayerNorm": "LayerNormalization",
}
_FUNCTION_TYPES = {
    "cat": "Concat", "concat": "Concat", "add": "Add", "iadd": "Add", "mul": "Mul", "imul": "Mul",
    "sub": "Sub", "truediv": "Div", "div": "Div", "matmul": "MatMul", "relu": "Relu", "sigmoid": "Sigmoid",
    "tanh": "Tanh", "flatten": "Flatten", "reshape": "Reshape", "view": "Reshape", "squeeze": "Squeeze",
    "unsqueeze": "Unsqueeze", "transpose": "Transpose", "permute": "Transpose", "softmax": "Softmax",
    "max_pool2d": "MaxPool", "avg_pool2d": "AveragePool", "adaptive_avg_pool2d": "GlobalAveragePool",
    "conv2d": "Conv", "linear": "Gemm", "contiguous": "Identity", "clone": "Identity", "mean": "ReduceMean",
    "sum": "ReduceSum",
}


def _onnx_dtype(torch, dtype):
    table = {torch.float32: 1, torch.uint8: 2, torch.int8: 3, torch.int16: 5, torch.int32: 6, torch.int64: 7,
             torch.bool: 9, torch.float16: 10, torch.float64: 11, torch.bfloat16: 16}
    if dtype not in table:
        raise ValueError(f"dtype {dtype} has no ONNX equivalent")
    return table[dtype]


def _metas(node):
    """The node's output tensors' metadata: a list (empty for non-tensors)."""
    meta = node.meta.get("tensor_meta")
    if meta is None:
        return []
    if hasattr(meta, "shape"):  # one TensorMetadata (itself a NamedTuple)
        return [meta]
    if isinstance(meta, (list, tuple)):
        return [m if hasattr(m, "shape") else None for m in meta]
    return [meta]


def _op_type(node, modules):
    if node.op == "call_module":
        name = type(modules[node.target]).__name__
        return _MODULE_TYPES.get(name, name)
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    if target is operator.getitem:
        return "Slice"
    return _FUNCTION_TYPES.get(name, name)


def from_torch(module, example_inputs, name=None):
    """A serenity.v1.Graph of `module` (a torch.nn.Module) run on `example_inputs` (a tensor or a tuple
    of tensors). The graph's name is `name` or the module's class name. ValueError when the module
    cannot be traced with torch.fx (data-dependent control flow) or its outputs are not tensors."""
    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    try:
        traced = torch.fx.symbolic_trace(module)
    except Exception as error:  # torch.fx raises TraceError and plain Python errors
        raise ValueError(f"torch.fx cannot trace {type(module).__name__}: {error}") from None
    try:
        with torch.no_grad():
            ShapeProp(traced).propagate(*example_inputs)
    except Exception as error:  # whatever the module raises on these inputs
        raise ValueError(f"{type(module).__name__} cannot run on the example inputs: {error}") from None
    modules = dict(traced.named_modules())
    graph = graph_pb2.Graph(name=name or type(module).__name__)
    tensors = {}  # fx node name -> list of tensor names (one per output)
    declared = set()

    def declare(tensor_name, meta, is_weight=False):
        if tensor_name in declared:
            return
        declared.add(tensor_name)
        graph.tensors.add(name=tensor_name, shape=list(meta.shape), dtype=_onnx_dtype(torch, meta.dtype),
                          is_weight=is_weight)

    def inputs_of(node):
        names = []
        for arg in node.all_input_nodes:
            for t in tensors.get(arg.name, []):
                if t is not None and t not in names:
                    names.append(t)
        return names

    for node in traced.graph.nodes:
        metas = _metas(node)
        if node.op == "placeholder":
            if metas:
                declare(node.name, metas[0])
                graph.inputs.append(node.name)
                tensors[node.name] = [node.name]
        elif node.op == "get_attr":
            if metas:
                declare(node.name, metas[0], is_weight=True)
                tensors[node.name] = [node.name]
        elif node.op == "output":
            for arg in node.all_input_nodes:
                for t in tensors.get(arg.name, []):
                    if t is not None and t not in graph.outputs:
                        graph.outputs.append(t)
        elif node.target is operator.getitem and node.args and node.args[0].name in tensors \
                and len(tensors[node.args[0].name]) > 1:
            # An element of a multi-output op: that op's output, no op of its own.
            tensors[node.name] = [tensors[node.args[0].name][node.args[1]]]
        elif metas:
            outs = []
            for i, meta in enumerate(metas):
                if meta is None:
                    outs.append(None)
                    continue
                out = node.name if len(metas) == 1 else f"{node.name}.{i}"
                declare(out, meta)
                outs.append(out)
            ins = inputs_of(node)
            if node.op == "call_module":
                for pname, param in modules[node.target].named_parameters(recurse=False):
                    wname = f"{node.target}.{pname}"
                    declare(wname, param, is_weight=True)
                    ins.append(wname)
            graph.ops.add(name=node.name, type=_op_type(node, modules), inputs=ins,
                          outputs=[o for o in outs if o is not None])
            tensors[node.name] = outs
    if not graph.outputs:
        raise ValueError(f"{type(module).__name__} returns no tensors")
    return graph
