"""What the extract job reads and records (graph.md section 3): the extraction records.

The job selects its drawers here: the current mined drawers and notes, those already read (a
`drawer_extraction` marker each), those that stopped being current. For each drawer it reads it
records the entities its names resolve to (`mentions`, with the observation and the
provenance), its relations (`relates_to`, under ids derived from the drawer and the fact), the
lifecycle links inferred against other drawers' assertions, and last the drawer's marker, in one
transaction. A drawer that stopped being current has its open facts closed at the instant it
did, and the facts of a drawer that replaced one read before are linked `supersedes` the
predecessor's. A replay writes nothing twice.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graph import resolution
from graph.entities import MAX_NAME_CHARS, EntityService, Resolution, announce_updated
from graph.facts import fact_link, relationship_values
from graph.repositories.extraction import ExtractionRepository
from graph.repositories.records import derived_id
from kernel.clock import utc_now
from kernel.events import EventBus

SINGLE_VALUED = ("located_in",)
REASONS = {
    "confirms": "v1: same resolved subject, predicate and object",
    "contradicts": "v1: different objects for a single-valued predicate",
    "supersedes": "v1: successor drawer replaced this source's earlier assertion",
}


def _overlaps(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    a_end, b_end = a.get("valid_to"), b.get("valid_to")
    return (b_end is None or a["valid_from"] < b_end) and (a_end is None or b["valid_from"] < a_end)


def _evidence(row: Mapping[str, Any]) -> str | None:
    """The drawer an assertion stands on: the extractor's drawer or the asserting checkpoint."""
    if row.get("assertion") is not None:
        return row["assertion"]
    return (row.get("provenance") or {}).get("drawer")


@dataclass(frozen=True)
class _Names:
    """The names of one answer, each with what it resolved to (`resolved`), and the first name
    of each key (`by_key`), so a relation that spells a name another way finds its entity."""

    resolved: dict[str, Resolution]
    by_key: dict[str, str]

    def entity_of(self, name: object) -> str | None:
        text = str(name or "").strip()
        found = self.resolved.get(text) or self.resolved.get(
            self.by_key.get(resolution.key(text), "")
        )
        return found.entity["id"] if found else None


def _mention_rows(
    drawer_id: str, names: _Names, provenance: dict[str, Any], at: dt.datetime
) -> list[dict[str, Any]]:
    """One `mentions` edge per entity the drawer's names resolved to, observing the first name
    that resolved to it."""
    rows: dict[str, dict[str, Any]] = {}
    for name, found in names.resolved.items():
        entity_id = found.entity["id"]
        if entity_id in rows:
            continue
        rows[entity_id] = {
            "id": derived_id("mentions", drawer_id, entity_id),
            "in": drawer_id,
            "out": entity_id,
            "observation": {"name": name, "rule": found.rule, "confidence": found.confidence},
            "provenance": provenance,
            "created_at": at,
        }
    return list(rows.values())


def _relationship_rows(
    drawer_id: str,
    relations: list[dict],
    names: _Names,
    valid_from: dt.datetime,
    provenance: dict[str, Any],
    at: dt.datetime,
) -> list[dict[str, Any]]:
    """One `relates_to` edge per distinct relation between two of the drawer's entities, under
    an id derived from the drawer and the fact. A relation naming no entity of the answer at an
    end, the same entity at both, no predicate, or a confidence that is not a finite number is
    left out."""
    rows: dict[str, dict[str, Any]] = {}
    for relation in relations:
        subject = names.entity_of(relation.get("subject"))
        obj = names.entity_of(relation.get("object"))
        predicate = str(relation.get("predicate") or "").strip().lower()
        if subject is None or obj is None or subject == obj or not predicate:
            continue
        confidence = relation.get("confidence")
        if not isinstance(confidence, (int, float)) or not math.isfinite(confidence):
            continue
        row_id = derived_id("extracted", drawer_id, subject, predicate, obj)
        rows.setdefault(
            row_id,
            {
                "id": row_id,
                "in": subject,
                "out": obj,
                "predicate": predicate,
                "confidence": float(confidence),
                "valid_from": valid_from,
                "provenance": provenance,
                "created_at": at,
            },
        )
    return list(rows.values())


