"""Entities and how names resolve to them: the entity service (docs/graph.md, "Entities and
spellings").

A name (as a drawer or a person writes it) resolves to an entity of its kind by the rules of
`graph.resolution`, or creates one; a matched spelling is recorded as an alias, and a new entity
is linked `possibly_same_as` to the entities it resembles (the candidates a person may review).
Nothing is ever merged or deleted. Writers here are a person's mention of an entity in a drawer
(`mention`) and a recorded alias (`add_alias`); the extract job and a checkpoint's facts resolve
their names through `resolve_many` and `resolve`. Every change is announced by entity id only.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graph import resolution
from graph.repositories.entities import EntityRepository
from graph.repositories.records import derived_id
from graph.shapes import EntityAliased, MentionLinked
from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid, NotFound, StoreFailed
from kernel.events import EventBus
from kernel.store import UniqueViolation
from kernel.validation import body_object, parse_uuid, refuse_unknown
from palace.hierarchy import DrawerNotFound

# The longest entity name or alias recorded.
MAX_NAME_CHARS = 500
# How many names the extract job's resolutions remember (`resolve_many(remembered=True)`).
KNOWN_NAMES = 10_000
MENTION_FIELDS = ("name", "kind", "requested_by")
ALIAS_FIELDS = ("alias", "requested_by")


class EntityNotFound(NotFound):
    code = "memcastle::graph::entity_not_found"
    help = "list the entities with GET /api/entities?name=..."


class EmptyLabel(InputInvalid):
    code = "memcastle::graph::empty_label"

    def __init__(self, field: str, where: str = "") -> None:
        super().__init__(field, "must not be blank", help=f"give `{field}` a non-blank label")
        if where:
            self.message = f"{where}{self.message}"


def label(raw: object, field: str) -> str:
    """A free-form label (an entity kind, a predicate): trimmed and lowercased, never blank."""
    if raw is None:
        raise EmptyLabel(field)
    if not isinstance(raw, str):
        raise InputInvalid(field, "must be a string")
    value = raw.strip().lower()
    if not value:
        raise EmptyLabel(field)
    return value


@dataclass(frozen=True)
class _Pending:
    """A new entity prepared by a resolution, not written yet, and the entities it resembles."""

    record: dict[str, Any]
    candidates: list[resolution.Candidate]

    def add_alias(self, alias: str) -> dict[str, Any]:
        if alias != self.record["name"] and alias not in self.record["aliases"]:
            self.record["aliases"].append(alias)
            alias_key = resolution.key(alias)
            if alias_key and alias_key not in self.record["alias_keys"]:
                self.record["alias_keys"].append(alias_key)
        return self.record

    def terms(self) -> list[tuple[str, str]]:
        return resolution.entity_terms(self.record["key"], self.record["alias_keys"])


@dataclass(frozen=True)
class Resolution:
    """The entity a name resolved to, the rule that tied them and its confidence."""

    entity: dict[str, Any]
    rule: str
    confidence: float


def entity_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """An entity as `graph.shapes.Entity` renders it: without the keys it is looked up by."""
    return {
        "id": row["id"],
        "name": row["name"],
        "kind": row["kind"],
        "aliases": list(row.get("aliases") or []),
        "properties": dict(row.get("properties") or {}),
        "created_at": row.get("created_at"),
    }


def entity_ref(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "kind": row["kind"]}


def announce_updated(events: EventBus, entity_ids: Iterable[str]) -> None:
    """Tell the event stream that these entities changed, each once, by id only."""
    for entity_id in sorted(set(entity_ids)):
        events.publish("entity", "updated", id=entity_id)


class EntityService:
    def __init__(
        self,
        repository: EntityRepository,
        events: EventBus | None = None,
        *,
        fuzzy: bool = True,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self._repository = repository
        self.events = events or EventBus()
        self.fuzzy = fuzzy
        self.clock = clock
        # (name, kind) -> the entity of that name and kind (`resolve_many(remembered=True)`).
        self._known: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._known_lock = threading.Lock()

    def entity(self, entity_id: str) -> dict[str, Any]:
        """The entity of that id; `EntityNotFound` when there is none."""
        found = self._repository.entity(parse_uuid(entity_id, "id"))
        if found is None:
            raise EntityNotFound(f"entity {entity_id!r} does not exist")
        return found

    def find(self, entity_id: str) -> dict[str, Any] | None:
        """The entity of that id (a UUID), or None."""
        return self._repository.entity(str(uuid.UUID(entity_id)))

    # Resolution (docs/graph.md, "Entities and spellings")

    def resolve(self, name: str, kind: str) -> Resolution:
        """The entity `name` (as written) names among entities of `kind`, created when no rule
        ties it to one. A matched spelling is recorded as an alias; a new entity is linked
        `possibly_same_as` to the entities it resembles. Never merges or deletes."""
        return self.resolve_many([(name, kind)])[0]

    def resolve_many(
        self, observations: list[tuple[str, str]], *, remembered: bool = False
    ) -> list[Resolution]:
        """`resolve` for several `(name, kind)` in order, looked up together: two round trips
        for the lookups, one write per new alias of an existing entity, and one transaction
        for every new entity (with its aliases, terms and candidate links). A name resolves
        against the entities the earlier names of the list created or gave an alias, too.

        With `remembered`, a name this service has seen resolve to an entity of that very name
        and kind resolves to it again without a lookup: the `exact` rule picks that entity
        whatever else exists (names are never rewritten, entities never deleted, and a name is
        unique per kind), but its view may lack aliases recorded since. The extract job, which
        only needs the entity's id, reads mostly names it has seen before."""
        wanted = []
        for name, kind in observations:
            text = name.strip() if isinstance(name, str) else ""
            if not text:
                raise InputInvalid("name", "must not be blank")
            if len(text) > MAX_NAME_CHARS:
                raise InputInvalid("name", f"must be at most {MAX_NAME_CHARS} characters")
            wanted.append((text, label(kind, "kind"), resolution.key(text)))
        if not remembered:
            return self._resolve_all(wanted)
        known = [self._known_entity(name, kind) for name, kind, _ in wanted]
        rest = [item for item, entity in zip(wanted, known, strict=True) if entity is None]
        found = iter(self._resolve_all(rest) if rest else [])
        answers = [
            Resolution(entity_values(entity), "exact", resolution.CONFIDENCE["exact"])
            if entity is not None
            else next(found)
            for entity in known
        ]
        for (name, kind, _), answer in zip(wanted, answers, strict=True):
            if (answer.entity["name"], answer.entity["kind"]) == (name, kind):
                self._remember(answer.entity)
        return answers

    def _known_entity(self, name: str, kind: str) -> dict[str, Any] | None:
        with self._known_lock:
            entity = self._known.get((name, kind))
            if entity is not None:
                self._known.move_to_end((name, kind))
            return entity

    def _remember(self, entity: dict[str, Any]) -> None:
        with self._known_lock:
            self._known[(entity["name"], entity["kind"])] = entity
            self._known.move_to_end((entity["name"], entity["kind"]))
            while len(self._known) > KNOWN_NAMES:
                self._known.popitem(last=False)

    def _resolve_all(self, wanted: list[tuple[str, str, str]]) -> list[Resolution]:
        """Resolve checked `(name, kind, key)` observations (see `resolve_many`)."""
        pool = {
            row["id"]: row
            for row in self._repository.resolution_pool(
                {name for name, _, _ in wanted}, {key for _, _, key in wanted}
            )
        }
        if self.fuzzy:
            undecided = [
                key
                for name, kind, key in wanted
                if key
                and resolution.decide(
                    name,
                    kind,
                    by_name=pool.values(),
                    by_key=pool.values(),
                    by_alias=pool.values(),
                    fuzzy=False,
                ).rule
                == "new"
            ]
            terms = {term for key in undecided for term in resolution.lookup_terms(key)}
            for row in self._repository.entities_near(terms):
                pool.setdefault(row["id"], row)
        pending: dict[str, _Pending] = {}
        found = [self._resolve_in(pool, pending, name, kind, key) for name, kind, key in wanted]
        if not pending:
            return found
        settled = self._create_entities(list(pending.values()))
        answers = []
        for res in found:
            stored = settled.get(res.entity["id"])
            if stored is None:
                answers.append(res)
            else:
                entity, rule = stored
                if res.rule != "new" or rule is None:
                    rule = res.rule
                answers.append(Resolution(entity_values(entity), rule, res.confidence))
        return answers

    def _resolve_in(
        self,
        pool: dict[str, dict[str, Any]],
        pending: dict[str, _Pending],
        name: str,
        kind: str,
        observed: str,
    ) -> Resolution:
        """Resolve against the entities looked up (`pool`), which it keeps up to date. A new
        entity is only prepared (in `pending`, and in `pool` for the names after it); a
        spelling of a prepared one becomes one of its aliases before it is written."""
        rows = list(pool.values())
        decision = resolution.decide(
            name,
            kind,
            by_name=rows,
            by_key=rows,
            by_alias=rows,
            nearby=rows,
            fuzzy=self.fuzzy,
        )
        if decision.entity is not None:
            entity = dict(decision.entity)
            if decision.rule != "exact" and name != entity["name"]:
                if entity["id"] in pending:
                    entity = pending[entity["id"]].add_alias(name)
                else:
                    entity = self._record_alias(entity, name)
                pool[entity["id"]] = entity
            return Resolution(entity_values(entity), decision.rule, decision.confidence)
        prepared = _Pending(
            {
                "id": str(uuid.uuid4()),
                "name": name,
                "kind": kind,
                "key": observed,
                "aliases": [],
                "alias_keys": [],
                "properties": {},
                "created_at": self.clock(),
            },
            decision.candidates,
        )
        pending[prepared.record["id"]] = prepared
        pool[prepared.record["id"]] = prepared.record
        return Resolution(entity_values(prepared.record), "new", decision.confidence)

    def _candidate_rows(self, prepared: _Pending) -> list[dict[str, Any]]:
        record = prepared.record
        return [
            {
                "id": derived_id("possibly_same_as", record["id"], c.entity["id"]),
                "in": record["id"],
                "out": c.entity["id"],
                "similarity": c.similarity,
                "created_at": record["created_at"],
            }
            for c in prepared.candidates
        ]

    def _announce_created(self, prepared: _Pending) -> None:
        self.events.publish("entity", "created", id=prepared.record["id"])
        for candidate in prepared.candidates:
            self.events.publish("entity", "updated", id=candidate.entity["id"])

    def _create_entities(
        self, prepared: list[_Pending]
    ) -> dict[str, tuple[dict[str, Any], str | None]]:
        """Write the prepared entities in one transaction. When another writer created one of
        the names first, the transaction fails and each is written alone: a name taken meanwhile
        resolves to the other writer's entity, which gets the prepared aliases. Returns, by
        prepared id, the entity stored and, when it is another writer's, the rule that tied
        the name to it."""
        try:
            self._repository.create_entities(
                [(p.record, p.terms()) for p in prepared],
                [row for p in prepared for row in self._candidate_rows(p)],
            )
        except (StoreFailed, UniqueViolation):
            return {p.record["id"]: self._create_alone(p) for p in prepared}
        for p in prepared:
            self._announce_created(p)
        return {p.record["id"]: (p.record, None) for p in prepared}

    def _create_alone(self, prepared: _Pending) -> tuple[dict[str, Any], str | None]:
        record = prepared.record
        try:
            self._repository.create_entities(
                [(record, prepared.terms())], self._candidate_rows(prepared)
            )
        except (StoreFailed, UniqueViolation):
            rows = self._repository.resolution_pool({record["name"]}, {record["key"]})
            again = resolution.decide(
                record["name"], record["kind"], by_name=rows, by_key=rows, fuzzy=False
            )
            if again.entity is None:
                raise
            entity = dict(again.entity)
            for alias in record["aliases"]:
                entity = self._record_alias(entity, alias)
            return entity, again.rule
        self._announce_created(prepared)
        return record, None

    def _record_alias(self, entity: Mapping[str, Any], alias: str) -> dict[str, Any]:
        """Append a spelling to the entity's aliases (and its key to `alias_keys`)."""
        if alias == entity["name"] or alias in (entity.get("aliases") or []):
            return dict(entity)
        updated = self._repository.add_alias(entity["id"], alias, resolution.key(alias))
        self.events.publish("entity", "updated", id=entity["id"])
        return updated or dict(entity)

    # Writers: a person's mention and alias

    def mention(self, ctx: RequestContext, drawer_id: str, data: object) -> dict[str, Any]:
        """Link a drawer to the entity a name resolves to; `created` is false when the drawer
        already mentioned that entity."""
        ctx.require_write("drawer_mention")
        body = body_object(data)
        refuse_unknown(body, MENTION_FIELDS)
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputInvalid("name", "is required and must be a non-blank string")
        kind = label(body.get("kind"), "kind")
        drawer_key = parse_uuid(drawer_id, "id")
        if not self._repository.drawer_listings([drawer_key]):
            raise DrawerNotFound(f"drawer {drawer_id!r} does not exist")
        resolved = self.resolve(name, kind)
        entity_id = resolved.entity["id"]
        existing = self._repository.mention_between(drawer_key, entity_id)
        created = existing is None
        if existing is None:
            row: dict[str, Any] = {
                "id": derived_id("mentions", drawer_key, entity_id),
                "in": drawer_key,
                "out": entity_id,
                "observation": {
                    "name": name.strip(),
                    "rule": resolved.rule,
                    "confidence": resolved.confidence,
                },
                "created_at": self.clock(),
            }
            self._repository.insert_mentions([row])
            existing = self._repository.mention_between(drawer_key, entity_id) or row
            self.events.publish("entity", "updated", id=entity_id)
        return MentionLinked.render(
            {
                "drawer": drawer_key,
                "entity": resolved.entity,
                "observation": existing.get("observation"),
                "created": created,
            }
        )

    def add_alias(self, ctx: RequestContext, entity_id: str, data: object) -> dict[str, Any]:
        """Record a spelling of an entity so later sightings converge on it."""
        ctx.require_write("entity_alias")
        body = body_object(data)
        refuse_unknown(body, ALIAS_FIELDS)
        alias = body.get("alias")
        if not isinstance(alias, str) or not alias.strip():
            raise InputInvalid("alias", "is required and must be a non-blank string")
        entity = self.entity(entity_id)
        alias = alias.strip()
        if len(alias) > MAX_NAME_CHARS:
            raise InputInvalid("alias", f"must be at most {MAX_NAME_CHARS} characters")
        created = alias != entity["name"] and alias not in (entity.get("aliases") or [])
        entity = self._record_alias(entity, alias)
        return EntityAliased.render({**entity_values(entity), "created": created})
