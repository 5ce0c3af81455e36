"""`protos/` is enough for a client in any language: it ships the google/rpc protos the error
details need, and every file compiles from `protos/` and protoc's own well-known types."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import google.rpc
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.rpc import error_details_pb2, status_pb2
from grpc_tools import protoc

PROTOS = Path(__file__).resolve().parents[2] / "protos"


def test_the_google_rpc_protos_ship_unchanged() -> None:
    packaged = Path(google.rpc.__path__[0])
    for name in ("status.proto", "error_details.proto"):
        shipped = PROTOS / "google" / "rpc" / name
        assert shipped.read_bytes() == (packaged / name).read_bytes(), name


def test_every_proto_compiles_from_protos_alone_and_decodes_error_details(
        tmp_path: Path) -> None:
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    assert not (Path(str(well_known)) / "google" / "rpc").exists(), "only protoc's own types"
    files = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    out = tmp_path / "all.pb"
    code = protoc.main(["protoc", f"-I{PROTOS}", f"-I{well_known}", "--include_imports",
                        f"--descriptor_set_out={out}", *files])
    assert code == 0
    # A client built from that set alone reads the details of a refusal.
    pool = descriptor_pool.DescriptorPool()
    for proto in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(proto)
    status_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.Status"))
    info_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.ErrorInfo"))
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason="NOT_YOUR_TURN", domain="arbiter"))
    sent = status_pb2.Status(code=9, message="seat 1 may not act now", details=[detail])
    got = status_cls.FromString(sent.SerializeToString())
    info = info_cls.FromString(got.details[0].value)
    assert got.message == "seat 1 may not act now" and info.reason == "NOT_YOUR_TURN"
    assert "arbiter/bubblee/v1/bubblee.proto" in files
