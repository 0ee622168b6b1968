"""Builds the gRPC stubs from ../../proto with the system protoc.

The stubs are generated at build time (never committed) with Debian's
`protoc` and `grpc_python_plugin` (packages protobuf-compiler and
protobuf-compiler-grpc): Debian's python3-grpc-tools 1.14 cannot read
proto3 `optional`. Everything else is in pyproject.toml.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
PROTOS = ["serenity/v1/graph.proto", "serenity/v1/scheduler.proto"]


def _tool(name, package):
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"serenity: '{name}' not found; install Debian's {package} "
                         "(scripts/install_deps.sh installs it)")
    return path


class BuildWithStubs(build_py):
    """build_py that first writes serenity/v1/*_pb2*.py into the build tree."""

    def run(self):
        super().run()
        missing = [p for p in PROTOS if not os.path.exists(os.path.join(PROTO_ROOT, p))]
        if missing:
            raise SystemExit(f"serenity: {', '.join(missing)} not found under {PROTO_ROOT}; "
                             "build the package from a Serenity checkout (client/python)")
        protoc = _tool("protoc", "protobuf-compiler")
        plugin = _tool("grpc_python_plugin", "protobuf-compiler-grpc")
        out = self.build_lib
        os.makedirs(os.path.join(out, "serenity", "v1"), exist_ok=True)
        subprocess.check_call([protoc, f"-I{PROTO_ROOT}", f"--python_out={out}",
                               f"--grpc_python_out={out}",
                               f"--plugin=protoc-gen-grpc_python={plugin}", *PROTOS])


setup(cmdclass={"build_py": BuildWithStubs})
