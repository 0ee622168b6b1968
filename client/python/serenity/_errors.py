"""SerenityError: a failed call, with its gRPC status code and message."""

import grpc


class SerenityError(Exception):
    """A call the service (or the local planner) refused or could not finish.

    `code` is a grpc.StatusCode, `code_name` its name as the CLI's JSON
    writes it ("INVALID_ARGUMENT"), `message` the service's explanation."""

    def __init__(self, code, message, model=None):
        self.code = code
        self.code_name = code.name
        self.message = message
        self.model = model
        where = f"{model}: " if model else ""
        super().__init__(f"{where}{self.code_name}: {message}")


_BY_NAME = {c.name: c for c in grpc.StatusCode}
_BY_NUMBER = {c.value[0]: c for c in grpc.StatusCode}


def status_code(value):
    """grpc.StatusCode for a name ("NOT_FOUND") or a number (5)."""
    if isinstance(value, grpc.StatusCode):
        return value
    if isinstance(value, int):
        return _BY_NUMBER.get(value, grpc.StatusCode.UNKNOWN)
    return _BY_NAME.get(str(value).upper(), grpc.StatusCode.UNKNOWN)


def from_rpc_error(error, model=None):
    """SerenityError for a grpc.RpcError."""
    return SerenityError(error.code(), error.details() or "", model)


def read_error(error):
    """{code, message} for a model that could not be read before sending: NOT_FOUND for an OSError
    (a missing file), INVALID_ARGUMENT otherwise."""
    from ._records import Record
    return Record(code="NOT_FOUND" if isinstance(error, OSError) else "INVALID_ARGUMENT", message=str(error))