class ExtractionRecords:
    def __init__(
        self,
        repository: ExtractionRepository,
        entities: EntityService,
        events: EventBus | None = None,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self._repository = repository
        self._entities = entities
        self.events = events or EventBus()
        self.clock = clock

    # What the job selects

    def read_drawers(self) -> set[str]:
        """The drawers read already (they have a `drawer_extraction` marker)."""
        return self._repository.read_drawers()

    def readable(self, wing_id: str | None) -> list[tuple[Any, str]]:
        """`(created_at, id)` of every current mined drawer and note, of one wing or all."""
        return self._repository.readable(wing_id)

    def closed_drawers(self, wing_id: str | None) -> list[dict[str, Any]]:
        """`{id, valid_to}` of every drawer that stopped being current (not in the future), of
        one wing or all."""
        return self._repository.closed_drawers(wing_id)

    def with_open_facts(self, drawer_ids: list[str]) -> set[str]:
        """Those of `drawer_ids` that some open extracted fact was read from."""
        return self._repository.with_open_facts(drawer_ids)

    def drawers(self, drawer_ids: Iterable[str], *, content: bool = False) -> dict[str, dict]:
        """The drawers as the job reads them (id, place, name, source, validity, lineage,
        creation; with `content`, their text too), by id."""
        return self._repository.drawers(drawer_ids, content=content)

    def documents(self, keys: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
        """`{id, revision, occurred_at}` of the mined documents of these `(source_id, document)`
        keys (an `id` is its key as a list)."""
        return self._repository.documents(keys)

    def is_read(self, drawer_id: str) -> bool:
        """Whether the drawer was read already."""
        return self._repository.is_read(drawer_id)

    def any_note(self, drawer_ids: list[str]) -> bool:
        """Whether one of the drawers is a note."""
        return self._repository.any_note(drawer_ids)

    def marked_by(self, job_id: str) -> list[str]:
        """The drawers that job read."""
        return self._repository.marked_by(job_id)

    # What the job records

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
        drawer_id = drawer["id"]
        names = self._resolve_names(entities)
        provenance = self._provenance(drawer, extractor, job_id, now)
        mentions = _mention_rows(drawer_id, names, provenance, now)
        relationships = _relationship_rows(
            drawer_id, relations, names, min(valid_from, now), provenance, now
        )
        links = self._inferred_links(drawer_id, relationships, now, predecessor)
        marker = {
            "drawer": drawer_id,
            "extractor": extractor,
            "entities": len(mentions),
            "relations": len(relationships),
            "extracted_at": now,
        }
        if job_id is not None:
            marker["job"] = job_id
        self._repository.record_extraction(mentions, relationships, links, marker)
        touched = {row["out"] for row in mentions}
        touched |= {end for row in relationships for end in (row["in"], row["out"])}
        announce_updated(self.events, touched)
        return len(mentions), len(relationships)

    def _resolve_names(self, entities: list[dict]) -> _Names:
        """Resolve the names of one answer, each once, with the first kind given for it."""
        observations: dict[str, str] = {}
        for item in entities:
            name = str(item.get("name") or "").strip()
            kind = str(item.get("kind") or "").strip() or resolution.OTHER
            if name and len(name) <= MAX_NAME_CHARS and name not in observations:
                observations[name] = kind
        found = self._entities.resolve_many(list(observations.items()), remembered=True)
        by_key: dict[str, str] = {}
        for name in observations:
            by_key.setdefault(resolution.key(name), name)
        return _Names(dict(zip(observations, found, strict=True)), by_key)

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
        found = self._repository.peers(queries)
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
        closed = self._repository.close_facts_of(drawer_id, at)
        announce_updated(self.events, {r["in"] for r in closed} | {r["out"] for r in closed})
        return [relationship_values(row) for row in closed]

    def link_successor_facts(self, old_drawer_id: str, new_drawer_id: str) -> int:
        """Link each fact read from the successor drawer `supersedes` the predecessor's facts
        with the same subject and predicate (explicit drawer lineage only). Returns the links
        made (a replay finds them made)."""
        old = self._repository.facts_of_drawer(old_drawer_id)
        new = self._repository.facts_of_drawer(new_drawer_id)
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
        self._repository.insert_links(list(links.values()))
        # The predecessor's facts now read `superseded`: their entities changed.
        announce_updated(self.events, ends)
        return len(links)
