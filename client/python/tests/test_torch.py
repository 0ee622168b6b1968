"""serenity.from_torch against the ONNX export of the same torchvision-style networks."""

import io

import pytest

import serenity

torch = pytest.importorskip("torch")
nn = torch.nn


class Basic(nn.Module):
    """A ResNet basic block without BatchNorm (the export would fold it) and with out-of-place ReLUs."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        return self.relu2(self.conv2(self.relu1(self.conv1(x))) + x)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.blocks = nn.Sequential(Basic(16), Basic(16))
        self.head_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.blocks(self.pool(self.relu(self.stem(x))))
        return self.fc(torch.flatten(self.head_pool(x), 1))


class Inception(nn.Module):
    """Four branches of different widths concatenated: the order of the branches decides the peak."""

    def __init__(self, c=8):
        super().__init__()
        self.b1 = nn.Conv2d(c, 4 * c, 1)
        self.b2a, self.b2b = nn.Conv2d(c, 12 * c, 1), nn.Conv2d(12 * c, 2 * c, 3, padding=1)
        self.b3a, self.b3b = nn.Conv2d(c, 8 * c, 1), nn.Conv2d(8 * c, 2 * c, 5, padding=2)
        self.b4 = nn.Conv2d(c, 2 * c, 1)
        self.pool = nn.MaxPool2d(3, stride=1, padding=1)

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2b(self.b2a(x)), self.b3b(self.b3a(x)), self.b4(self.pool(x))], 1)


def onnx_bytes(module, example):
    buffer = io.BytesIO()
    torch.onnx.export(module, (example,), buffer, opset_version=13, do_constant_folding=False,
                      input_names=["x"], output_names=["y"])
    return buffer.getvalue()


@pytest.fixture(scope="module")
def client(server):
    with serenity.Client(server.address, plaintext=True, timeout=60) as c:
        yield c


@pytest.mark.parametrize("make,shape", [(TinyResNet, (1, 3, 32, 32)), (Inception, (1, 8, 16, 16))])
def test_same_peak_as_the_onnx_path(client, make, shape):
    torch.manual_seed(0)
    module = make().eval()
    example = torch.randn(*shape)
    graph = serenity.from_torch(module, example)
    from_fx = client.plan(graph)
    from_onnx = client.plan(onnx_bytes(module, example), name=graph.name)
    assert from_fx.nodes == from_onnx.nodes
    assert from_fx.peak_bytes == from_onnx.peak_bytes
    assert from_fx.certificate == from_onnx.certificate == "optimal"
    assert from_fx.weight_bytes == from_onnx.weight_bytes == sum(4 * p.numel() for p in module.parameters())
    types_fx = sorted(graph.ops[i].type for i in range(len(graph.ops)))
    import onnx
    types_onnx = sorted(n.op_type for n in onnx.load_from_string(onnx_bytes(module, example)).graph.node)
    assert types_fx == types_onnx


def test_tensor_bytes_follow_traced_shapes_and_dtypes():
    module = nn.Sequential(nn.Conv2d(3, 5, 3), nn.ReLU()).eval()
    graph = serenity.from_torch(module, torch.randn(2, 3, 10, 10, dtype=torch.float32))
    sizes = {t.name: list(t.shape) for t in graph.tensors}
    assert [2, 5, 8, 8] in sizes.values()
    assert all(t.dtype == 1 for t in graph.tensors)
    half = serenity.from_torch(nn.Sequential(nn.Flatten()), torch.randn(4, 4, 2).half())
    assert {t.dtype for t in half.tensors} == {10}  # float16


def test_untraceable_module_is_a_clear_error():
    class Branchy(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(ValueError, match="cannot trace"):
        serenity.from_torch(Branchy(), torch.randn(3))


def test_module_that_fails_on_the_inputs_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot run"):
        serenity.from_torch(nn.Conv2d(3, 4, 3), torch.randn(1, 5, 8, 8))  # 5 channels, not 3
