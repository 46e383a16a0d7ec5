"""What a search's graph expansion reads of the graph around its direct hits (search.md
section 4): the entities the hits mention, the relationships of those entities held in the
search's period, and the drawers that mention the entities reached. How expansion ranks what it
reads is the search's own (`palace.search.expansion`)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONFIDENCE = 1.0
"""The confidence of a relationship that records none."""


@dataclass(frozen=True)
class Relationship:
    """One `relates_to` assertion as expansion needs it: its ends and when it held, in
    nanoseconds since the epoch (`valid_to` None when it has not ended)."""

    subject: str
    object: str
    valid_from: int
    valid_to: int | None
    confidence: float = DEFAULT_CONFIDENCE


@dataclass(frozen=True)
class Neighbourhood:
    """The seeds' entities (by seed), the relationships of those entities, and the drawers that
    mention each entity read (by entity)."""

    seed_entities: dict[str, list[str]]
    relationships: list[Relationship]
    mentioned_by: dict[str, list[str]]
