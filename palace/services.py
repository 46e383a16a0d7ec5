"""Application services for the palace hierarchy: wings, rooms and drawers.

REST views (and later MCP tools and CLI commands) call these and nothing below them. Each public
method checks the memory mode first, then validates, then touches the store.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobs import kinds
from kernel.clock import utc_now
from kernel.config import DedupConfig
from kernel.context import RequestContext
from kernel.errors import Conflict, InputInvalid, MemCastleError, NotFound
from kernel.events import EventBus
from kernel.store import Statement, UniqueViolation
from kernel.validation import (
    body_object,
    is_uuid,
    optional_text,
    parse_instant,
    parse_limit,
    parse_offset,
    parse_uuid,
    refuse_unknown,
    string_list,
)
from palace import dedup, drawers
from palace.drawers import drawer_listing_view, drawer_view
from palace.names import check_drawer_name, check_room_name, check_wing_name
from palace.repository import PalaceRepository

DRAWER_LIST_LIMIT = 50
SUPERSEDE_FIELDS = ("content", "tags", "requested_by")
# How many rooms writes keep by the references they named them by. Resolving a batch's rooms by
# name was a round trip of 2.6 ms for a 10-item checkpoint job (a tenth of its time); a kept
# room is checked in the batch's first read instead, at no extra round trip. Past this many
# (mining into a room per document can name many) they are all dropped and resolved again.
PLACES_KEPT = 4096
# Drawers given their deduplication keys per query at start-up.
BACKFILL_BATCH = 500
# The most versions a history walks in each direction.
HISTORY_LIMIT = 1000
DRAWER_FIELDS = ("content", "name", "tags", "source", "valid_from", "requested_by")
HIERARCHY_FIELDS = ("name", "description", "requested_by")


class WingNotFound(NotFound):
    code = "memcastle::palace::wing_not_found"
    help = "list the wings with GET /api/wings"


class RoomNotFound(NotFound):
    code = "memcastle::palace::room_not_found"
    help = "list the wing's rooms with GET /api/wings/{wing}/rooms"


class DrawerNotFound(NotFound):
    code = "memcastle::palace::drawer_not_found"
    help = "drawer ids come with every listing and search hit"


class PalaceBusy(Conflict):
    code = "memcastle::palace::busy"
    help = (
        "wait for the jobs that write to the palace (GET /api/jobs?status=running, queued, "
        "paused) to end, or cancel them, then delete again"
    )


class DrawerSuperseded(Conflict):
    code = "memcastle::palace::drawer_superseded"
    help = (
        "read the drawer's history (GET /api/drawers/{id}/history) and correct its newest version"
    )


class DrawerNameTaken(Conflict):
    code = "memcastle::palace::drawer_name_taken"
    help = "choose another name, or supersede the existing drawer to correct it"


def _required_name(data: Mapping[str, Any]) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InputInvalid("name", "is required and must be a non-empty string")
    return name


def wing_view(row: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, Any]:
    return {**row, "description": row.get("description"), "counts": dict(counts)}


def room_view(row: Mapping[str, Any], drawer_count: int) -> dict[str, Any]:
    return {**row, "description": row.get("description"), "counts": {"drawers": drawer_count}}


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


# What `PalaceService.write_batch` returns for a `then` it did not run.
NOT_RUN = object()


@dataclass(frozen=True)
class Revision:
    """A drawer closed and the replacement filed from the same instant."""

    closed: dict[str, Any]
    replacement: dict[str, Any]
    similar: int = 0


class PalaceService:
    def __init__(
        self,
        repository: PalaceRepository,
        events: EventBus | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
        dedup_config: DedupConfig | None = None,
    ) -> None:
        self.repository = repository
        self.dedup = dedup_config or DedupConfig()
        # Every write is announced once saved; a service without subscribers announces to none.
        self.events = events or EventBus()
        self.clock = clock
        # Rooms by the `(wing, room)` references writes named them by, kept across writes.
        self._places: dict[tuple[str, str], dict[str, Any]] = {}

    # Resolution: a wing or room is a name first, then a UUID; a drawer is a name or a UUID
    # within its room.

    def wing_parameter(self, raw: object) -> str | None:
        """A job's optional `wing`: the name of a wing that exists, checked at submission."""
        if raw is None:
            return None
        if not isinstance(raw, str) or not raw:
            raise InputInvalid("wing", "must be a wing's name")
        self.find_wing(raw)
        return raw

    def find_wing(self, ref: str) -> dict[str, Any]:
        wing = self.repository.wing_by_name(ref)
        if wing is None and is_uuid(ref):
            wing = self.repository.wing_by_id(str(uuid.UUID(ref)))
        if wing is None:
            raise WingNotFound(f"wing {ref!r} does not exist")
        return wing

    def resolve_place(
        self, wing_ref: str | None, room_ref: str | None
    ) -> tuple[str | None, tuple[str, ...] | None]:
        """The wing id and room ids a search is scoped to, from names (or ids). A room without
        a wing is every room of that name. An unknown wing or room is a 404 (api.md)."""
        wing = self.find_wing(wing_ref) if wing_ref is not None else None
        if room_ref is None:
            return (wing["id"] if wing else None), None
        if wing is not None:
            return wing["id"], (self._find_room(wing, room_ref)["id"],)
        rooms = self.repository.rooms_named(room_ref)
        if not rooms:
            raise RoomNotFound(f"no wing has a room named {room_ref!r}")
        return None, tuple(sorted(room["id"] for room in rooms))

    def _find_room(self, wing: Mapping[str, Any], ref: str) -> dict[str, Any]:
        room = self.repository.room_by_name(wing["id"], ref)
        if room is None and is_uuid(ref):
            candidate = self.repository.room_by_id(str(uuid.UUID(ref)))
            room = candidate if candidate and candidate["wing"] == wing["id"] else None
        if room is None:
            raise RoomNotFound(f"room {ref!r} does not exist in wing {wing['name']!r}")
        return room

    def _find_drawer(self, room: Mapping[str, Any], ref: str) -> dict[str, Any]:
        drawer = None
        if is_uuid(ref):
            candidate = self.repository.drawer_by_id(str(uuid.UUID(ref)))
            drawer = candidate if candidate and candidate["room"] == room["id"] else None
        if drawer is None:
            drawer = self.repository.drawer_by_name(room["id"], ref)
        if drawer is None:
            raise DrawerNotFound(f"drawer {ref!r} does not exist in room {room['name']!r}")
        return drawer

    def _ensure_wing(self, ref: str, description: str | None = None) -> tuple[dict, bool]:
        """The wing named `ref`, created when missing (name rules apply only to new wings)."""
        try:
            return self.find_wing(ref), False
        except WingNotFound:
            pass
        record = {
            "id": str(uuid.uuid4()),
            "name": check_wing_name(ref),
            "created_at": self.clock(),
        }
        if description is not None:
            record["description"] = description
        try:
            wing = self.repository.create_wing(record)
        except UniqueViolation:
            return self.find_wing(ref), False
        self.events.publish("wing", "created", id=wing["id"])
        return wing, True

    def _ensure_room(
        self, wing: Mapping[str, Any], ref: str, description: str | None = None
    ) -> tuple[dict, bool]:
        try:
            return self._find_room(wing, ref), False
        except RoomNotFound:
            pass
        record = {
            "id": str(uuid.uuid4()),
            "wing": wing["id"],
            "name": check_room_name(ref),
            "created_at": self.clock(),
        }
        if description is not None:
            record["description"] = description
        try:
            room = self.repository.create_room(record)
        except UniqueViolation:
            return self._find_room(wing, ref), False
        self.events.publish("room", "created", id=room["id"], wing=wing["id"])
        return room, True

    def _ensure_place(
        self, wing_ref: str, room_ref: str, description: str | None = None
    ) -> tuple[dict, bool]:
        """The room `room_ref` of wing `wing_ref`, both created when missing; `(room, created)`.

        A new room's name is checked before its new wing is created, so a refused name leaves
        nothing behind."""
        try:
            wing = self.find_wing(wing_ref)
        except WingNotFound:
            check_room_name(room_ref)
            wing, _ = self._ensure_wing(wing_ref)
        return self._ensure_room(wing, room_ref, description)

    # Wings

    def list_wings(self, ctx: RequestContext) -> dict[str, Any]:
        ctx.require_read("list_wings")
        wings = self.repository.list_wings()
        counts = self.repository.wing_counts(wing["id"] for wing in wings)
        return {"wings": [wing_view(wing, counts[wing["id"]]) for wing in wings]}

    def show_wing(self, ctx: RequestContext, wing_ref: str) -> dict[str, Any]:
        ctx.require_read("show_wing")
        wing = self.find_wing(wing_ref)
        return wing_view(wing, self.repository.wing_counts([wing["id"]])[wing["id"]])

    def create_wing(self, ctx: RequestContext, data: object) -> dict[str, Any]:
        ctx.require_write("create_wing")
        body = body_object(data)
        refuse_unknown(body, HIERARCHY_FIELDS)
        name = _required_name(body)
        description = optional_text(body, "description")
        wing, created = self._ensure_wing(name, description)
        counts = (
            {"rooms": 0, "drawers": 0}
            if created
            else self.repository.wing_counts([wing["id"]])[wing["id"]]
        )
        return {**wing_view(wing, counts), "created": created}

    def delete_wing(self, ctx: RequestContext, wing_ref: str) -> dict[str, int]:
        ctx.require_write("delete_wing")
        wing = self.find_wing(wing_ref)
        self._refuse_while_writing(f"wing {wing['name']!r}")
        deleted = self.repository.delete_wing(wing["id"])
        self.events.publish("wing", "deleted", id=wing["id"])
        return deleted

    # Rooms

    def list_rooms(self, ctx: RequestContext, wing_ref: str) -> dict[str, Any]:
        ctx.require_read("list_rooms")
        wing = self.find_wing(wing_ref)
        rooms = self.repository.list_rooms(wing["id"])
        counts = self.repository.room_drawer_counts(wing["id"], (room["id"] for room in rooms))
        return {
            "wing": {"id": wing["id"], "name": wing["name"]},
            "rooms": [room_view(room, counts[room["id"]]) for room in rooms],
        }

    def show_room(self, ctx: RequestContext, wing_ref: str, room_ref: str) -> dict[str, Any]:
        ctx.require_read("show_room")
        wing = self.find_wing(wing_ref)
        room = self._find_room(wing, room_ref)
        count = self.repository.room_drawer_counts(wing["id"], [room["id"]])[room["id"]]
        return room_view(room, count)

    def create_room(self, ctx: RequestContext, wing_ref: str, data: object) -> dict[str, Any]:
        ctx.require_write("create_room")
        body = body_object(data)
        refuse_unknown(body, HIERARCHY_FIELDS)
        name = _required_name(body)
        description = optional_text(body, "description")
        room, created = self._ensure_place(wing_ref, name, description)
        count = (
            0
            if created
            else self.repository.room_drawer_counts(room["wing"], [room["id"]])[room["id"]]
        )
        return {**room_view(room, count), "created": created}

    def delete_room(self, ctx: RequestContext, wing_ref: str, room_ref: str) -> dict[str, int]:
        ctx.require_write("delete_room")
        room = self._find_room(self.find_wing(wing_ref), room_ref)
        self._refuse_while_writing(f"room {room['name']!r}")
        deleted = self.repository.delete_room(room["id"])
        self.events.publish("room", "deleted", id=room["id"], wing=room["wing"])
        return deleted

    # Drawers

    def list_drawers(
        self,
        ctx: RequestContext,
        wing_ref: str,
        room_ref: str,
        *,
        limit: object = None,
        offset: object = None,
    ) -> dict[str, Any]:
        ctx.require_read("list_drawers")
        page_size = parse_limit(limit, default=DRAWER_LIST_LIMIT)
        start = parse_offset(offset)
        wing = self.find_wing(wing_ref)
        room = self._find_room(wing, room_ref)
        rows = self.repository.list_drawers(room["id"], limit=page_size, offset=start)
        total = self.repository.room_drawer_counts(wing["id"], [room["id"]])[room["id"]]
        return {
            "wing": {"id": wing["id"], "name": wing["name"]},
            "room": {"id": room["id"], "name": room["name"]},
            "drawers": [drawer_listing_view(row) for row in rows],
            "total": total,
            "limit": page_size,
            "offset": start,
        }

    def show_drawer(
        self, ctx: RequestContext, wing_ref: str, room_ref: str, drawer_ref: str
    ) -> dict[str, Any]:
        ctx.require_read("show_drawer")
        # Every part a name is the common case: one round trip (1.2 ms instead of 1.8 ms on a
        # 20,000-drawer palace). UUIDs and misses take the step-by-step path, which also says
        # which part is missing.
        drawer = self.repository.drawer_at(wing_ref, room_ref, drawer_ref)
        if drawer is None:
            room = self._find_room(self.find_wing(wing_ref), room_ref)
            drawer = self._find_drawer(room, drawer_ref)
        return drawer_view(drawer)

    def show_drawer_by_id(self, ctx: RequestContext, drawer_id: str) -> dict[str, Any]:
        ctx.require_read("show_drawer")
        drawer = self.repository.drawer_by_id(parse_uuid(drawer_id, "id"))
        if drawer is None:
            raise DrawerNotFound(f"drawer {drawer_id!r} does not exist")
        return drawer_view(drawer)

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
        return {**drawer_view(drawer), "created": created}

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
            self._record(ctx, room, filing)
            for room, (_, _, filing) in zip(rooms, entries, strict=True)
        ]
        read = self.repository.before_filing(
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
            ran = self.repository.create_drawers(batch.new, then)
        except UniqueViolation:
            if len(batch.entries) == 1:
                return self.file_batch(ctx, batch.entries), NOT_RUN
            return [self.file_batch(ctx, [entry])[0] for entry in batch.entries], NOT_RUN
        for record, _ in batch.new:
            self._announce_drawer(record, "created")
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
            found = self.repository.rooms_by_names(missing)
            for place in missing - set(found):
                found[place] = self._ensure_place(*place)[0]
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

    def _record(
        self, ctx: RequestContext, room: Mapping[str, Any], filing: Filing
    ) -> dict[str, Any]:
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

    def _announce_drawer(self, drawer: Mapping[str, Any], action: str) -> None:
        self.events.publish(
            "drawer", action, id=drawer["id"], wing=drawer["wing"], room=drawer["room"]
        )

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

    def backfill_dedup_keys(self) -> int:
        """Give drawers filed before deduplication their blocking keys; run at start-up."""
        filled = 0
        while rows := self.repository.drawers_without_dedup_keys(BACKFILL_BATCH):
            self.repository.set_dedup_keys(
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
        drawer = self._drawer(drawer_id)
        edges = self.repository.similar_edges(drawer["id"])
        others = self.repository.drawers_by_ids(
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
                    "drawer": drawer_view(other),
                    "side": "older" if older else "newer",
                    "kind": edge["kind"],
                    "similarity": edge["similarity"],
                    "signals": edge["signals"],
                    "created_at": edge["created_at"],
                }
            )
        return {"drawer": drawer_view(drawer), "similar": similar}

    def _drawer(self, drawer_id: str) -> dict[str, Any]:
        drawer = self.repository.drawer_by_id(parse_uuid(drawer_id, "id"))
        if drawer is None:
            raise DrawerNotFound(f"drawer {drawer_id!r} does not exist")
        return drawer

    # Corrections: the old content is never rewritten, only closed and succeeded.

    def supersede(self, ctx: RequestContext, drawer_id: str, data: object) -> dict[str, Any]:
        """Close a drawer and, with `content`, file its replacement from the same instant.

        The replacement takes over the name, and the tags unless `tags` is given; the two are
        linked (`superseded_by`, `supersedes`) in the same transaction. Without content the
        drawer is only invalidated.
        """
        ctx.require_write("supersede")
        body = body_object(data)
        refuse_unknown(body, SUPERSEDE_FIELDS)
        old = self._drawer(drawer_id)
        content = (
            drawers.check_content(body["content"]) if body.get("content") is not None else None
        )
        tags = string_list(body, "tags")
        if content is None:
            closed = self.retire(old)
            return {"superseded": drawer_view(closed), "replacement": None}
        revision = self.revise(
            ctx,
            old,
            # Still the same memory, from the same source (a diary entry stays its agent's).
            Filing(
                content=content,
                tags=old.get("tags", []) if tags is None else tags,
                source=old.get("source") or {"kind": "manual"},
            ),
        )
        return {
            "superseded": drawer_view(revision.closed),
            "replacement": drawer_view(revision.replacement),
        }

    def revise(self, ctx: RequestContext, old: Mapping[str, Any], filing: Filing) -> Revision:
        """Close `old` and file `filing` as its replacement from the same instant, in its room
        and under its name, linked both ways in one transaction. The caller has checked the
        memory mode. Raises `DrawerSuperseded` when `old` was already closed."""
        now = self.clock()
        replacement = self._record(ctx, {"id": old["room"], "wing": old["wing"]}, filing)
        replacement.update(valid_from=now, created_at=now, updated_at=now, supersedes=old["id"])
        if old.get("name") is not None:
            replacement["name"] = old["name"]
        closed = self.repository.supersede(old["id"], replacement, now)
        if closed is None:
            raise DrawerSuperseded(f"drawer {old['id']} was already superseded or invalidated")
        self._announce_drawer(closed, "updated")
        links = []
        if self.dedup.enabled:
            (candidates,) = self.repository.before_filing([(replacement, None)]).candidates
            links = self._links(replacement, candidates)
            for older, edge in links:
                self.repository.link_similar(replacement["id"], older, edge)
        self._announce_drawer(replacement, "created")
        return Revision(closed, replacement, similar=len(links))

    def retire(self, old: Mapping[str, Any]) -> dict[str, Any]:
        """Close `old` with no replacement (it is no longer true); returns it closed. Raises
        `DrawerSuperseded` when it was already closed."""
        closed = self.repository.supersede(old["id"], None, self.clock())
        if closed is None:
            raise DrawerSuperseded(f"drawer {old['id']} was already superseded or invalidated")
        self._announce_drawer(closed, "updated")
        return closed

    def history(self, ctx: RequestContext, drawer_id: str) -> dict[str, Any]:
        """Every version of a drawer, oldest first, reached from any one of them."""
        ctx.require_read("history")
        drawer = self._drawer(drawer_id)
        seen = {drawer["id"]}
        earlier = self._walk(drawer, "supersedes", seen)
        later = self._walk(drawer, "superseded_by", seen)
        versions = [*reversed(earlier), drawer, *later]
        return {"drawer": drawer["id"], "versions": [drawer_view(v) for v in versions]}

    def _walk(self, start: Mapping[str, Any], link: str, seen: set[str]) -> list[dict[str, Any]]:
        """Follow `link` from `start`; stops at a missing drawer, a cycle or the hop limit."""
        found: list[dict[str, Any]] = []
        current: Mapping[str, Any] = start
        while current.get(link) and len(found) < HISTORY_LIMIT:
            if current[link] in seen:
                break
            following = self.repository.drawer_by_id(current[link])
            if following is None:
                break
            seen.add(following["id"])
            found.append(following)
            current = following
        return found

    def pair_unlinked_supersessions(self) -> int:
        """Link drawers superseded before the links existed to their successor, when exactly
        one drawer of the room is valid from the instant the old one closed (and is not
        itself linked, nor paired earlier in this pass). Run at start-up; returns how many
        pairs were linked. Every invalidated drawer stays a candidate for ever, so this takes
        two scans of the drawers, not a query per candidate (0.5-1.5 s at 100,000 drawers with
        1,018 invalidated, where that took 45-49 s)."""
        closed = self.repository.unpaired_closed_drawers()
        if not closed:
            return 0
        found: dict[tuple[str, Any], list[str]] = {}
        for drawer in self.repository.successor_candidates([d["valid_to"] for d in closed]):
            found.setdefault((drawer["room"], drawer["valid_from"]), []).append(drawer["id"])
        taken: set[str] = set()
        paired = 0
        for drawer in closed:
            successors = [
                successor
                for successor in found.get((drawer["room"], drawer["valid_to"]), [])
                if successor != drawer["id"] and successor not in taken
            ]
            if len(successors) == 1:
                self.repository.pair(drawer["id"], successors[0])
                taken.add(successors[0])
                paired += 1
        return paired

    def _refuse_while_writing(self, what: str) -> None:
        """A coarse check, not atomic: a job that writes drawers may be about to write here."""
        for kind in self.repository.pending_job_kinds():
            registered = kinds.get(kind.get("type"))
            if registered and registered.writes_palace and registered.writes_palace(kind):
                raise PalaceBusy(
                    f"cannot delete {what} while a {kind['type']} job that writes to the "
                    "palace is queued, running or paused"
                )

    def remove_orphan(self, drawer: Mapping[str, Any]) -> None:
        """Delete a drawer whose room no longer exists (repair); announced like a delete."""
        self.repository.delete_drawer(drawer["id"])
        self._announce_drawer(drawer, "deleted")

    def delete_drawer(
        self, ctx: RequestContext, wing_ref: str, room_ref: str, drawer_ref: str
    ) -> dict[str, int]:
        ctx.require_write("delete_drawer")
        room = self._find_room(self.find_wing(wing_ref), room_ref)
        drawer = self._find_drawer(room, drawer_ref)
        self.repository.delete_drawer(drawer["id"])
        self._announce_drawer(drawer, "deleted")
        return {"wings": 0, "rooms": 0, "drawers": 1}
