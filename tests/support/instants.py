"""Instants as the daemon writes them: RFC 3339 in UTC, with a `Z`."""

from __future__ import annotations

import datetime as dt


def instant(text: str, *, require_z: bool = True) -> dt.datetime:
    """The instant `text` names. `require_z` also checks that it is written in UTC with a `Z`,
    as every instant the daemon answers is; the modules that never checked it pass False."""
    if require_z:
        assert text.endswith("Z"), text
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def rfc3339(moment: dt.datetime) -> str:
    """`moment` as the daemon writes instants, for a query parameter or a body."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
