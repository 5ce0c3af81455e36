"""The protos that apps call Arbiter with.

Each game's package repeats the same envelope (its `Game` service, CreateGameRequest,
ActRequest, ActResponse, LegalActions, Update, PlayRequest, PlayResponse, and the fields every
View and Event start with) around its own Command, Event, Options and View: the copies must
agree, field by field. `buf lint` holds the rules of buf.yaml, and `buf breaking` finds any
change that would break an app calling Arbiter (on the wire or in JSON) built on the protos
last given to apps: the commit protos/RELEASED names, which every clone's history holds, and
on a branch also the main it started from (git merge-base of HEAD and main). A release moves
protos/RELEASED on; ARBITER_BUF_AGAINST names another ref to compare with.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from tests.conformance import suite

ROOT = Path(__file__).resolve().parents[2]
GAMES = list(suite.NAMES)
ENVELOPE = ("CreateGameRequest", "ActRequest", "ActResponse", "LegalActions", "Update",
            "PlayRequest", "PlayResponse")
# The fields the host fills in every View, and the version every Event carries.
COMMON_FIELDS = {"View": ("version", "seat", "to_act", "outcome"), "Event": ("version",)}


def file_proto(name: str) -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto()
    suite.game(name).pb.DESCRIPTOR.CopyToProto(out)
    return out


def neutral(name: str, proto: Any) -> str:
    """The descriptor as text, the game's own package written GAME: two games' copies compare
    equal when they agree in every name, number, label, type and option."""
    return str(proto).replace(f".arbiter.{name}.v1.", ".GAME.")


def message(file: descriptor_pb2.FileDescriptorProto, name: str) -> Any:
    found = [m for m in file.message_type if m.name == name]
    assert found, f"{file.name} has no message {name}"
    return found[0]


@pytest.mark.parametrize("name", GAMES[1:])
def test_every_game_copies_the_envelope_as_the_first_does(name: str) -> None:
    first, other = GAMES[0], name
    a, b = file_proto(first), file_proto(other)
    for message_name in ENVELOPE:
        ma, mb = message(a, message_name), message(b, message_name)
        fields_a = {f.number: neutral(first, f) for f in ma.field}
        fields_b = {f.number: neutral(other, f) for f in mb.field}
        for number in sorted(set(fields_a) | set(fields_b)):
            assert fields_a.get(number) == fields_b.get(number), (
                f"{message_name} field {number}: {first} has\n{fields_a.get(number)}\n"
                f"{other} has\n{fields_b.get(number)}")
        assert [neutral(first, o) for o in ma.oneof_decl] == \
            [neutral(other, o) for o in mb.oneof_decl], f"{message_name}: oneofs differ"
        assert neutral(first, ma) == neutral(other, mb), f"{message_name} differs"
    for message_name, names in COMMON_FIELDS.items():
        fields_a = {f.name: neutral(first, f) for f in message(a, message_name).field}
        fields_b = {f.name: neutral(other, f) for f in message(b, message_name).field}
        for field_name in names:
            assert field_name in fields_b and fields_a[field_name] == fields_b[field_name], (
                f"{message_name}.{field_name} differs between {first} and {other}")
    [sa], [sb] = a.service, b.service
    assert neutral(first, sa) == neutral(other, sb), f"the Game services differ:\n{sa}\n{sb}"


def test_the_comparison_sees_a_changed_field() -> None:
    """The neutral form keeps what matters: a field of another type or number differs."""
    a = file_proto(GAMES[0])
    act = message(a, "ActRequest")
    changed = descriptor_pb2.DescriptorProto()
    changed.CopyFrom(act)
    changed.field[0].number += 10
    assert neutral(GAMES[0], changed) != neutral(GAMES[0], act)
    assert neutral(GAMES[0], act) == neutral(GAMES[1], message(file_proto(GAMES[1]),
                                                                "ActRequest"))


# ---- buf ----------------------------------------------------------------------------------


def buf_path() -> Path:
    version = re.search(r"^BUF_VERSION := (\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert version, "the Makefile pins BUF_VERSION"
    return ROOT / ".tools" / f"buf-{version[1]}" / "node_modules" / ".bin" / "buf"


BUF = buf_path()
needs_buf = pytest.mark.skipif(
    not BUF.exists(), reason=f"no buf CLI at {BUF.relative_to(ROOT)}: `make test` installs it "
    "with npm (@bufbuild/buf), and npm or the npm registry was not available")


def image(protos: Path, out: Path) -> Path:
    """The protos compiled with their imports and comments into a descriptor set, which buf
    reads as an image (google/rpc/status.proto comes from the installed googleapis package,
    so buf needs no registry)."""
    import google.rpc

    googleapis = Path(google.rpc.__path__[0]).parents[1]
    files = sorted(str(p.relative_to(protos)) for p in protos.rglob("*.proto"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{protos}", f"-I{googleapis}",
                    "--include_imports", "--include_source_info",
                    f"--descriptor_set_out={out}", *files], check=True, cwd=protos)
    return out


def buf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUF), *args, "--config", str(ROOT / "buf.yaml")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@needs_buf
def test_buf_lint(tmp_path: Path) -> None:
    current = image(ROOT / "protos", tmp_path / "current.binpb")
    linted = buf("lint", str(current), "--path", "arbiter")
    assert linted.returncode == 0, linted.stdout + linted.stderr


def base_refs() -> list[str]:
    """The protos apps were last given (the commit protos/RELEASED names, kept in every
    clone's history), and on a branch also the main it started from."""
    against = os.environ.get("ARBITER_BUF_AGAINST", "")
    if against:
        return [against]
    released = (ROOT / "protos" / "RELEASED").read_text().split()[0]
    refs = [released]
    found = subprocess.run(["git", "merge-base", "HEAD", "main"], capture_output=True,
                           text=True, cwd=ROOT)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout.strip()
    if found.returncode == 0 and found.stdout.strip() not in (head, released):
        refs.append(found.stdout.strip())
    return refs


def protos_at(ref: str, into: Path) -> Path:
    archive = into / "protos.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "archive", ref, "protos"], stdout=f, check=True, cwd=ROOT)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "protos"


@needs_buf
def test_buf_breaking_against_the_released_protos_and_the_branch_base(tmp_path: Path) -> None:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no earlier protos to compare with")
    current = image(ROOT / "protos", tmp_path / "current.binpb")
    for n, ref in enumerate(base_refs()):
        held = subprocess.run(["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=ROOT,
                              capture_output=True)
        if held.returncode != 0:
            pytest.skip(f"this clone does not hold {ref} (a shallow clone?): no protos to "
                        "compare with")
        (tmp_path / str(n)).mkdir()
        base = image(protos_at(ref, tmp_path / str(n)), tmp_path / f"base{n}.binpb")
        checked = buf("breaking", str(current), "--against", str(base), "--path", "arbiter")
        assert checked.returncode == 0, f"against {ref}:\n{checked.stdout}{checked.stderr}"


@needs_buf
def test_buf_breaking_finds_a_removed_field(tmp_path: Path) -> None:
    """The check above can fail: protos that lost a field of ActRequest break apps built on
    the current ones."""
    changed = tmp_path / "changed"
    shutil.copytree(ROOT / "protos", changed)
    proto = changed / "arbiter" / GAMES[0] / "v1" / f"{GAMES[0]}.proto"
    text = proto.read_text()
    assert "  string command_id = 2;\n" in text
    proto.write_text(text.replace("  string command_id = 2;\n", "", 1))
    current = image(ROOT / "protos", tmp_path / "current.binpb")
    broken = image(changed, tmp_path / "changed.binpb")
    checked = buf("breaking", str(broken), "--against", str(current), "--path", "arbiter")
    assert checked.returncode != 0 and "command_id" in checked.stdout, checked.stdout
