"""Instants as the daemon writes them: RFC 3339 in UTC, with a `Z`."""

from __future__ import annotations

import datetime as dt


def rfc3339(moment: dt.datetime) -> str:
    """`moment` as the daemon writes instants, for a query parameter or a body."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
