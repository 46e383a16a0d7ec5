"""A checkpoint's facts: the fact service (docs/graph.md, "Through a checkpoint").

A checkpoint item may carry a `fact`, applied once its drawer is filed, with that drawer as the
evidence: `add` asserts a relationship between two entities (named by id, by name, or by
`{name, kind}`), `supersede` closes one and asserts its replacement from the same instant,
`invalidate` closes one, and `link` records a decision between two (`confirms`, `contradicts`,
`refines`). Every record goes to an id derived from the drawer, so a resumed job applies nothing
twice. The decisions are explicit fact links; how they shape an assertion's lifecycle is
`graph.lifecycle`.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from graph import lifecycle, resolution
from graph.entities import EntityService, announce_updated, label
from graph.repositories.facts import FactRepository
from graph.repositories.records import derived_id
from kernel.clock import utc_now
from kernel.errors import InputInvalid, NotFound
from kernel.events import EventBus
from kernel.validation import is_uuid

EXPLICIT_REASONS = {
    "supersedes": "superseded by a checkpoint",
    "invalidates": "invalidated by a checkpoint",
}
FACT_LINK_KINDS = ("confirms", "contradicts", "refines")


class RelationshipNotFound(NotFound):
    code = "memcastle::graph::relationship_not_found"
    help = "relationship ids come with GET /api/entities/{id}/relationships and fact history"


def check_fact_labels(fact: Mapping[str, Any]) -> None:
    """The labels of a checkpoint fact, checked at submission: a blank predicate or entity kind
    is `memcastle::graph::empty_label`. The rest of its shape is checked when it is applied."""
    op = fact.get("op")
    if op == "add" or (op == "supersede" and "predicate" in fact):
        label(fact.get("predicate"), "fact.predicate")
    for end in ("subject", "object", "from", "to"):
        ref = fact.get(end)
        if isinstance(ref, Mapping) and "kind" in ref:
            label(ref.get("kind"), f"fact.{end}.kind")


def relationship_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The assertion as `graph.shapes.Relationship` renders it (with its lifecycle): its ends
    by the names api.md gives them, provenance only where an extractor derived it, the
    asserting checkpoint drawer where one asserted it."""
    values: dict[str, Any] = {
        "id": row["id"],
        "from": row["in"],
        "to": row["out"],
        "predicate": row["predicate"],
        "confidence": row.get("confidence"),
        "valid_from": row["valid_from"],
        "valid_to": row.get("valid_to"),
    }
    if row.get("provenance"):
        values["provenance"] = row["provenance"]
    if row.get("assertion") is not None:
        values["assertion"] = row["assertion"]
    return values


def fact_link(
    kind: str,
    origin: str,
    from_id: str,
    to_id: str,
    *,
    reason: str,
    at: dt.datetime,
    evidence: str | None,
) -> dict[str, Any]:
    """A fact link under its derived id (kind, origin, endpoints; symmetric kinds order them)."""
    row: dict[str, Any] = {
        "id": derived_id("fact_link", *lifecycle.link_id_parts(kind, origin, from_id, to_id)),
        "from_id": from_id,
        "to_id": to_id,
        "kind": kind,
        "origin": origin,
        "reason": reason,
        "at": at,
    }
    if evidence is not None:
        row["evidence"] = evidence
    return row


def _confidence(raw: object, field: str, default: float) -> float:
    if raw is None:
        return default
    if (
        isinstance(raw, bool)
        or not isinstance(raw, (int, float))
        or not math.isfinite(raw)
        or not 0 <= raw <= 1
    ):
        raise InputInvalid(field, "must be a number from 0 to 1")
    return float(raw)


def _optional_reason(raw: object, default: str) -> str:
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise InputInvalid("fact.reason", "must be a string")
    return raw.strip() or default


def _relationship_ref(raw: object, field: str) -> str:
    if not isinstance(raw, str) or not is_uuid(raw):
        raise RelationshipNotFound(f"`{field}` names no relationship (got {raw!r})")
    return str(uuid.UUID(raw))


