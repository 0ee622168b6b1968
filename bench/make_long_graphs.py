#!/usr/bin/python3
"""Writes long graphs (issue 18) as serenity.v1.Graph text (.pbtxt).

Three families, each sized by its op count (about; --ops):

  gpt      A GPT-style decoder stack: one decoder layer (pre-LayerNorm
           attention with a KV cache and a GELU MLP, residual adds) exported
           with torch.onnx.export, shapes inferred with onnx, weights
           stripped (kept as sized weight tensors), then repeated layer after
           layer. Each layer's past K/V are graph inputs and its present K/V
           graph outputs.
  train    A forward + backward residual-MLP training graph taken from
           autograd's graph: one forward op per autograd node, one backward
           op per autograd node reading the gradient of its output and the
           tensors autograd saved for it, one weight-gradient op per
           parameter. Saved activations live from the forward to the
           backward pass.
  layered  A random layered DAG: --width ops per layer, each reading 1 to 3
           ops of the two layers before (seeded).

  /usr/bin/python3 bench/make_long_graphs.py gpt --ops 100000 -o gpt_100k.pbtxt

Needs Debian's python3-torch (1.13) and python3-onnx for gpt and train.
"""
import argparse
import random
import sys

DTYPE_BYTES = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 16: 2}


class GraphWriter:
    """Collects ops and tensors and writes them as Graph text."""

    def __init__(self, name):
        self.name = name
        self.ops = []
        self.tensors = {}
        self.inputs = []
        self.outputs = []

    def tensor(self, name, nbytes, weight=False):
        if name not in self.tensors:
            self.tensors[name] = (max(int(nbytes), 1), weight)

    def op(self, name, op_type, inputs, outputs):
        self.ops.append((name, op_type, list(inputs), list(outputs)))

    def write(self, out):
        w = out.write
        w('name: "%s"\n' % self.name)
        for name, op_type, inputs, outputs in self.ops:
            w('ops { name: "%s" type: "%s"' % (name, op_type))
            for i in inputs:
                w(' inputs: "%s"' % i)
            for o in outputs:
                w(' outputs: "%s"' % o)
            w(" }\n")
        for name, (nbytes, weight) in self.tensors.items():
            w('tensors { name: "%s" bytes: %d%s }\n' % (name, nbytes, " is_weight: true" if weight else ""))
        for i in self.inputs:
            w('inputs: "%s"\n' % i)
        for o in self.outputs:
            w('outputs: "%s"\n' % o)


