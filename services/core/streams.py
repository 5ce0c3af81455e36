"""How many Watch and Play streams one process keeps open, and for whom.

A seat's streams (Play or Watch opened with the seat's token, or by the admin for a seat)
are counted apart from spectators' (Watch, and Play without a seat): a spectator needs no
token, so spectators, however many, never take a player's place. Besides the two totals, each
client (as the admission names it) has a share, each game a share of spectators, each client
a share of one game's spectators (every watcher is one more write per move), and each seat of
a game a few streams (a client reconnecting may briefly hold two).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class StreamLimits:
    players: int = 10_000  # seats' streams at once (ARBITER_MAX_PLAYS)
    spectators: int = 10_000  # spectators' streams at once (ARBITER_MAX_WATCHES)
    per_client: int = 500  # one client's streams of both kinds (ARBITER_STREAMS_PER_CLIENT)
    per_game: int = 1_000  # spectators of one game (ARBITER_WATCHES_PER_GAME)
    per_seat: int = 8  # streams of one seat of one game (ARBITER_STREAMS_PER_SEAT)
    # one client's spectators of one game (ARBITER_CLIENT_WATCHES_PER_GAME)
    per_client_game: int = 16


class Full(Exception):
    """No slot for this stream: (reason, sentence), answered RESOURCE_EXHAUSTED."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


class StreamSlots:
    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self.players = 0
        self.spectators = 0
        self.clients: Counter[str] = Counter()
        self.games: Counter[str] = Counter()  # spectators per game
        self.seats: Counter[tuple[str, int]] = Counter()
        self.client_games: Counter[tuple[str, str]] = Counter()  # spectators per client, game

    def check(self, client: str, game_id: str, seat: int | None) -> None:
        """Raise Full when a stream for this client, game and seat would be refused."""
        lim = self.limits
        if seat is None and self.spectators >= lim.spectators:
            raise Full("OVERLOADED", f"the server keeps {lim.spectators} spectators' streams "
                       "open at most, and has that many; retry shortly")
        if seat is not None and self.players >= lim.players:
            raise Full("OVERLOADED", f"the server keeps {lim.players} seats' streams open at "
                       "most, and has that many; retry shortly")
        if self.clients[client] >= lim.per_client:
            raise Full("TOO_MANY_STREAMS", f"this client has {lim.per_client} streams open, "
                       "its share; close one first")
        if seat is None and self.games[game_id] >= lim.per_game:
            raise Full("TOO_MANY_SPECTATORS", f"this game has {lim.per_game} spectators' "
                       "streams open, its share; retry later")
        if seat is None and self.client_games[client, game_id] >= lim.per_client_game:
            raise Full("TOO_MANY_STREAMS", f"this client watches this game on "
                       f"{lim.per_client_game} streams, its share; close one first")
        if seat is not None and self.seats[game_id, seat] >= lim.per_seat:
            raise Full("TOO_MANY_STREAMS", f"seat {seat} of this game has {lim.per_seat} "
                       "streams open; close one first")

    @contextmanager
    def slot(self, client: str, game_id: str, seat: int | None) -> Iterator[None]:
        """Hold a slot while the stream runs; Full if there is none."""
        self.check(client, game_id, seat)
        self.clients[client] += 1
        if seat is None:
            self.spectators += 1
            self.games[game_id] += 1
            self.client_games[client, game_id] += 1
        else:
            self.players += 1
            self.seats[game_id, seat] += 1
        try:
            yield
        finally:
            _drop(self.clients, client)
            if seat is None:
                self.spectators -= 1
                _drop(self.games, game_id)
                _drop(self.client_games, (client, game_id))
            else:
                self.players -= 1
                _drop(self.seats, (game_id, seat))


def _drop(counter: Counter, key: object) -> None:  # type: ignore[type-arg]
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
