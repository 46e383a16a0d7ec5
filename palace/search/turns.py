"""Which drawers are turns of one conversation, in what order, and which to index again.

A conversation is the drawers of one room filed with the same `source.uri`: the turns of a
chat filed one drawer each, the chunks of one mined document, the items of a checkpoint from
one session. Its order is the drawers' validity start, then their filing, then (for chunks
filed together) the chunk's index in its document. The lexical index holds each turn with the
one before it (`palace.search.lexical`): only the turn before, because the turn after measured
worse (docs/retrieval.md, "Turns in their context"); and a turn's entry says whether a turn
follows it (an answered question weighs less than its answer). So a turn filed, changed or
deleted changes the entries of the turns on each side of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

Conversation = tuple[str, str]
"""A room's id and a `source.uri`."""

Order = tuple[int, int, int, str]
"""Validity start and filing instant in nanoseconds, chunk index (-1 when none), drawer id."""


def conversation(room: str, uri: object) -> Conversation | None:
    """The conversation a drawer of `room` with source `uri` belongs to, if any."""
    if not isinstance(uri, str) or not uri:
        return None
    return room, uri


def chunk_index(origin: object) -> int:
    """A mined chunk's index in its document (`source.origin.chunk`), -1 for other drawers."""
    chunk = origin.get("chunk") if isinstance(origin, Mapping) else origin
    return chunk if isinstance(chunk, int) and not isinstance(chunk, bool) else -1


class Place(NamedTuple):
    """Where a turn stands in its conversation, as its index entry needs it."""

    before: str | None
    """The turn before it, None for the first."""
    answered: bool
    """Whether a turn follows it."""


def to_index(members: Sequence[tuple[Order, str]], changed: set[str]) -> dict[str, Place]:
    """The drawers of one conversation to index again after `changed` were filed, changed or
    stood beside a deleted turn, with their places: every changed drawer still in the
    conversation and the turns on each side of it. `members` are the conversation's drawers as
    the store holds them now, as (order, id)."""
    ordered = [drawer_id for _, drawer_id in sorted(members)]
    wanted: dict[str, Place] = {}
    for position, drawer_id in enumerate(ordered):
        if drawer_id in changed:
            for near in range(max(0, position - 1), min(len(ordered), position + 2)):
                wanted[ordered[near]] = _place(ordered, near)
    return wanted


def _place(ordered: Sequence[str], position: int) -> Place:
    before = ordered[position - 1] if position else None
    return Place(before, position + 1 < len(ordered))


def in_order(
    turns: Sequence[Mapping[str, Any]],
) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None, bool]]:
    """Each of one conversation's indexed drawers with the one before it (None for the first)
    and whether a turn follows it: how a rebuild indexes a conversation it read whole."""
    ordered = sorted(turns, key=lambda turn: turn["order"])
    last = len(ordered) - 1
    return [(turn, ordered[i - 1] if i else None, i < last) for i, turn in enumerate(ordered)]
