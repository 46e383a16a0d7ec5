"""The knowledge graph's application service: the only seam between transports, jobs and the
graph's records (graph.md sections 1, 2, 6 and 7; palace.md section 8).

Entities and relationships are derived from drawers, never the other way round: nothing here
writes a drawer. Writers are a checkpoint's `fact` (`apply_fact`), a person's mention
(`mention`), a recorded alias (`add_alias`) and the extract job (`record_extraction`,
`close_facts_of`, `link_successor_facts`). Reads check the memory mode first; the lifecycle of
every assertion is computed on read (`graph.lifecycle`).
"""

from __future__ import annotations

import datetime as dt
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graph import lifecycle, resolution
from graph.repository import GraphRepository, derived_id
from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid, NotFound, StoreFailed
from kernel.events import EventBus
from kernel.store import UniqueViolation
from kernel.validation import (
    body_object,
    is_uuid,
    parse_instant,
    parse_limit,
    parse_uuid,
    refuse_unknown,
)
from palace.drawers import drawer_listing_view
from palace.hierarchy import DrawerNotFound

ENTITY_LIST_LIMIT = 50
# The longest entity name or alias recorded.
MAX_NAME_CHARS = 500
MENTION_LIST_LIMIT = 200
# How many names the extract job's resolutions remember (`resolve_many(remembered=True)`).
KNOWN_NAMES = 10_000
OVERVIEW_TOP = 20
NEIGHBOURHOOD_LIMIT = 200
MAX_DEPTH = 3
HISTORY_ROUNDS = 100
SINGLE_VALUED = ("located_in",)
REASONS = {
    "confirms": "v1: same resolved subject, predicate and object",
    "contradicts": "v1: different objects for a single-valued predicate",
    "supersedes": "v1: successor drawer replaced this source's earlier assertion",
}
EXPLICIT_REASONS = {
    "supersedes": "superseded by a checkpoint",
    "invalidates": "invalidated by a checkpoint",
}
FACT_LINK_KINDS = ("confirms", "contradicts", "refines")
MENTION_FIELDS = ("name", "kind", "requested_by")
ALIAS_FIELDS = ("alias", "requested_by")


class EntityNotFound(NotFound):
    code = "memcastle::graph::entity_not_found"
    help = "list the entities with GET /api/entities?name=..."


class RelationshipNotFound(NotFound):
    code = "memcastle::graph::relationship_not_found"
    help = "relationship ids come with GET /api/entities/{id}/relationships and fact history"


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


def entity_view(row: Mapping[str, Any]) -> dict[str, Any]:
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


def relationship_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """The assertion as api.md shows it: provenance only where an extractor derived it, the
    asserting checkpoint drawer where one asserted it."""
    view: dict[str, Any] = {
        "id": row["id"],
        "from": row["in"],
        "to": row["out"],
        "predicate": row["predicate"],
        "confidence": row.get("confidence"),
        "valid_from": row["valid_from"],
        "valid_to": row.get("valid_to"),
    }
    if row.get("provenance"):
        view["provenance"] = row["provenance"]
    if row.get("assertion") is not None:
        view["assertion"] = row["assertion"]
    return view


