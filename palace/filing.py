"""Filing drawers: every writer's way to store one (REST, notes, diary) or many (checkpoint and
mine jobs), and the deduplication that comes with it.

A batch is judged first (`prepare_batch`: one read for every entry's likely copies and name
holders), then written in one transaction (`write_batch`). An exact copy of an unnamed drawer
already valid in its room is not stored again; other likely copies are stored and linked with
`similar_to` (docs/concepts.md, "Deduplication").
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.clock import utc_now
from kernel.config import DedupConfig
from kernel.context import RequestContext
from kernel.errors import Conflict, MemCastleError
from kernel.events import EventBus
from kernel.store import Statement, UniqueViolation
from kernel.validation import body_object, parse_instant, refuse_unknown, string_list
from palace import dedup, drawers
from palace.drawers import announce
from palace.hierarchy import HierarchyService
from palace.names import check_drawer_name
from palace.repositories.filing import FilingRepository
from palace.shapes import DrawerDuplicates, DrawerFiled, drawer_values

DRAWER_FIELDS = ("content", "name", "tags", "source", "valid_from", "requested_by")
# How many rooms writes keep by the references they named them by. Resolving a batch's rooms by
# name was a round trip of 2.6 ms for a 10-item checkpoint job (a tenth of its time); a kept
# room is checked in the batch's first read instead, at no extra round trip. Past this many
# (mining into a room per document can name many) they are all dropped and resolved again.
PLACES_KEPT = 4096
# Drawers given their deduplication keys per query at start-up.
BACKFILL_BATCH = 500


class DrawerNameTaken(Conflict):
    code = "memcastle::palace::drawer_name_taken"
    help = "choose another name, or supersede the existing drawer to correct it"


@dataclass(frozen=True)
class Filing:
    """A drawer to file. `drawer_id` is a job's derived id; `agent` narrows duplicates to one
    agent's diary; `keep_copy` stores an exact copy anyway (a fact needs its own evidence)."""

    content: str
    name: str | None = None
    tags: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=lambda: {"kind": "manual"})
    valid_from: dt.datetime | None = None
    drawer_id: str | None = None
    job_id: str | None = None
    agent: str | None = None
    keep_copy: bool = False


@dataclass(frozen=True)
class Filed:
    """What filing one drawer came to: the drawer (new, or the copy that made it a no-op),
    whether it was created, or the error that kept it from being filed."""

    drawer: dict[str, Any] | None
    created: bool
    error: MemCastleError | None = None
    # How many likely copies the new drawer was linked to.
    similar: int = 0


@dataclass(frozen=True)
class Batch:
    """Entries judged and not yet written: what each will come to, and the new drawers with
    their `similar_to` links to older ones."""

    entries: list[tuple[str, str, Filing]]
    outcomes: list[Filed] = field(default_factory=list)
    new: list[tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]] = field(default_factory=list)


# What `FilingService.write_batch` returns for a `then` it did not run.
NOT_RUN = object()


