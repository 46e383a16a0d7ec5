"""The `checkpoint` job: an already-classified batch of memories, one drawer per item.

The calling integration decides what is worth remembering; this files it. The payload is checked
whole at submission, so a job never starts with an item it cannot store. Items are filed a chunk
at a time: each item's drawer is written under an id derived from the job and the item's index
(`checkpoint-drawer:{i}`), then the checkpoint `{"next_index": n}` is saved (the last chunk's
transaction writes the job's end state instead), so a job that is interrupted resumes where it
stopped and never stores an item twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from graph.entities import EmptyLabel
from graph.facts import check_fact_labels
from jobs.kinds import JobKind
from jobs.replay import unit_id
from jobs.states import Priority
from kernel.context import RequestContext
from kernel.errors import InputInvalid, NotFound
from palace.filing import NOT_RUN, Filed, Filing
from palace.names import PathInvalid, check_drawer_name, check_wing_name

if TYPE_CHECKING:
    from graph.facts import FactService
    from jobs.run import JobRun
    from palace.filing import FilingService
    from palace.hierarchy import HierarchyService

DESTINATIONS = {
    "preference": "preferences",
    "project": "projects",
    "diary": "diary",
    "general": "general",
}
ITEM_FIELDS = ("destination", "wing", "content", "name", "tags", "source", "fact")
SOURCE_KINDS = ("file", "manual")
FACT_OPS = ("add", "supersede", "invalidate", "link")
LINK_KINDS = ("confirms", "contradicts", "refines")
MAX_ITEMS = 10_000
# Items filed per transaction and checkpoint. Measured in-process on a 2-core machine, 1,000 items
# into an empty room with synced writes: 51 items/s one at a time, 364 items/s 25 at a time; an
# item's own synced write and checkpoint save were most of its cost. At 25, the checkpoint saves
# of a 1,000-item job (each rewrites the job's row, payload included) were still 23% of its
# time (docs/benchmarks-history.md, "Jobs"); 100 items take about 0.2 s, so a pause still
# lands quickly.
CHUNK = 100


class CheckpointServices(Protocol):
    """What the checkpoint job calls: filing files the items (the hierarchy finds those a
    replayed chunk stored already), the graph applies their facts."""

    @property
    def hierarchy(self) -> HierarchyService: ...
    @property
    def filing(self) -> FilingService: ...
    @property
    def facts(self) -> FactService: ...


def _refuse(index: int | None, problem: str) -> InputInvalid:
    where = f"item {index}: " if index is not None else ""
    return InputInvalid("payload", f"{where}{problem}")


def parse_payload(raw: object) -> dict[str, Any]:
    """The payload as stored on the job; refused whole, blamed on `payload`.

    A JSON-encoded string of the object is accepted too, as some MCP clients send one.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise InputInvalid("payload", "is a string that is not valid JSON") from None
    if not isinstance(raw, Mapping):
        raise InputInvalid("payload", 'must be an object like {"items": [...]}')
    unknown = sorted(set(raw) - {"items"})
    if unknown:
        raise _refuse(None, f"has an unknown key {unknown[0]!r} (known: items)")
    items = raw.get("items")
    if not isinstance(items, list) or not items:
        raise _refuse(None, "must have at least one item in `items`")
    if len(items) > MAX_ITEMS:
        raise _refuse(None, f"has {len(items)} items; at most {MAX_ITEMS} fit in one job")
    return {"items": [_item(index, item) for index, item in enumerate(items)]}


def _item(index: int, raw: object) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise _refuse(index, "must be an object")
    unknown = sorted(set(raw) - set(ITEM_FIELDS))
    if unknown:
        raise _refuse(index, f"has an unknown key {unknown[0]!r} (known: {', '.join(ITEM_FIELDS)})")
    destination = raw.get("destination")
    if destination not in DESTINATIONS:
        raise _refuse(index, f"`destination` must be one of {', '.join(DESTINATIONS)}")
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise _refuse(index, "`content` must be a non-blank string")
    tags = raw.get("tags")
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise _refuse(index, "`tags` is required and must be a list of strings (may be empty)")
    item: dict[str, Any] = {
        "destination": destination,
        "content": content,
        "tags": tags,
        "source": _source(index, raw.get("source")),
    }
    try:
        if raw.get("wing") is not None:
            item["wing"] = check_wing_name(_string(index, raw, "wing"))
        if raw.get("name") is not None:
            item["name"] = check_drawer_name(_string(index, raw, "name"))
    except PathInvalid as exc:
        raise _refuse(index, exc.message) from None
    if raw.get("fact") is not None:
        item["fact"] = _fact(index, raw["fact"])
    return item


