"""Why a process refuses to start: one sentence for the operator, never a traceback."""

from __future__ import annotations


class CannotStart(Exception):
    """A setting that cannot work (a broker, an address in use...); the message says which
    and what to do, in one sentence."""