class FilingService:
    def __init__(
        self,
        repository: FilingRepository,
        hierarchy: HierarchyService,
        events: EventBus | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
        dedup_config: DedupConfig | None = None,
    ) -> None:
        self._repository = repository
        self.hierarchy = hierarchy
        self.dedup = dedup_config or DedupConfig()
        # Every write is announced once saved; a service without subscribers announces to none.
        self.events = events or EventBus()
        self.clock = clock
        # Rooms by the `(wing, room)` references writes named them by, kept across writes.
        self._places: dict[tuple[str, str], dict[str, Any]] = {}

    def create_drawer(
        self, ctx: RequestContext, wing_ref: str, room_ref: str, data: object
    ) -> dict[str, Any]:
        """File a drawer; an identical one already there answers `created: false`.

        A named drawer whose name is held by other content is refused; an unnamed drawer whose
        exact content is already valid in the room is not stored twice.
        """
        ctx.require_write("create_drawer")
        body = body_object(data)
        refuse_unknown(body, DRAWER_FIELDS)
        filing = Filing(
            content=drawers.check_content(body.get("content")),
            name=check_drawer_name(body["name"]) if body.get("name") is not None else None,
            tags=string_list(body, "tags") or [],
            source=drawers.parse_source(body.get("source")),
            valid_from=(
                parse_instant(body["valid_from"], "valid_from")
                if body.get("valid_from") is not None
                else None
            ),
        )
        drawer, created = self.file(ctx, wing_ref, room_ref, filing)
        return DrawerFiled.render({**drawer_values(drawer), "created": created})

    def file(
        self, ctx: RequestContext, wing_ref: str, room_ref: str, filing: Filing
    ) -> tuple[dict[str, Any], bool]:
        """Store a drawer, creating its wing and room when missing; `(drawer, created)`.

        The one way every writer files a drawer (REST, notes, diary; checkpoint jobs file
        batches with `file_batch`). The caller has checked the memory mode. An exact copy of an
        unnamed drawer already valid in the room (of the same agent, for a diary) is not stored
        again: that drawer is returned with `created` false. Other likely copies are stored and
        linked with `similar_to`, in the same transaction as the drawer.
        """
        (filed,) = self.file_batch(ctx, [(wing_ref, room_ref, filing)])
        if filed.error is not None:
            raise filed.error
        assert filed.drawer is not None
        return filed.drawer, filed.created

    def file_batch(
        self, ctx: RequestContext, entries: list[tuple[str, str, Filing]]
    ) -> list[Filed]:
        """File several drawers in one transaction, each judged as `file` would, also against
        the ones before it in the batch. An entry that cannot be filed (a name held by other
        content) carries its error and does not stop the others."""
        return self.write_batch(ctx, self.prepare_batch(ctx, entries))[0]

    def prepare_batch(self, ctx: RequestContext, entries: list[tuple[str, str, Filing]]) -> Batch:
        """Judge a batch (`file_batch`) without writing it: what each entry will come to."""
        rooms, cached = self._rooms_of(entries)
        records = [
            self.record(ctx, room, filing)
            for room, (_, _, filing) in zip(rooms, entries, strict=True)
        ]
        read = self._repository.before_filing(
            [(record, entry[2].agent) for record, entry in zip(records, entries, strict=True)]
            if self.dedup.enabled
            else [],
            names=(
                (room["id"], filing.name)
                for room, (_, _, filing) in zip(rooms, entries, strict=True)
                if filing.name is not None
            ),
            rooms=cached,
        )
        if cached - read.rooms:
            # A kept room deleted since is resolved again, by name, rather than written into.
            self._forget_places(cached - read.rooms)
            return self.prepare_batch(ctx, entries)
        stored_candidates = read.candidates if self.dedup.enabled else [[] for _ in records]
        batch = Batch(entries)
        earlier = dedup.EarlierInBatch()
        for record, room, (_, _, filing), stored in zip(
            records, rooms, entries, stored_candidates, strict=True
        ):
            candidates = stored
            if self.dedup.enabled:
                candidates = [*stored, *earlier.candidates(record, filing.agent)]
            try:
                existing = self._existing_copy(
                    room, filing, record, candidates, earlier, read.holders
                )
            except DrawerNameTaken as error:
                batch.outcomes.append(Filed(None, False, error))
                continue
            if existing is not None:
                batch.outcomes.append(Filed(existing, False))
                continue
            links = self._links(record, candidates)
            batch.new.append((record, links))
            earlier.add(record)
            batch.outcomes.append(Filed(record, True, similar=len(links)))
        return batch

    def write_batch(
        self, ctx: RequestContext, batch: Batch, then: Statement | None = None
    ) -> tuple[list[Filed], Any]:
        """Write a prepared batch in one transaction, and `then` at its end (a write that must
        commit with it); returns what each entry came to and what `then` returned.

        When another request took a name since the batch was judged, the entries are filed
        again one by one, and `then`, which may count on outcomes that changed, is not run
        (`NOT_RUN`)."""
        if not batch.new and then is None:
            return batch.outcomes, None
        try:
            ran = self._repository.create_drawers(batch.new, then)
        except UniqueViolation:
            if len(batch.entries) == 1:
                return self.file_batch(ctx, batch.entries), NOT_RUN
            return [self.file_batch(ctx, [entry])[0] for entry in batch.entries], NOT_RUN
        for record, _ in batch.new:
            announce(self.events, record, "created")
        return batch.outcomes, ran

    def _rooms_of(self, entries: list[tuple[str, str, Filing]]) -> tuple[list[dict], set[str]]:
        """The room of each entry, created when missing, and the ids of those that came from
        the rooms kept from earlier writes (which the caller checks still exist)."""
        wanted = {(wing, room) for wing, room, _ in entries}
        places = {place: room for place in wanted if (room := self._places.get(place))}
        cached = {room["id"] for room in places.values()}
        missing = wanted - set(places)
        if missing:
            # Existing rooms by name, all in one query; the rest one by one (created, or named by
            # id).
            found = self.hierarchy.rooms_by_names(missing)
            for place in missing - set(found):
                found[place] = self.hierarchy.ensure_place(*place)[0]
            if len(self._places) + len(found) > PLACES_KEPT:
                self._places.clear()
            self._places.update(found)
            places.update(found)
        return [places[(wing, room)] for wing, room, _ in entries], cached

    def _forget_places(self, room_ids: set[str]) -> None:
        """Drop kept rooms that were deleted, so the next write resolves them again."""
        for place, room in list(self._places.items()):
            if room["id"] in room_ids:
                self._places.pop(place, None)

    def record(
        self, ctx: RequestContext, room: Mapping[str, Any], filing: Filing
    ) -> dict[str, Any]:
        """The drawer `filing` comes to in `room` (its `id` and `wing`), as it will be stored."""
        now = self.clock()
        record: dict[str, Any] = {
            "id": filing.drawer_id or str(uuid.uuid4()),
            "wing": room["wing"],
            "room": room["id"],
            **drawers.derived(filing.content),
            "source": filing.source,
            "tags": filing.tags,
            "provenance": {"requested_by": ctx.requested_by, "job_id": filing.job_id},
            "valid_from": filing.valid_from or now,
            "created_at": now,
            "updated_at": now,
        }
        if filing.name is not None:
            record["name"] = filing.name
        return record

    def _existing_copy(
        self,
        room: Mapping[str, Any],
        filing: Filing,
        record: Mapping[str, Any],
        candidates: list[dict[str, Any]],
        earlier: dedup.EarlierInBatch,
        holders: Mapping[tuple[str, str], dict[str, Any]],
    ) -> dict[str, Any] | None:
        """The drawer that makes this write a no-op, or None; a name held by other content
        (stored: `holders` by room and name, or earlier in the batch) raises
        `DrawerNameTaken`."""
        digest = record["content_hash"]
        if filing.name is None:
            if filing.keep_copy or not self.dedup.enabled:
                return None
            copies = [row for row in candidates if row["content_hash"] == digest]
            return min(copies, key=lambda row: row["created_at"]) if copies else None
        holder = earlier.named(room["id"], filing.name) or holders.get((room["id"], filing.name))
        if holder is None:
            return None
        if holder["content_hash"] != digest:
            raise DrawerNameTaken(
                f"drawer name {filing.name!r} in room {room['name']!r} holds other content"
            )
        return holder

    def _links(
        self, record: Mapping[str, Any], candidates: list[dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """The `similar_to` edges from a new drawer to the likely copies among `candidates`."""
        if not candidates:
            return []
        normalized = dedup.normalize(record["content"])
        links = []
        for older in candidates:
            verdict = dedup.judge(record, older, self.dedup.near_threshold, normalized)
            if verdict is None:
                continue
            edge = {
                "kind": verdict.kind,
                "similarity": verdict.similarity,
                "signals": verdict.signals,
                "created_at": record["created_at"],
            }
            links.append((older["id"], edge))
        return links

    def link_copies(self, drawer: Mapping[str, Any]) -> int:
        """Link a drawer stored outside a batch (a revision's replacement) to its likely copies
        in its room, as filing it would have; returns how many."""
        if not self.dedup.enabled:
            return 0
        (candidates,) = self._repository.before_filing([(drawer, None)]).candidates
        links = self._links(drawer, candidates)
        for older, edge in links:
            self._repository.link_similar(drawer["id"], older, edge)
        return len(links)

    def backfill_dedup_keys(self) -> int:
        """Give drawers filed before deduplication their blocking keys; run at start-up."""
        filled = 0
        while rows := self._repository.drawers_without_dedup_keys(BACKFILL_BATCH):
            self._repository.set_dedup_keys(
                [
                    {
                        "id": row["id"],
                        "room": row["room"],
                        "fingerprint": row["fingerprint"],
                        **dedup.blocking_keys(row["content"]),
                    }
                    for row in rows
                ]
            )
            filled += len(rows)
        return filled

    def duplicates(self, ctx: RequestContext, drawer_id: str) -> dict[str, Any]:
        """The drawers linked to this one as likely copies, older and newer."""
        ctx.require_read("duplicates")
        drawer = self.hierarchy.drawer(drawer_id)
        edges = self._repository.similar_edges(drawer["id"])
        others = self.hierarchy.drawers_by_ids(
            edge["out"] if edge["in"] == drawer["id"] else edge["in"] for edge in edges
        )
        similar = []
        for edge in edges:
            older = edge["in"] == drawer["id"]
            other = others.get(edge["out"] if older else edge["in"])
            if other is None:
                continue
            similar.append(
                {
                    "drawer": drawer_values(other),
                    "side": "older" if older else "newer",
                    "kind": edge["kind"],
                    "similarity": edge["similarity"],
                    "signals": edge["signals"],
                    "created_at": edge["created_at"],
                }
            )
        return DrawerDuplicates.render({"drawer": drawer_values(drawer), "similar": similar})
