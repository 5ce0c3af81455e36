"""Known answers for the Rng: fixed seeds and the exact outputs, the same as docs/randomness.md
gives to whoever re-implements the algorithm in another language."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from services.core.decider import Rng

DOC = Path(__file__).resolve().parents[2] / "docs" / "randomness.md"
SEED = bytes(range(32))
BIG = 2**63 + 1  # half the words fall at or above its limit: the rejection is exercised

VECTORS = {
    0: {
        "key": "3a8b171143bc3fe5972827cf3a413e96e1b4573ae308ee4e2ee652100511049f",
        "block 0": "4e960b84c62b8820a9bfd04013ce347f9418df020074bc58705f240f2994b123",
        "words": [5662726246353307680, 12231724086590321791, 10671524516744969304,
                  8097230302576161059, 14422754469752016687, 16224076582481790743],
        "below(6)": [0, 1, 0, 5, 3, 5, 3, 0, 5, 3, 1, 2],
        "shuffle": [2, 4, 7, 8, 6, 3, 5, 9, 1, 0],
        "below(2^63 + 1)": [5662726246353307680, 8097230302576161059, 2455920999369865641],
    },
    7: {
        "key": "43c875c1027e0bb60b3c5e055d7245befa0322f45d7a0f86cfb578e79a5ce269",
        "block 0": "960d62eaf1ae1ec0833953ab7a3d6af5e0bf738589ce0c9638f9baa2dc11c9a6",
        "words": [10812407041603018432, 9455680888596425461, 16194789802427419798,
                  4105517743964539302, 16015655284573501572, 14829480165902964608],
        "below(6)": [4, 1, 4, 0, 0, 2, 1, 1, 4, 5, 1, 0],
        "shuffle": [9, 5, 8, 7, 3, 0, 1, 6, 4, 2],
        "below(2^63 + 1)": [4105517743964539302, 1345448102032168417, 31760302485363809],
    },
}


def words_of(block: bytes) -> list[int]:
    return [int.from_bytes(block[i:i + 8], "big") for i in range(0, 32, 8)]


@pytest.mark.parametrize("version", list(VECTORS))
def test_the_key_and_blocks_follow_the_published_steps(version: int) -> None:
    """The standard library's HMAC and SHA-256, step by step, give the published bytes."""
    want = VECTORS[version]
    key = hmac.digest(SEED, str(version).encode(), "sha256")
    assert key.hex() == want["key"]
    blocks = [hashlib.sha256(key + i.to_bytes(8, "big")).digest() for i in range(2)]
    assert blocks[0].hex() == want["block 0"]
    assert (words_of(blocks[0]) + words_of(blocks[1]))[:6] == want["words"]


@pytest.mark.parametrize("version", list(VECTORS))
def test_the_rng_gives_the_known_answers(version: int) -> None:
    want = VECTORS[version]
    rng = Rng(SEED, version)
    assert [rng.below(2**64) for _ in range(6)] == want["words"]
    rng = Rng(SEED, version)
    assert [rng.below(6) for _ in range(12)] == want["below(6)"]
    assert Rng(SEED, version).shuffled(list(range(10))) == want["shuffle"]
    rng = Rng(SEED, version)
    assert [rng.below(BIG) for _ in range(3)] == want["below(2^63 + 1)"]


def test_choice_and_chance_are_below() -> None:
    rng, same = Rng(SEED, 0), Rng(SEED, 0)
    items = list("abcdef")
    assert [rng.choice(items) for _ in range(12)] == [
        items[i] for i in VECTORS[0]["below(6)"]]
    assert [same.chance(2, 6) for _ in range(12)] == [i < 2 for i in VECTORS[0]["below(6)"]]


def test_the_document_publishes_these_vectors() -> None:
    text = " ".join(DOC.read_text().split())
    for version, want in VECTORS.items():
        section = text.split(f"Version {version}:", 1)[1].split("Version ", 1)[0]
        for name, value in want.items():
            shown = value if isinstance(value, str) else ", ".join(map(str, value))
            assert f"`{shown}`" in section, f"version {version}: {name} is not in {DOC.name}"
