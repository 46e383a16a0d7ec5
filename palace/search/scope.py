"""The scope predicate every leg applies before ranking and limit (search.md section 2)."""

from __future__ import annotations

from dataclasses import dataclass

# An open validity end: valid for ever.
OPEN = 2**63 - 1


@dataclass(frozen=True)
class Scope:
    """Drawer ids are not known here: wing and rooms are ids, resolved from names once.

    `window` is `[start, end)` in nanoseconds; a drawer is in it when `valid_from < end` and
    `valid_to > start` (an open `valid_to` is `OPEN`). None looks at every drawer."""

    wing: str | None = None
    rooms: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()
    source_kind: str | None = None
    window: tuple[int, int] | None = None
