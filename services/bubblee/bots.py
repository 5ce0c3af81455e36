"""Bubblee Pop bots: they see only their seat's View and the legal commands."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb
from services.core.decider import Bot, Rng


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


BOTS: dict[str, Bot] = {"random": random_bot, "greedy": random_bot}
