"""Serenity's Python client: memory-optimal operator orders for neural networks.

    import serenity
    with serenity.Client("localhost:50051", plaintext=True) as client:
        for result in client.score(["a.onnx", "b.onnx"], budget="1MiB"):
            print(result.source, result.peak_bytes, result.feasible)

Client talks to serenity-server over gRPC; Local runs the planner through
the serenity-client binary with no server. Results are Records (dicts with
attribute access) in the CLI's JSON format (docs/json-format.md);
failures raise SerenityError (score() reports them per model instead).
"""

from ._client import RETRYABLE, Client
from ._errors import SerenityError
from ._local import Local
from ._model import model_request, strip_onnx
from ._records import Record, to_record
from ._sizes import parse_size

try:  # the installed distribution's version (pyproject.toml), not a copy of it
    from importlib.metadata import version as _version
    __version__ = _version("serenity-scheduler")
except Exception:  # imported from a source tree, not installed
    __version__ = "unknown"


def from_torch(module, example_inputs, name=None):
    """A serenity.v1.Graph of `module` traced with torch.fx (see serenity.fx)."""
    from .fx import from_torch as _from_torch
    return _from_torch(module, example_inputs, name=name)


__all__ = ["Client", "Local", "Record", "SerenityError", "RETRYABLE", "from_torch", "model_request",
           "parse_size", "strip_onnx", "to_record", "__version__"]
