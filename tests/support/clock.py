"""A settable clock for the services built in-process: they stamp validity with it and read
"now" from it, so a test sets the instants it asserts on instead of racing the real time."""

from __future__ import annotations

import datetime as dt


class Clock:
    """Stands still at `start` until a test sets or advances it."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def set(self, instant: dt.datetime) -> dt.datetime:
        self.now = instant
        return instant

    def advance(self, **delta: float) -> dt.datetime:
        """Move on by `dt.timedelta(**delta)`; the new now."""
        self.now = self.now + dt.timedelta(**delta)
        return self.now