class FactService:
    def __init__(
        self,
        repository: FactRepository,
        entities: EntityService,
        events: EventBus | None = None,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self._repository = repository
        self._entities = entities
        self.events = events or EventBus()
        self.clock = clock

    def apply_fact(
        self, checkpoint_drawer: Mapping[str, Any], fact: Mapping[str, Any], requested_by: str
    ) -> dict[str, Any]:
        """Apply a checkpoint item's fact; its drawer is the evidence (the assertion of an
        `add`). Every record goes to an id derived from the drawer, so a resumed job applies
        nothing twice. Raises `RelationshipNotFound`, `EntityNotFound`, `EmptyLabel` or
        `InputInvalid`, which fail the item."""
        op = fact.get("op")
        drawer_id = checkpoint_drawer["id"]
        if op == "add":
            return self._assert(checkpoint_drawer, fact)
        if op == "supersede":
            return self._supersede(drawer_id, fact)
        if op == "invalidate":
            return self._invalidate(drawer_id, fact)
        if op == "link":
            return self._link(drawer_id, fact)
        raise InputInvalid("fact.op", "must be one of add, supersede, invalidate, link")

    def _entity_of(self, raw: object, field: str) -> str:
        """A fact's entity: an entity id, a name (kind `other`) or `{name, kind}` / `{id}`."""
        if isinstance(raw, Mapping):
            if raw.get("id") is not None:
                return self._entities.entity(str(raw["id"]))["id"]
            name, kind = raw.get("name"), label(raw.get("kind", resolution.OTHER), f"{field}.kind")
        else:
            name, kind = raw, resolution.OTHER
        if not isinstance(name, str) or not name.strip():
            raise InputInvalid(field, "must name an entity (a name, an entity id or {name, kind})")
        if is_uuid(name.strip()):
            found = self._entities.find(name.strip())
            if found is not None:
                return found["id"]
        return self._entities.resolve(name, kind).entity["id"]

    def _relationship(self, relationship_id: str) -> dict[str, Any]:
        found = self._repository.relationships_by_ids([relationship_id]).get(relationship_id)
        if found is None:
            raise RelationshipNotFound(f"relationship {relationship_id!r} does not exist")
        return found

    def _assert(self, drawer: Mapping[str, Any], fact: Mapping[str, Any]) -> dict[str, Any]:
        predicate = label(fact.get("predicate"), "fact.predicate")
        confidence = _confidence(fact.get("confidence"), "fact.confidence", 1.0)
        subject = self._entity_of(fact.get("subject"), "fact.subject")
        obj = self._entity_of(fact.get("object"), "fact.object")
        row = {
            "id": derived_id("asserted", drawer["id"]),
            "in": subject,
            "out": obj,
            "predicate": predicate,
            "confidence": confidence,
            "valid_from": drawer.get("valid_from") or self.clock(),
            "assertion": drawer["id"],
            "created_at": self.clock(),
        }
        self._repository.insert_relationships([row])
        announce_updated(self.events, (subject, obj))
        return {"op": "add", "relationship": row["id"]}

    def _supersede(self, drawer_id: str, fact: Mapping[str, Any]) -> dict[str, Any]:
        target = self._relationship(
            _relationship_ref(fact.get("relationship_id"), "fact.relationship_id")
        )
        predicate = (
            label(fact["predicate"], "fact.predicate")
            if fact.get("predicate") is not None
            else target["predicate"]
        )
        confidence = _confidence(
            fact.get("confidence"), "fact.confidence", float(target.get("confidence") or 1.0)
        )
        subject = (
            self._entity_of(fact["from"], "fact.from")
            if fact.get("from") is not None
            else target["in"]
        )
        obj = (
            self._entity_of(fact["to"], "fact.to") if fact.get("to") is not None else target["out"]
        )
        now = self.clock()
        replacement: dict[str, Any] = {
            "id": derived_id("superseding", drawer_id),
            "in": subject,
            "out": obj,
            "predicate": predicate,
            "confidence": confidence,
            "valid_from": now,
            "assertion": drawer_id,
            "created_at": now,
        }
        link = fact_link(
            "supersedes",
            "explicit",
            replacement["id"],
            target["id"],
            reason=_optional_reason(fact.get("reason"), EXPLICIT_REASONS["supersedes"]),
            at=now,
            evidence=drawer_id,
        )
        self._repository.supersede(target["id"], replacement, link, now)
        announce_updated(self.events, (target["in"], target["out"], subject, obj))
        return {"op": "supersede", "relationship": replacement["id"], "superseded": target["id"]}

    def _invalidate(self, drawer_id: str, fact: Mapping[str, Any]) -> dict[str, Any]:
        target = self._relationship(
            _relationship_ref(fact.get("relationship_id"), "fact.relationship_id")
        )
        now = self.clock()
        link = fact_link(
            "invalidates",
            "explicit",
            target["id"],
            target["id"],
            reason=_optional_reason(fact.get("reason"), EXPLICIT_REASONS["invalidates"]),
            at=now,
            evidence=drawer_id,
        )
        self._repository.invalidate(target["id"], link, now)
        announce_updated(self.events, (target["in"], target["out"]))
        return {"op": "invalidate", "invalidated": target["id"]}

    def _link(self, drawer_id: str, fact: Mapping[str, Any]) -> dict[str, Any]:
        kind = fact.get("kind")
        if kind not in FACT_LINK_KINDS:
            raise InputInvalid("fact.kind", f"must be one of {', '.join(FACT_LINK_KINDS)}")
        reason = fact.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputInvalid("fact.reason", "must be a non-blank string for a link")
        first = self._relationship(
            _relationship_ref(fact.get("relationship_id"), "fact.relationship_id")
        )
        second = self._relationship(_relationship_ref(fact.get("other_id"), "fact.other_id"))
        if first["id"] == second["id"]:
            raise InputInvalid("fact.other_id", "must name another relationship")
        link = fact_link(
            kind,
            "explicit",
            first["id"],
            second["id"],
            reason=reason.strip(),
            at=self.clock(),
            evidence=drawer_id,
        )
        self._repository.insert_links([link])
        announce_updated(self.events, (first["in"], first["out"], second["in"], second["out"]))
        return {"op": "link", "link": link["id"]}
