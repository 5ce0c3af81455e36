"""The toy game's protobuf module, compiled from toy.proto when it is first imported.

A real game puts its schema in protos/arbiter/<game>/v1/<game>.proto, and `make protos`
generates its module (`from arbiter.<game>.v1 import <game>_pb2 as pb`). The template compiles
its own, so that it stays out of the released protos and their breaking-change checks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

PROTO = Path(__file__).with_name("toy.proto")


def _build_module() -> Any:
    """Compile toy.proto once (cached in the temp folder) and import it."""
    from arbiter.v1 import arbiter_pb2  # noqa: F401 - registers arbiter/v1/arbiter.proto

    schema = PROTO.read_text()
    digest = hashlib.sha256(schema.encode()).hexdigest()[:12]
    out = os.path.join(tempfile.gettempdir(), f"arbiter-toy-{digest}")
    module_path = os.path.join(out, "arbiter", "toy", "v1", "toy_pb2.py")
    if not os.path.exists(module_path):
        from grpc_tools import protoc

        work = tempfile.mkdtemp(prefix="arbiter-toy-")
        os.makedirs(os.path.join(work, "src", "arbiter", "toy", "v1"))
        with open(os.path.join(work, "src", "arbiter", "toy", "v1", "toy.proto"), "w") as f:
            f.write(schema)
        os.makedirs(os.path.join(work, "out"))
        protos = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "protos")
        include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
        import google.rpc  # google/rpc/status.proto, which arbiter.proto imports

        google_protos = os.path.dirname(os.path.dirname(google.rpc.__path__[0]))
        code = protoc.main(["protoc", f"-I{os.path.join(work, 'src')}", f"-I{protos}",
                            f"-I{include}", f"-I{google_protos}",
                            f"--python_out={os.path.join(work, 'out')}",
                            "arbiter/toy/v1/toy.proto"])
        assert code == 0, "protoc failed on the toy game"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        try:
            os.rename(os.path.join(work, "out"), out)
        except OSError:
            pass  # another process got there first
    spec = importlib.util.spec_from_file_location("arbiter_toy_pb2", module_path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["arbiter_toy_pb2"] = module
    spec.loader.exec_module(module)
    return module


pb = _build_module()
