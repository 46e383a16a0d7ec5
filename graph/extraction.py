"""The `extract` job: read every current mined drawer and note not read yet into the graph.

A run first settles the drawers that stopped being current since they were read: the open facts
read from a superseded or retired drawer are closed at the instant it stopped being current
(`ExtractionRecords.close_facts_of`). It then selects the drawers to read: current, with a mining
origin (`source.origin`) or `source.kind = "note"`, without a `drawer_extraction` marker,
optionally of one wing, oldest `created_at` first (checkpoint, diary and manual drawers are never
read). They are given to the provider in batches of its `batch_size`; a batch is one unit of
work (pause and cancel land between batches). Each answer is normalised into the closed
vocabulary (`providers.normalise`) and recorded with `ExtractionRecords.record_extraction`, which
writes the marker last; a drawer that replaced one read before then has its facts linked
`supersedes` the predecessor's (`ExtractionRecords.link_successor_facts`). The markers are the
cursor: a resumed or later run selects only the drawers still unread, so a crash replays at most
one drawer's writes (their ids are derived from the drawer and the fact), and a provider that
fails (`memcastle::extract::failed`) leaves the drawers it did not reach to the next run.

An extracted fact is valid from the source's `occurred_at` (on the drawer's origin, else on the
mined document when the drawer holds its current revision), else from the drawer's `valid_from`,
and never from later than now.

`ExtractSweeper` queues one automatically after a mining job completes, after a note is written,
and at start-up, when a provider is configured, with at most one waiting at a time
(`jobs.sweeper`).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from graph import providers
from graph.providers import ExtractNotConfigured, Item
from jobs.kinds import JobKind
from jobs.states import Priority
from jobs.sweeper import Sweeper
from kernel.clock import utc_now
from kernel.config import Config, ExtractionConfig
from kernel.errors import InputInvalid, MemCastleError
from kernel.events import Event
from kernel.logs import fields
from palace.hierarchy import WingNotFound

if TYPE_CHECKING:
    from graph.extraction_records import ExtractionRecords
    from jobs.run import JobRun
    from jobs.services import JobService
    from kernel.events import EventBus
    from palace.hierarchy import HierarchyService

logger = logging.getLogger(__name__)

PARAMETERS = ("wing",)
# How far back a replacement's lineage is followed to the nearest drawer that was read.
LINEAGE_STEPS = 100
# The preference level a provider is told (ADR-048): the default level of every source.
DEFAULT_PREFERENCE = "normal"


class ExtractServices(Protocol):
    """What the extract job and its sweeps call."""

    @property
    def config(self) -> Config: ...
    @property
    def extraction_records(self) -> ExtractionRecords: ...
    @property
    def hierarchy(self) -> HierarchyService: ...
    @property
    def jobs(self) -> JobService: ...
    @property
    def events(self) -> EventBus: ...


def _origin(drawer: Mapping[str, Any]) -> Mapping[str, Any]:
    source = drawer.get("source") or {}
    origin = source.get("origin") if isinstance(source, Mapping) else None
    return origin if isinstance(origin, Mapping) else {}


def _instant(raw: object) -> dt.datetime | None:
    if isinstance(raw, dt.datetime):
        return raw if raw.tzinfo else raw.replace(tzinfo=dt.UTC)
    if isinstance(raw, str):
        try:
            parsed = dt.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return None


def fact_valid_from(
    drawer: Mapping[str, Any], document_time: object, now: dt.datetime
) -> dt.datetime:
    """From the origin's `occurred_at`, else the document's, else the drawer's `valid_from`;
    never later than `now`."""
    for raw in (_origin(drawer).get("occurred_at"), document_time, drawer.get("valid_from")):
        instant = _instant(raw)
        if instant is not None:
            return min(instant.astimezone(dt.UTC), now)
    return now


def context_of(drawer: Mapping[str, Any]) -> dict[str, Any]:
    """What a provider is told about a drawer besides its text (ADR-048)."""
    source = drawer.get("source") or {}
    context: dict[str, Any] = {
        "drawer": drawer["id"],
        "source_kind": source.get("kind"),
        "preference": DEFAULT_PREFERENCE,
    }
    origin = _origin(drawer)
    if origin:
        context["origin"] = dict(origin)
    return context


# Submitting.


def parse(body: Mapping[str, Any], services: ExtractServices) -> dict[str, Any]:
    """The parameters as stored on the job; refused at submission without a provider."""
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise InputInvalid(
            unknown[0], f"is not an extract job parameter (known: {', '.join(PARAMETERS)})"
        )
    if not services.config.extraction.configured:
        raise ExtractNotConfigured("no extraction provider is configured")
    wing = services.hierarchy.wing_parameter(body.get("wing"))
    return {"wing": wing} if wing is not None else {}


# Running.

# One extract run at a time in a process: two would select the same drawers and read them twice.
_run_lock = threading.Lock()


def run(job: JobRun[ExtractServices]) -> dict[str, Any]:
    with job.holding(_run_lock):
        return Extraction(job).run()


class Extraction:
    """One run of an extract job."""

    def __init__(self, job: JobRun[ExtractServices]) -> None:
        services = job.services
        self.job = job
        self.config: ExtractionConfig = services.config.extraction
        provider = providers.for_config(self.config)
        if provider is None:
            raise ExtractNotConfigured("no extraction provider is configured")
        self.provider = provider
        self.records = services.extraction_records
        self.hierarchy = services.hierarchy
        self.state: dict[str, Any] = {
            "drawers": 0,
            "entities": 0,
            "relations": 0,
            "closed": 0,
            **job.checkpoint,
        }

    def result(self) -> dict[str, Any]:
        return {key: self.state[key] for key in ("drawers", "entities", "relations", "closed")}

    def run(self) -> dict[str, Any]:
        wing_id = None
        if self.job.params.get("wing") is not None:
            try:
                wing_id = self.hierarchy.find_wing(self.job.params["wing"])["id"]
            except WingNotFound:
                # Deleted since the job was submitted: nothing of it is left to read.
                self.job.save(
                    self.state, current=0, total=0, message="the wing no longer exists", last=True
                )
                return self.result()
        if self.job.resumed:
            # A crash between recording a replacement and linking it to its predecessor.
            self._link_successors(self.records.marked_by(self.job.job_id))
        read = self.records.read_drawers()
        self._close_superseded(wing_id, read)
        unread = [
            drawer for _, drawer in sorted(self.records.readable(wing_id)) if drawer not in read
        ]
        done = self.state["drawers"]
        total = done + len(unread)
        if not unread:
            self.job.save(
                self.state, current=total, total=total, message="nothing left to read", last=True
            )
            return self.result()
        size = self.provider.batch_size
        for start in range(0, len(unread), size):
            batch = unread[start : start + size]
            # Drawers deleted or closed meanwhile are neither read nor left to do.
            total -= len(batch) - self._read(batch)
            last = start + size >= len(unread)
            self.job.save(
                self.state,
                current=self.state["drawers"],
                total=total,
                message="done" if last else f"drawer {self.state['drawers']} of {total}",
                last=last,
            )
        return self.result()

    def _close_superseded(self, wing_id: str | None, read: set[str]) -> None:
        """Close the open facts of every drawer read before that stopped being current, at the
        instant it did."""
        closed = [row for row in self.records.closed_drawers(wing_id) if row["id"] in read]
        open_ = self.records.with_open_facts([row["id"] for row in closed])
        for row in closed:
            if row["id"] in open_:
                self.records.close_facts_of(row["id"], row["valid_to"])
                self.state["closed"] += 1

    def _read(self, batch: list[str]) -> int:
        """Read one batch; returns how many of its drawers were still there to read."""
        drawers = self.records.drawers(batch, content=True)
        # Oldest first, as selected; a drawer no longer current since is left alone.
        ordered = [drawers[drawer] for drawer in batch if drawer in drawers]
        ordered = [drawer for drawer in ordered if _is_current(drawer)]
        times = self._document_times(ordered)
        items = [Item(drawer.get("content") or "", context_of(drawer)) for drawer in ordered]
        answers = self.provider.extract(items)
        for drawer, answer in zip(ordered, answers, strict=False):
            entities, relations = providers.normalise(
                answer,
                min_confidence=self.config.min_confidence,
                max_entities=self.config.max_entities,
                max_relations=self.config.max_relations,
            )
            record = {key: value for key, value in drawer.items() if key != "content"}
            predecessor = self._read_predecessor(drawer)
            written_entities, written_relations = self.records.record_extraction(
                record,
                entities,
                relations,
                extractor=self.provider.name,
                job_id=self.job.job_id,
                valid_from=fact_valid_from(drawer, times.get(drawer["id"]), utc_now()),
                predecessor=predecessor,
            )
            self.state["drawers"] += 1
            self.state["entities"] += written_entities
            self.state["relations"] += written_relations
            if predecessor is not None:
                self.records.link_successor_facts(predecessor, drawer["id"])
        return len(ordered)

    def _document_times(self, drawers: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """`occurred_at` of each mined drawer's document, by drawer id, when the document's
        current revision is the drawer's."""
        wanted: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for drawer in drawers:
            origin = _origin(drawer)
            if origin.get("source_id") and origin.get("document") is not None:
                key = (str(origin["source_id"]), str(origin["document"]))
                wanted.setdefault(key, []).append(drawer)
        if not wanted:
            return {}
        found: dict[str, Any] = {}
        for row in self.records.documents(wanted):
            if not isinstance(row["id"], list) or row.get("occurred_at") is None:
                continue
            # A document's key is the pair it was asked for by.
            source_id, document = row["id"]
            for drawer in wanted.get((source_id, document), []):
                if _origin(drawer).get("revision") == row.get("revision"):
                    found[drawer["id"]] = row["occurred_at"]
        return found

    def _link_successors(self, drawer_ids: list[str]) -> None:
        """Link the facts of each drawer that replaced another `supersedes` those of the nearest
        predecessor that was read."""
        for drawer_id, drawer in self.records.drawers(drawer_ids).items():
            predecessor = self._read_predecessor(drawer)
            if predecessor is not None:
                self.records.link_successor_facts(predecessor, drawer_id)

    def _read_predecessor(self, drawer: Mapping[str, Any]) -> str | None:
        """The nearest drawer that `drawer` replaced and that was read, following the drawers'
        explicit lineage only (at most `LINEAGE_STEPS` back)."""
        predecessor = drawer.get("supersedes")
        for _ in range(LINEAGE_STEPS):
            if not predecessor:
                return None
            if self.records.is_read(predecessor):
                return predecessor
            row = self.records.drawers([predecessor]).get(predecessor)
            predecessor = row.get("supersedes") if row is not None else None
        return None