def _string(index: int, raw: Mapping[str, Any], field: str) -> str:
    value = raw[field]
    if not isinstance(value, str):
        raise _refuse(index, f"`{field}` must be a string")
    return value


def _source(index: int, raw: object) -> dict[str, Any]:
    if raw is None:
        return {"kind": "manual"}
    if not isinstance(raw, Mapping) or raw.get("kind", "manual") not in SOURCE_KINDS:
        raise _refuse(index, '`source` must be like {"kind": "manual"} (kind file or manual)')
    unknown = sorted(set(raw) - {"kind", "uri", "agent"})
    if unknown:
        raise _refuse(
            index, f"`source` has an unknown key {unknown[0]!r} (known: kind, uri, agent)"
        )
    source: dict[str, Any] = {"kind": raw.get("kind", "manual")}
    for key in ("uri", "agent"):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str):
                raise _refuse(index, f"`source.{key}` must be a string")
            source[key] = raw[key]
    return source


def _fact(index: int, raw: object) -> dict[str, Any]:
    """Checked here so a job never fails on its shape; applying it is the graph's part."""
    if not isinstance(raw, Mapping) or raw.get("op") not in FACT_OPS:
        raise _refuse(index, f"`fact.op` must be one of {', '.join(FACT_OPS)}")
    confidence = raw.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 <= confidence <= 1
    ):
        raise _refuse(index, "`fact.confidence` must be a number from 0 to 1")
    if raw["op"] == "link":
        if raw.get("kind") not in LINK_KINDS:
            raise _refuse(index, f"`fact.kind` must be one of {', '.join(LINK_KINDS)}")
        reason = raw.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise _refuse(index, "`fact.reason` must be a non-blank string for a link")
    try:
        check_fact_labels(raw)
    except EmptyLabel as exc:
        raise EmptyLabel(exc.field, f"`payload` item {index}: ") from None
    except InputInvalid as exc:
        raise _refuse(index, exc.message) from None
    return dict(raw)


def parse(body: Mapping[str, Any], services: object) -> dict[str, Any]:
    unknown = sorted(set(body) - {"payload", "emergency"})
    if unknown:
        raise InputInvalid(
            unknown[0], "is not a checkpoint job parameter (known: payload, emergency)"
        )
    emergency = body.get("emergency", False)
    if not isinstance(emergency, bool):
        raise InputInvalid("emergency", "must be true or false")
    params: dict[str, Any] = {"payload": parse_payload(body.get("payload"))}
    if emergency:
        params["emergency"] = True
    return params


def destination_of(item: Mapping[str, Any]) -> tuple[str, str]:
    """(wing, room) of an item: its wing, else one per destination; diary items go to `diary`."""
    wing = item.get("wing") or DESTINATIONS[item["destination"]]
    room = "diary" if item["destination"] == "diary" else "entries"
    return wing, room


