"""The journal: notes, an agent's diary, and the wake-up an agent reads when it starts.

Notes and diary entries are written synchronously (not as jobs) through `FilingService.file`,
so they are deduplicated and announced like any drawer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid
from kernel.validation import (
    body_object,
    optional_text,
    parse_limit,
    refuse_unknown,
    string_list,
)
from palace import drawers
from palace.filing import Filing, FilingService
from palace.hierarchy import HierarchyService, WingNotFound
from palace.repositories.journal import JournalRepository
from palace.shapes import Diary, DrawerFiled, WakeUp, drawer_values

NOTE_FIELDS = ("wing", "room", "content", "uri", "tags", "requested_by")
DIARY_FIELDS = ("agent_identity", "wing", "content", "tags", "requested_by")
NOTES_ROOM = "notes"
DIARY_ROOM = "diary"
DIARY_LIMIT = 20
WAKE_UP_ITEMS = 10
WAKE_UP_BYTES = 8192
MAX_WAKE_UP_BYTES = 1_048_576


def _required_text(data: Mapping[str, Any], field: str) -> str:
    value = data.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InputInvalid(field, "is required and must be a non-blank string")
    return value


def _agent(raw: object) -> str:
    """An agent identity is a free string, stored verbatim, never validated beyond that."""
    if not isinstance(raw, str) or not raw:
        raise InputInvalid("agent_identity", "is required and must be a non-empty string")
    return raw


class JournalService:
    def __init__(
        self,
        repository: JournalRepository,
        hierarchy: HierarchyService,
        filing: FilingService,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self._repository = repository
        self.hierarchy = hierarchy
        self.filing = filing
        self.clock = clock

    def write_note(self, ctx: RequestContext, data: object) -> dict[str, Any]:
        """File a note in `<wing>/<room>` (room `notes` by default); an identical note already
        in the room answers `created: false`."""
        ctx.require_write("note")
        body = body_object(data)
        refuse_unknown(body, NOTE_FIELDS)
        # Names are checked when a wing or room is created; an existing one may be named by id.
        wing = _required_text(body, "wing")
        room = body.get("room") or NOTES_ROOM
        if not isinstance(room, str):
            raise InputInvalid("room", "must be a room's name")
        source: dict[str, Any] = {"kind": "note"}
        uri = optional_text(body, "uri")
        if uri is not None:
            source["uri"] = uri
        filing = Filing(
            content=drawers.check_content(body.get("content")),
            tags=string_list(body, "tags") or [],
            source=source,
        )
        drawer, created = self.filing.file(ctx, wing, room, filing)
        return DrawerFiled.render({**drawer_values(drawer), "created": created})

    def write_diary(self, ctx: RequestContext, data: object) -> dict[str, Any]:
        """An entry in `<wing>/diary` for an agent; the agent's identical current entry is
        returned instead of a copy (`created: false`)."""
        ctx.require_write("diary_write")
        body = body_object(data)
        refuse_unknown(body, DIARY_FIELDS)
        agent = _agent(body.get("agent_identity"))
        wing = _required_text(body, "wing")
        filing = Filing(
            content=drawers.check_content(body.get("content")),
            tags=string_list(body, "tags") or [],
            source={"kind": "manual", "agent": agent},
            agent=agent,
        )
        drawer, created = self.filing.file(ctx, wing, DIARY_ROOM, filing)
        return DrawerFiled.render({**drawer_values(drawer), "created": created})

    def read_diary(
        self, ctx: RequestContext, *, agent_identity: object, wing: object, limit: object
    ) -> dict[str, Any]:
        """An agent's newest current entries, superseded ones skipped."""
        ctx.require_read("diary_read")
        agent = _agent(agent_identity)
        page_size = parse_limit(limit, default=DIARY_LIMIT)
        exists, wing_id = self._wing_scope(wing)
        entries = self._repository.diary_entries(agent, wing_id, page_size) if exists else []
        return Diary.render(
            {
                "agent_identity": agent,
                "wing": wing or None,
                "entries": [drawer_values(entry) for entry in entries],
                "limit": page_size,
            }
        )

    def wake_up(
        self,
        ctx: RequestContext,
        *,
        agent_identity: object,
        wing: object = None,
        max_items: object = None,
        max_bytes: object = None,
    ) -> dict[str, Any]:
        """What an agent reads when it starts: its newest diary entry in `wing` (only when a
        wing is given) and the newest checkpointed drawers, whole, within `max_bytes`."""
        ctx.require_read("wake_up")
        agent = _agent(agent_identity)
        items = parse_limit(max_items, default=WAKE_UP_ITEMS, field="max_items")
        budget = parse_limit(
            max_bytes, default=WAKE_UP_BYTES, field="max_bytes", cap=MAX_WAKE_UP_BYTES
        )
        exists, wing_id = self._wing_scope(wing)
        diary = None
        highlights: list[dict[str, Any]] = []
        if not exists:
            return WakeUp.render(
                {"diary": None, "recent_highlights": [], "generated_at": self.clock()}
            )
        if wing_id is not None:
            newest = self._repository.diary_entries(agent, wing_id, 1)
            diary = drawer_values(newest[0]) if newest else None
        used = len(diary["content"].encode()) if diary else 0
        for drawer in self._repository.checkpoint_highlights(wing_id, items):
            size = len(drawer["content"].encode())
            if used + size > budget:
                break
            used += size
            highlights.append(drawer_values(drawer))
        return WakeUp.render(
            {"diary": diary, "recent_highlights": highlights, "generated_at": self.clock()}
        )

    def _wing_scope(self, wing: object) -> tuple[bool, str | None]:
        """`(exists, wing id)` of the wing named (or identified by) `wing`; `(True, None)` when
        no wing is asked for (every wing). A wing nobody wrote to yet does not exist, and reads
        as empty rather than as an error."""
        if wing is None or wing == "":
            return True, None
        if not isinstance(wing, str):
            raise InputInvalid("wing", "must be a wing's name")
        try:
            return True, self.hierarchy.find_wing(wing)["id"]
        except WingNotFound:
            return False, None