def gpt_layer_onnx(width, heads, seq, past):
    """One decoder layer as an ONNX graph with inferred shapes."""
    import io

    import onnx
    import torch

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = torch.nn.LayerNorm(width)
            self.qkv = torch.nn.Linear(width, 3 * width)
            self.proj = torch.nn.Linear(width, width)
            self.ln2 = torch.nn.LayerNorm(width)
            self.fc1 = torch.nn.Linear(width, 4 * width)
            self.fc2 = torch.nn.Linear(4 * width, width)

        def forward(self, x, past_k, past_v):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
            q = q.reshape(b, t, heads, c // heads).transpose(1, 2)
            k = torch.cat([past_k, k.reshape(b, t, heads, c // heads).transpose(1, 2)], dim=2)
            v = torch.cat([past_v, v.reshape(b, t, heads, c // heads).transpose(1, 2)], dim=2)
            att = torch.softmax(q @ k.transpose(2, 3) * (1.0 / (c // heads) ** 0.5), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))
            return x, k, v

    head = width // heads
    args = (torch.zeros(1, seq, width), torch.zeros(1, heads, past, head), torch.zeros(1, heads, past, head))
    buffer = io.BytesIO()
    torch.onnx.export(Layer(), args, buffer, opset_version=13, input_names=["x", "past_k", "past_v"],
                      output_names=["y", "present_k", "present_v"])
    model = onnx.shape_inference.infer_shapes(onnx.load_from_string(buffer.getvalue()))
    return model.graph


def onnx_bytes(value_type):
    t = value_type.tensor_type
    n = DTYPE_BYTES.get(t.elem_type, 4)
    for d in t.shape.dim:
        n *= d.dim_value if d.dim_value > 0 else 1
    return n


def make_gpt(ops, width, heads, seq, past):
    layer = gpt_layer_onnx(width, heads, seq, past)
    sizes = {}
    for v in list(layer.value_info) + list(layer.input) + list(layer.output):
        sizes[v.name] = onnx_bytes(v.type)
    weights = {}
    for init in layer.initializer:
        n = DTYPE_BYTES.get(init.data_type, 4)
        for d in init.dims:
            n *= d
        weights[init.name] = n
    nodes = []
    for node in layer.node:
        if node.op_type == "Constant":  # small constants: weights, not ops
            for o in node.output:
                weights[o] = sizes.get(o, 8)
            continue
        nodes.append(node)
    depth = max(1, round(ops / len(nodes)))
    g = GraphWriter("gpt_d%d_w%d" % (depth, width))
    g.inputs.append("x")
    g.tensor("x", sizes["x"])
    current = "x"
    for i in range(depth):
        def rename(name):
            if name == "x":
                return current
            return "L%d/%s" % (i, name)
        for name in ("past_k", "past_v"):
            g.tensor(rename(name), sizes[name])
            g.inputs.append(rename(name))
        for k, (node) in enumerate(nodes):
            ins = [rename(n) for n in node.input if n]
            outs = [rename(n) for n in node.output if n]
            for n in node.input:
                if n and n in weights:
                    g.tensor(rename(n), weights[n], weight=True)
            for n in node.output:
                g.tensor(rename(n), sizes.get(n, 8))
            g.op("L%d/%s_%d" % (i, node.op_type, k), node.op_type, ins, outs)
        g.outputs += [rename("present_k"), rename("present_v")]
        current = rename("y")
    g.outputs.append(current)
    return g


def make_train(ops, width, batch):
    """Forward + backward of a residual MLP, from autograd's graph."""
    import torch

    # Each block: h = x + fc2(relu(fc1(layer_norm(x)))); 5 forward
    # ops, 5 backward ops, 1 gradient sum and 6 weight updates per block.
    per_block = 17
    blocks = max(1, ops // per_block)
    torch.manual_seed(0)
    x = torch.randn(batch, width)
    params, recorded = [], {}

    def param(*shape):
        p = torch.randn(*shape, requires_grad=True)
        params.append(p)
        return p

    def record(t, name):
        recorded[t.grad_fn] = (name, t)
        return t

    h = x
    for i in range(blocks):
        w1, b1, w2, b2 = param(width, 2 * width), param(2 * width), param(2 * width, width), param(width)
        g, beta = param(width), param(width)
        n = record(torch.nn.functional.layer_norm(h, (width,), g, beta), "B%d/ln" % i)
        a = record(torch.addmm(b1, n, w1), "B%d/fc1" % i)
        r = record(torch.relu(a), "B%d/relu" % i)
        o = record(torch.addmm(b2, r, w2), "B%d/fc2" % i)
        h = record(h + o, "B%d/add" % i)
    loss = record(record(h.pow(2), "sq").mean(), "loss")

    # Graph: forward op per autograd node, backward op per autograd node.
    out = GraphWriter("train_mlp_b%d_w%d" % (blocks, width))
    by_ptr = {x.data_ptr(): "x"}
    out.tensor("x", x.numel() * 4)
    out.inputs.append("x")
    param_name = {}
    for k, p in enumerate(params):
        param_name[p] = "P%d" % k
        by_ptr[p.data_ptr()] = "P%d" % k
        out.tensor("P%d" % k, p.numel() * 4, weight=True)

    def fwd_name(fn):
        return recorded[fn][0] if fn in recorded else None

    order, seen, stack = [], set(), [loss.grad_fn]
    while stack:  # all autograd nodes
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        order.append(fn)
        for nxt, _ in fn.next_functions:
            stack.append(nxt)
    # Forward ops, in the order they ran (record order), then any unnamed
    # intermediates (pow inside the loss) get names of their own.
    unnamed = [fn for fn in order if fn not in recorded and type(fn).__name__ != "AccumulateGrad"]
    for k, fn in enumerate(unnamed):
        recorded[fn] = ("aux%d" % k, None)
    fwd_out = {}
    for fn, (name, t) in recorded.items():
        if t is not None:
            by_ptr[t.data_ptr()] = name + ":y"
    for fn in order:
        if type(fn).__name__ == "AccumulateGrad":
            continue
        name = fwd_name(fn)
        t = recorded[fn][1]
        nbytes = t.numel() * 4 if t is not None else batch * width * 4
        fwd_out[fn] = (name + ":y", nbytes)

    def producer_tensor(nxt):
        if nxt is None:
            return None
        if type(nxt).__name__ == "AccumulateGrad":
            return param_name[nxt.variable]
        return fwd_out[nxt][0]

    def saved(fn):
        names = []
        for attr in dir(fn):
            if not attr.startswith("_saved_") or attr.startswith("_saved_raw"):
                continue
            try:
                value = getattr(fn, attr)
            except Exception:
                continue
            if isinstance(value, torch.Tensor) and value.numel() > 0:
                key = by_ptr.get(value.data_ptr())
                if key is not None and key not in names:
                    names.append(key)
        return names

    # Record order of forward ops: the insertion order of `recorded`.
    forward = [fn for fn in recorded if fn in fwd_out]
    for fn in forward:
        name, nbytes = fwd_out[fn]
        # An input that needs no gradient is the graph input x.
        ins = [producer_tensor(nxt) or "x" for nxt, _ in fn.next_functions]
        out.tensor(name, nbytes)
        out.op(fwd_name(fn) or name, type(fn).__name__.replace("Backward0", ""), ins, [name])
    # Backward ops, in reverse; the gradient of a tensor is its size.
    consumers = {}
    for f in forward:
        for nxt, _ in f.next_functions:
            if nxt is not None:
                consumers[nxt] = consumers.get(nxt, 0) + 1
    grad_of = {}
    for fn in reversed(forward):
        name, nbytes = fwd_out[fn]
        ins = []
        if fn is loss.grad_fn:
            pass
        else:
            ins.append(grad_of[fn])
        ins += [s for s in saved(fn) if s not in ins]
        if not ins:
            ins = [name]
        outs = []
        for k, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            target = producer_tensor(nxt)
            g = "d(%s)/%s.%d" % (target, fwd_name(fn), k)
            size = out.tensors[target][0]
            out.tensor(g, size)
            outs.append((nxt, g))
        # A gradient read by several backward ops is summed: each consumer
        # reads its own partial gradient; the sum is an op of its own.
        out.op("grad/" + fwd_name(fn), "Grad", ins, [g for _, g in outs])
        for nxt, g in outs:
            if type(nxt).__name__ == "AccumulateGrad":
                grad_of.setdefault(nxt, []).append(g)
            else:
                grad_of.setdefault(("partial", nxt), []).append(g)
                parts = grad_of[("partial", nxt)]
                if len(parts) == consumers[nxt]:
                    if len(parts) == 1:
                        grad_of[nxt] = parts[0]
                    else:
                        total = "d(%s)" % fwd_out[nxt][0]
                        out.tensor(total, fwd_out[nxt][1])
                        out.op("sum/" + fwd_name(nxt), "Add", parts, [total])
                        grad_of[nxt] = total
    # Weight updates: read the parameter and its gradients; the new
    # parameter is an output.
    param_grads = {}
    for key, gs in grad_of.items():
        if type(key).__name__ == "AccumulateGrad":
            param_grads[param_name[key.variable]] = gs
    for p in params:
        name = param_name[p]
        parts = param_grads.get(name, [])
        new = name + ":new"
        out.tensor(new, out.tensors[name][0])
        out.op("update/" + name, "SGD", [name] + parts, [new])
        out.outputs.append(new)
    return out


def make_layered(ops, width, seed, bytes_min, bytes_max):
    rng = random.Random(seed)
    layers = max(1, ops // width)
    g = GraphWriter("layered_w%d_l%d_s%d" % (width, layers, seed))
    g.inputs.append("in")
    g.tensor("in", bytes_max)
    prev = [["in"]]
    for layer in range(layers):
        names = []
        pool = [t for lst in prev[-2:] for t in lst]
        for k in range(width):
            name = "L%d_%d" % (layer, k)
            reads = rng.sample(pool, min(len(pool), rng.randint(1, 3)))
            g.tensor(name, rng.randint(bytes_min, bytes_max))
            g.op(name, "Op", reads, [name])
            names.append(name)
        prev.append(names)
    # Every op of the last layer is an output; ops nobody read are dead.
    g.outputs += prev[-1]
    return g


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=["gpt", "train", "layered"])
    parser.add_argument("--ops", type=int, default=10000, help="about this many ops")
    parser.add_argument("--width", type=int, default=0,
                        help="gpt: model width (256); train: MLP width (256); layered: ops per layer (8)")
    parser.add_argument("--heads", type=int, default=4, help="gpt: attention heads")
    parser.add_argument("--seq", type=int, default=16, help="gpt: new tokens per step")
    parser.add_argument("--past", type=int, default=256, help="gpt: cached tokens (KV cache length)")
    parser.add_argument("--batch", type=int, default=32, help="train: batch size")
    parser.add_argument("--seed", type=int, default=1, help="layered: random seed")
    parser.add_argument("-o", "--out", default="-", help="output file (default: standard output)")
    args = parser.parse_args()
    if args.family == "gpt":
        g = make_gpt(args.ops, args.width or 256, args.heads, args.seq, args.past)
    elif args.family == "train":
        g = make_train(args.ops, args.width or 256, args.batch)
    else:
        g = make_layered(args.ops, args.width or 8, args.seed, 1 << 10, 1 << 16)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    g.write(out)
    if out is not sys.stdout:
        out.close()
    print("%s: %d ops, %d tensors" % (g.name, len(g.ops), len(g.tensors)), file=sys.stderr)


if __name__ == "__main__":
    main()