def run(job: JobRun[CheckpointServices]) -> dict[str, Any]:
    """File the items a chunk at a time: one transaction per chunk, then the checkpoint.

    A unit of work is a chunk of up to `CHUNK` items; pause and cancel are honoured between
    chunks. After a crash the chunk in flight is replayed: its items already stored are found by
    their derived ids and not filed again. The last chunk's transaction also writes the job's
    end state, unless its items carry facts (applied after their drawers are written).
    """
    hierarchy, filing = job.services.hierarchy, job.services.filing
    ctx = RequestContext.build(requested_by=job.requested_by)
    items = job.params["payload"]["items"]
    state = {"next_index": 0, "duplicates": 0, "failed": [], **job.checkpoint}
    # Only the first chunk of a resumed run can have been stored already: a run stops (or
    # crashes) inside one chunk at most, and the checkpoint names that chunk.
    replayed = state["next_index"] if job.resumed else None
    while (start := state["next_index"]) < len(items):
        indexes = range(start, min(start + CHUNK, len(items)))
        ids = {index: unit_id(job.job_id, f"checkpoint-drawer:{index}") for index in indexes}
        stored = hierarchy.existing_drawer_ids(ids.values()) if start == replayed else set()
        pending = [index for index in indexes if ids[index] not in stored]
        batch = filing.prepare_batch(
            ctx,
            [
                (*destination_of(items[index]), _filing(items[index], ids[index], job.job_id))
                for index in pending
            ],
        )
        last = indexes.stop == len(items)
        if last and not any("fact" in items[index] for index in indexes):
            ending = _tallied(state, pending, batch.outcomes, indexes.stop)
            _save(job, ending, len(items), last=True)
            outcomes, ended = filing.write_batch(ctx, batch, job.ending(_result(ending)))
            if ended is not NOT_RUN:
                job.finished(ended)
                return _result(ending)
        else:
            outcomes, _ = filing.write_batch(ctx, batch)
        evidence = {
            index: filed.drawer
            for index, filed in zip(pending, outcomes, strict=True)
            if filed.drawer is not None and "fact" in items[index]
        }
        state = _tallied(state, pending, outcomes, indexes.stop)
        state["failed"] = [*state["failed"], *_apply_facts(job, items, ids, stored, evidence)]
        _save(job, state, len(items), last=last)
    return _result(state)


def _tallied(
    state: Mapping[str, Any], pending: list[int], outcomes: list[Filed], next_index: int
) -> dict[str, Any]:
    """The resume state after a chunk whose items `pending` came to `outcomes`."""
    failed = [
        {"index": index, "error": filed.error.message}
        for index, filed in zip(pending, outcomes, strict=True)
        if filed.error is not None
    ]
    duplicates = sum(1 for filed in outcomes if filed.error is None and not filed.created)
    return {
        **state,
        "next_index": next_index,
        "duplicates": state["duplicates"] + duplicates,
        "failed": [*state["failed"], *failed],
    }


def _save(job: JobRun[Any], state: dict[str, Any], total: int, *, last: bool) -> None:
    done = state["next_index"]
    job.save(state, current=done, total=total, message=f"item {done} of {total}", last=last)


def _result(state: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"items": state["next_index"], "duplicates": state["duplicates"]}
    if state["failed"]:
        result["failed"] = state["failed"]
    return result


def _apply_facts(
    job: JobRun[CheckpointServices],
    items: list[dict[str, Any]],
    ids: Mapping[int, str],
    stored: set[str],
    evidence: dict[int, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Apply the facts of a chunk's items, in order, each with its drawer as evidence; returns
    the items whose fact failed. The graph writes under ids derived from the drawer, so the
    facts of a replayed chunk (their drawers already stored) are applied again harmlessly."""
    facts = job.services.facts
    replayed = [index for index in ids if ids[index] in stored and "fact" in items[index]]
    if replayed:
        found = job.services.hierarchy.drawers_by_ids(ids[i] for i in replayed)
        evidence.update({index: found[ids[index]] for index in replayed if ids[index] in found})
    failed = []
    for index in sorted(evidence):
        try:
            facts.apply_fact(evidence[index], items[index]["fact"], job.requested_by)
        except (NotFound, InputInvalid) as exc:
            failed.append({"index": index, "error": exc.message})
    return failed


def _filing(item: Mapping[str, Any], drawer_id: str, job_id: str) -> Filing:
    return Filing(
        content=item["content"],
        name=item.get("name"),
        tags=item["tags"],
        source=item["source"],
        drawer_id=drawer_id,
        job_id=job_id,
        # A diary entry is a copy only of its own agent's entries.
        agent=item["source"].get("agent") if item["destination"] == "diary" else None,
        # A fact needs its own drawer as evidence, even when the text is a copy.
        keep_copy="fact" in item,
    )


def _gate(submitted: Mapping[str, Any]) -> str:
    return "emergency_checkpoint" if submitted.get("emergency") is True else "checkpoint"


def _priority(params: Mapping[str, Any]) -> Priority:
    return Priority.CRITICAL if params.get("emergency") else Priority.HIGH


CHECKPOINT = JobKind(
    name="checkpoint",
    priority=Priority.HIGH,
    parse=parse,
    run=run,
    gate=_gate,
    summary="file an already-classified batch of memories, one drawer per item",
    priority_for=_priority,
    writes_palace=lambda params: True,
)