def _overlaps(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    a_end, b_end = a.get("valid_to"), b.get("valid_to")
    return (b_end is None or a["valid_from"] < b_end) and (a_end is None or b["valid_from"] < a_end)


def _evidence(row: Mapping[str, Any]) -> str | None:
    """The drawer an assertion stands on: the extractor's drawer or the asserting checkpoint."""
    if row.get("assertion") is not None:
        return row["assertion"]
    return (row.get("provenance") or {}).get("drawer")


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


class GraphService:
    def __init__(
        self,
        repository: GraphRepository,
        events: EventBus | None = None,
        *,
        fuzzy: bool = True,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self.repository = repository
        self.events = events or EventBus()
        self.fuzzy = fuzzy
        self.clock = clock
        # (name, kind) -> the entity of that name and kind (`resolve_many(remembered=True)`).
        self._known: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._known_lock = threading.Lock()

    # Resolution (palace.md section 8)

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
            Resolution(entity_view(entity), "exact", resolution.CONFIDENCE["exact"])
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
            for row in self.repository.resolution_pool(
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
            for row in self.repository.entities_near(terms):
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
                answers.append(Resolution(entity_view(entity), rule, res.confidence))
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
            return Resolution(entity_view(entity), decision.rule, decision.confidence)
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
        return Resolution(entity_view(prepared.record), "new", decision.confidence)

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
            self.repository.create_entities(
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
            self.repository.create_entities(
                [(record, prepared.terms())], self._candidate_rows(prepared)
            )
        except (StoreFailed, UniqueViolation):
            rows = self.repository.resolution_pool({record["name"]}, {record["key"]})
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
        updated = self.repository.add_alias(entity["id"], alias, resolution.key(alias))
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
        if not self.repository.drawer_listings([drawer_key]):
            raise DrawerNotFound(f"drawer {drawer_id!r} does not exist")
        resolved = self.resolve(name, kind)
        entity_id = resolved.entity["id"]
        existing = self.repository.mention_between(drawer_key, entity_id)
        created = existing is None
        if created:
            row = {
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
            self.repository.insert_mentions([row])
            existing = self.repository.mention_between(drawer_key, entity_id) or row
            self.events.publish("entity", "updated", id=entity_id)
        return {
            "drawer": drawer_key,
            "entity": resolved.entity,
            "observation": existing.get("observation"),
            "created": created,
        }

    def add_alias(self, ctx: RequestContext, entity_id: str, data: object) -> dict[str, Any]:
        """Record a spelling of an entity so later sightings converge on it."""
        ctx.require_write("entity_alias")
        body = body_object(data)
        refuse_unknown(body, ALIAS_FIELDS)
        alias = body.get("alias")
        if not isinstance(alias, str) or not alias.strip():
            raise InputInvalid("alias", "is required and must be a non-blank string")
        entity = self._entity(entity_id)
        alias = alias.strip()
        if len(alias) > MAX_NAME_CHARS:
            raise InputInvalid("alias", f"must be at most {MAX_NAME_CHARS} characters")
        created = alias != entity["name"] and alias not in (entity.get("aliases") or [])
        entity = self._record_alias(entity, alias)
        return {**entity_view(entity), "created": created}

    # Writers: the extract job (graph.md section 3)

    def record_extraction(
        self,
        drawer: Mapping[str, Any],
        entities: list[dict],
        relations: list[dict],
        *,
        extractor: str,
        job_id: str | None,
        valid_from: dt.datetime,
        predecessor: str | None = None,
    ) -> tuple[int, int]:
        """Record what an extractor read in a drawer: resolve its entities, link the drawer to
        them (`mentions`), add its relations (`relates_to`, under ids derived from the drawer
        and the fact), infer the lifecycle links against other drawers' assertions, and write
        the drawer's `drawer_extraction` marker last. `entities` are `{name, kind}`;
        `relations` are `{subject, predicate, object, confidence}` naming entities of the same
        answer, already normalised and capped. `predecessor` is the read drawer this one
        replaced, whose facts it supersedes (`link_successor_facts`) rather than contradicts.
        A replay writes nothing twice. Returns the entities and relations recorded."""
        now = self.clock()
        valid_from = min(valid_from, now)
        drawer_id = drawer["id"]
        resolved: dict[str, tuple[Resolution, str]] = {}
        by_key: dict[str, str] = {}
        observations: dict[str, str] = {}
        for item in entities:
            name = str(item.get("name") or "").strip()
            kind = str(item.get("kind") or "").strip() or resolution.OTHER
            if name and len(name) <= MAX_NAME_CHARS and name not in observations:
                observations[name] = kind
        found = self.resolve_many(list(observations.items()), remembered=True)
        for (name, _), res in zip(observations.items(), found, strict=True):
            resolved[name] = (res, name)
            by_key.setdefault(resolution.key(name), name)
        mentions: dict[str, dict[str, Any]] = {}
        for res, name in resolved.values():
            entity_id = res.entity["id"]
            if entity_id in mentions:
                continue
            mentions[entity_id] = {
                "id": derived_id("mentions", drawer_id, entity_id),
                "in": drawer_id,
                "out": entity_id,
                "observation": {"name": name, "rule": res.rule, "confidence": res.confidence},
                "provenance": None,
                "created_at": now,
            }
        provenance = self._provenance(drawer, extractor, job_id, now)
        for row in mentions.values():
            row["provenance"] = provenance

        def entity_of(name: object) -> str | None:
            text = str(name or "").strip()
            found = resolved.get(text) or resolved.get(by_key.get(resolution.key(text), ""))
            return found[0].entity["id"] if found else None

        relationships: dict[str, dict[str, Any]] = {}
        for relation in relations:
            subject, obj = entity_of(relation.get("subject")), entity_of(relation.get("object"))
            predicate = str(relation.get("predicate") or "").strip().lower()
            if subject is None or obj is None or subject == obj or not predicate:
                continue
            confidence = relation.get("confidence")
            if not isinstance(confidence, (int, float)) or not math.isfinite(confidence):
                continue
            rel_id = derived_id("extracted", drawer_id, subject, predicate, obj)
            relationships.setdefault(
                rel_id,
                {
                    "id": rel_id,
                    "in": subject,
                    "out": obj,
                    "predicate": predicate,
                    "confidence": float(confidence),
                    "valid_from": valid_from,
                    "provenance": provenance,
                    "created_at": now,
                },
            )
        links = self._inferred_links(drawer_id, list(relationships.values()), now, predecessor)
        marker = {
            "drawer": drawer_id,
            "extractor": extractor,
            "entities": len(mentions),
            "relations": len(relationships),
            "extracted_at": now,
        }
        if job_id is not None:
            marker["job"] = job_id
        for row in mentions.values():
            if row["provenance"] is None:
                del row["provenance"]
        self.repository.record_extraction(
            list(mentions.values()), list(relationships.values()), links, marker
        )
        touched = set(mentions) | {r["in"] for r in relationships.values()}
        touched |= {r["out"] for r in relationships.values()}
        for entity_id in sorted(touched):
            self.events.publish("entity", "updated", id=entity_id)
        return len(mentions), len(relationships)

    @staticmethod
    def _provenance(
        drawer: Mapping[str, Any], extractor: str, job_id: str | None, at: dt.datetime
    ) -> dict[str, Any]:
        """FactProvenance: the drawer, who read it, when, and the drawer's mining origin."""
        provenance: dict[str, Any] = {
            "drawer": drawer["id"],
            "extractor": extractor,
            "job_id": job_id,
            "extracted_at": at,
        }
        origin = (drawer.get("source") or {}).get("origin")
        if isinstance(origin, Mapping):
            view = {
                key: origin.get(key)
                for key in ("source_id", "source", "document", "chunk", "revision")
            }
            view["provider"] = origin.get("source")
            for key in ("metadata", "occurred_at"):
                if origin.get(key) is not None:
                    view[key] = origin[key]
            provenance["origin"] = view
        return provenance

    def _inferred_links(
        self,
        drawer_id: str,
        relationships: list[dict[str, Any]],
        at: dt.datetime,
        predecessor: str | None = None,
    ) -> list[dict[str, Any]]:
        """`confirms` (same object) and `contradicts` (another object of a single-valued
        predicate) against assertions with the same subject and predicate from a different
        evidence drawer, whose validity overlaps: two beliefs that never held at the same
        instant neither confirm nor contradict each other. The facts of the `predecessor` drawer
        are never contradicted: the successor's facts supersede them (a revision replaces what
        it said), and a contradiction too would show both as conflicting in the interval
        between the edit (the successor's `occurred_at`) and the re-mining that closed them."""
        queries: list[tuple[str, str, str | None]] = []
        for row in relationships:
            single = row["predicate"] in SINGLE_VALUED
            queries.append((row["in"], row["predicate"], None if single else row["out"]))
        found = self.repository.peers(queries)
        links: dict[str, dict[str, Any]] = {}
        for row, peers in zip(relationships, found, strict=True):
            for peer in peers:
                evidence = _evidence(peer)
                if peer["id"] == row["id"] or evidence == drawer_id or not _overlaps(row, peer):
                    continue
                if peer["out"] == row["out"]:
                    kind = "confirms"
                elif row["predicate"] in SINGLE_VALUED and (
                    predecessor is None or evidence != predecessor
                ):
                    kind = "contradicts"
                else:
                    continue
                link = fact_link(
                    kind,
                    "inferred",
                    row["id"],
                    peer["id"],
                    reason=REASONS[kind],
                    at=at,
                    evidence=drawer_id,
                )
                links.setdefault(link["id"], link)
        return list(links.values())

    def close_facts_of(self, drawer_id: str, at: dt.datetime) -> list[dict[str, Any]]:
        """Close the open facts extracted from a drawer that stopped being current, at the
        instant it did. Returns them closed."""
        closed = self.repository.close_facts_of(drawer_id, at)
        for entity_id in sorted({r["in"] for r in closed} | {r["out"] for r in closed}):
            self.events.publish("entity", "updated", id=entity_id)
        return [relationship_view(row) for row in closed]

    def link_successor_facts(self, old_drawer_id: str, new_drawer_id: str) -> int:
        """Link each fact read from the successor drawer `supersedes` the predecessor's facts
        with the same subject and predicate (explicit drawer lineage only). Returns the links
        made (a replay finds them made)."""
        old = self.repository.facts_of_drawer(old_drawer_id)
        new = self.repository.facts_of_drawer(new_drawer_id)
        now = self.clock()
        links = {}
        ends: set[str] = set()
        for successor in new:
            for predecessor in old:
                if (successor["in"], successor["predicate"]) != (
                    predecessor["in"],
                    predecessor["predicate"],
                ):
                    continue
                link = fact_link(
                    "supersedes",
                    "inferred",
                    successor["id"],
                    predecessor["id"],
                    reason=REASONS["supersedes"],
                    at=now,
                    evidence=new_drawer_id,
                )
                links[link["id"]] = link
                ends.update((successor["in"], successor["out"], predecessor["out"]))
        self.repository.insert_links(list(links.values()))
        # The predecessor's facts now read `superseded`: their entities changed.
        self._announce(*ends)
        return len(links)

    # Writers: a checkpoint's fact (graph.md section 2, palace.md section 4)

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
                return self._entity(str(raw["id"]))["id"]
            name, kind = raw.get("name"), label(raw.get("kind", resolution.OTHER), f"{field}.kind")
        else:
            name, kind = raw, resolution.OTHER
        if not isinstance(name, str) or not name.strip():
            raise InputInvalid(field, "must name an entity (a name, an entity id or {name, kind})")
        if is_uuid(name.strip()):
            found = self.repository.entity(str(uuid.UUID(name.strip())))
            if found is not None:
                return found["id"]
        return self.resolve(name, kind).entity["id"]

    def _relationship(self, relationship_id: str) -> dict[str, Any]:
        found = self.repository.relationships_by_ids([relationship_id]).get(relationship_id)
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
        self.repository.insert_relationships([row])
        self._announce(subject, obj)
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
        replacement = {
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
        self.repository.supersede(target["id"], replacement, link, now)
        self._announce(target["in"], target["out"], subject, obj)
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
        self.repository.invalidate(target["id"], link, now)
        self._announce(target["in"], target["out"])
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
        self.repository.insert_links([link])
        self._announce(first["in"], first["out"], second["in"], second["out"])
        return {"op": "link", "link": link["id"]}

    def _announce(self, *entity_ids: str) -> None:
        for entity_id in sorted(set(entity_ids)):
            self.events.publish("entity", "updated", id=entity_id)

    # Reads (graph.md section 7)

    def _entity(self, entity_id: str) -> dict[str, Any]:
        found = self.repository.entity(parse_uuid(entity_id, "id"))
        if found is None:
            raise EntityNotFound(f"entity {entity_id!r} does not exist")
        return found

    def list_entities(
        self, ctx: RequestContext, *, name: object = None, kind: object = None, limit: object = None
    ) -> dict[str, Any]:
        ctx.require_read("list_entities")
        size = parse_limit(limit, default=ENTITY_LIST_LIMIT)
        if name is not None and not isinstance(name, str):
            raise InputInvalid("name", "must be a string")
        if kind is not None and not isinstance(kind, str):
            raise InputInvalid("kind", "must be a string")
        kind_label = kind.strip().lower() if kind else None
        rows = self.repository.list_entities(name or None, kind_label or None, size)
        return {"entities": [entity_view(row) for row in rows], "limit": size}

    def show_entity(self, ctx: RequestContext, entity_id: str) -> dict[str, Any]:
        ctx.require_read("show_entity")
        entity = self._entity(entity_id)
        return {**entity_view(entity), "counts": self.repository.entity_counts(entity["id"])}

    def relationships(
        self,
        ctx: RequestContext,
        entity_id: str,
        *,
        include_expired: object = None,
        as_of: object = None,
    ) -> dict[str, Any]:
        """An entity's assertions (either end), each with its lifecycle: those valid now, all of
        them with `include_expired`, or those valid at `as_of` with their state then."""
        ctx.require_read("entity_relationships")
        expired = _flag(include_expired, "include_expired")
        instant = _instant(as_of)
        if expired and instant is not None:
            raise InputInvalid(
                "as_of",
                "cannot be combined with `include_expired`: as_of and include_expired "
                "each say which relationships to read",
            )
        key = parse_uuid(entity_id, "id")
        found = self.repository.entity_graph(key)
        if not found or found.get("entity") is None:
            raise EntityNotFound(f"entity {entity_id!r} does not exist")
        at = instant or self.clock()
        rows = {row["id"]: row for row in found["relationships"]}
        if not expired:
            rows = {k: row for k, row in rows.items() if lifecycle.is_open(row, at)}
        assertions = {
            **{r["id"]: r for r in found["peers"]},
            **{r["id"]: r for r in found["relationships"]},
        }
        listed = self._with_lifecycle(list(rows.values()), found["links"], assertions, at)
        return {
            "entity": entity_view(found["entity"]),
            "as_of": instant,
            "include_expired": expired,
            "relationships": listed,
            "entities": {row["id"]: entity_ref(row) for row in found["entities"]},
        }

    @staticmethod
    def _with_lifecycle(
        rows: list[Mapping[str, Any]],
        links: list[Mapping[str, Any]],
        assertions: Mapping[str, Mapping[str, Any]],
        at: dt.datetime,
    ) -> list[dict[str, Any]]:
        by_assertion: dict[str, list[Mapping[str, Any]]] = {}
        for link in {link["id"]: link for link in links}.values():
            by_assertion.setdefault(link["from_id"], []).append(link)
            if link["to_id"] != link["from_id"]:
                by_assertion.setdefault(link["to_id"], []).append(link)
        ordered = sorted(rows, key=lambda row: (row["valid_from"], row["id"]))
        return [
            {
                **relationship_view(row),
                "lifecycle": lifecycle.lifecycle(
                    row, by_assertion.get(row["id"], []), assertions, at
                ),
            }
            for row in ordered
        ]

    def mentions(
        self, ctx: RequestContext, entity_id: str, *, limit: object = None
    ) -> dict[str, Any]:
        """The drawers that mention an entity, with each mention's provenance and observation."""
        ctx.require_read("entity_mentions")
        size = parse_limit(limit, default=MENTION_LIST_LIMIT)
        entity = self._entity(entity_id)
        edges = self.repository.mentions_of(entity["id"], size)
        drawers = self.repository.drawer_listings(edge["in"] for edge in edges)
        listed = []
        for edge in edges:
            drawer = drawers.get(edge["in"])
            if drawer is None:
                continue
            entry: dict[str, Any] = {
                "drawer": drawer_listing_view(drawer),
                "observation": edge.get("observation"),
                "created_at": edge.get("created_at"),
            }
            if edge.get("provenance"):
                entry["provenance"] = edge["provenance"]
            listed.append(entry)
        return {"entity": entity_view(entity), "mentions": listed}

    def candidates(self, ctx: RequestContext, entity_id: str) -> dict[str, Any]:
        """The entities that may be this one under another spelling (`possibly_same_as`)."""
        ctx.require_read("entity_candidates")
        entity = self._entity(entity_id)
        edges = self.repository.candidates_of(entity["id"])
        others = self.repository.entities_by_ids(
            edge["out"] if edge["in"] == entity["id"] else edge["in"] for edge in edges
        )
        listed = []
        for edge in edges:
            older = edge["in"] == entity["id"]
            other = others.get(edge["out"] if older else edge["in"])
            if other is None:
                continue
            listed.append(
                {
                    "entity": entity_view(other),
                    "side": "older" if older else "newer",
                    "similarity": edge.get("similarity"),
                    "created_at": edge.get("created_at"),
                }
            )
        return {"entity": entity_view(entity), "candidates": listed}

    def history(
        self, ctx: RequestContext, relationship_id: str, *, as_of: object = None
    ) -> dict[str, Any]:
        """An assertion and every assertion reachable from it over fact links (a bounded walk
        of 100 rounds), ordered by the start of validity, each with its lifecycle; with
        `as_of`, at that instant, without the assertions that start after it."""
        ctx.require_read("fact_history")
        instant = _instant(as_of)
        key = parse_uuid(relationship_id, "id")
        start = self._relationship(key)
        seen = {start["id"]}
        frontier = {start["id"]}
        links: dict[str, Mapping[str, Any]] = {}
        for _ in range(HISTORY_ROUNDS):
            found = self.repository.links_touching(frontier)
            for link in found:
                links[link["id"]] = link
            reached = {end for link in found for end in (link["from_id"], link["to_id"])}
            frontier = reached - seen
            if not frontier:
                break
            seen |= frontier
        assertions = self.repository.relationships_by_ids(seen)
        at = instant or self.clock()
        kept = [
            row for row in assertions.values() if instant is None or row["valid_from"] <= instant
        ]
        listed = self._with_lifecycle(kept, list(links.values()), assertions, at)
        ends = self.repository.entities_by_ids(
            end for row in assertions.values() for end in (row["in"], row["out"])
        )
        return {
            "relationship": start["id"],
            "as_of": instant,
            "assertions": listed,
            "entities": {k: entity_ref(row) for k, row in sorted(ends.items())},
        }

    def overview(
        self,
        ctx: RequestContext,
        *,
        entity: object = None,
        depth: object = None,
        limit: object = None,
        as_of: object = None,
    ) -> dict[str, Any]:
        """The graph at a glance (counts and the most connected entities), or with `entity`
        the neighbourhood of an entity up to `depth` (1 to 3) hops over the relationships
        valid now (or at `as_of`)."""
        ctx.require_read("graph")
        instant = _instant(as_of)
        if entity is None or entity == "":
            if depth not in (None, ""):
                raise InputInvalid("depth", "needs `entity`")
            size = parse_limit(limit, default=OVERVIEW_TOP)
            counts = self.repository.overview()
            degree = counts.pop("degree")
            top = sorted(degree.items(), key=lambda item: (-item[1], item[0]))[:size]
            rows = self.repository.entities_by_ids(entity_id for entity_id, _ in top)
            return {
                "counts": counts,
                "top": [
                    {**entity_view(rows[entity_id]), "relationships": n}
                    for entity_id, n in top
                    if entity_id in rows
                ],
            }
        if not isinstance(entity, str):
            raise InputInvalid("entity", "must be an entity id")
        hops = _depth(depth)
        size = parse_limit(limit, default=NEIGHBOURHOOD_LIMIT)
        center = self._entity(entity)
        at = instant or self.clock()
        reached = {center["id"]: 0}
        frontier = {center["id"]}
        relationships: dict[str, dict[str, Any]] = {}
        truncated = False
        for hop in range(1, hops + 1):
            found = [
                row
                for row in self.repository.relationships_around(frontier)
                if lifecycle.is_open(row, at)
            ]
            following: set[str] = set()
            for row in sorted(found, key=lambda row: (row["valid_from"], row["id"])):
                ends = [end for end in (row["in"], row["out"]) if end not in reached]
                if len(reached) + len(set(ends)) > size:
                    truncated = True
                    continue
                for end in ends:
                    reached[end] = hop
                    following.add(end)
                relationships[row["id"]] = row
            frontier = following
            if not frontier:
                break
        links = self.repository.links_touching(relationships)
        peer_ids = {e for link in links for e in (link["from_id"], link["to_id"])} - set(
            relationships
        )
        assertions = {**self.repository.relationships_by_ids(peer_ids), **relationships}
        rows = self.repository.entities_by_ids(reached)
        return {
            "entity": entity_view(center),
            "depth": hops,
            "as_of": instant,
            "entities": [
                {**entity_view(rows[k]), "distance": reached[k]}
                for k in sorted(
                    reached, key=lambda k: (reached[k], rows[k]["name"] if k in rows else "", k)
                )
                if k in rows
            ],
            "relationships": self._with_lifecycle(
                list(relationships.values()), links, assertions, at
            ),
            "truncated": truncated,
        }


def _flag(raw: object, field: str) -> bool:
    if raw is None or raw == "":
        return False
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes"):
        return True
    if isinstance(raw, str) and raw.strip().lower() in ("false", "0", "no"):
        return False
    raise InputInvalid(field, f"must be true or false (got {raw!r})")


def _instant(raw: object) -> dt.datetime | None:
    if raw is None or raw == "":
        return None
    return parse_instant(raw, "as_of")


def _depth(raw: object) -> int:
    if raw is None or raw == "":
        return 1
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InputInvalid("depth", f"must be 1, 2 or 3 (got {raw!r})") from None
    if not 1 <= value <= MAX_DEPTH:
        raise InputInvalid("depth", f"must be 1, 2 or 3 (got {raw!r})")
    return value