def _is_current(drawer: Mapping[str, Any]) -> bool:
    valid_to = _instant(drawer.get("valid_to"))
    return valid_to is None or valid_to > utc_now()


EXTRACT = JobKind(
    name="extract",
    priority=Priority.LOW,
    parse=parse,
    run=run,
    gate=lambda params: "extract",
    summary="read the mined drawers and notes not read yet into the knowledge graph",
    # It writes the graph only, never a drawer: deletes need not wait.
    writes_palace=lambda params: False,
)


# Queued automatically.


class ExtractSweeper(Sweeper):
    """Queues an extract job at start-up, after a mining job completes and after a note is
    written, when a provider is configured."""

    kind = "extract"
    retried_by = "the next mining job, note or start"

    def __init__(self, services: ExtractServices) -> None:
        super().__init__(services.jobs, services.events)
        self.config = services.config.extraction
        self.records = services.extraction_records

    @property
    def enabled(self) -> bool:
        return self.config.configured

    def triggers(self, event: Event) -> bool:
        created: list[str] = []
        return _wanted(event, created) or bool(created)

    def calls_for(self, burst: list[Event]) -> bool:
        """A mining job completed (or the follower fell behind), or a note was filed."""
        created: list[str] = []
        if any([_wanted(event, created) for event in burst]):
            return True
        return bool(created) and self._has_note(created)

    def _has_note(self, drawer_ids: list[str]) -> bool:
        try:
            return self.records.any_note(drawer_ids)
        except MemCastleError as exc:
            logger.warning("could not read the drawers just filed", extra=fields(error=exc.code))
            return False


def _wanted(event: Event, created: list[str]) -> bool:
    """Whether `event` calls for an extract job by itself (a mining job completed, or this
    follower fell behind); a drawer filed is added to `created`, to be looked at for notes."""
    if event.kind == "resync":
        return True
    if event.kind == "job":
        return event.data.get("job_kind") == "mine" and event.data.get("status") == "completed"
    if event.kind == "drawer" and event.data.get("action") == "created":
        drawer = event.data.get("id")
        if isinstance(drawer, str):
            created.append(drawer)
    return False
