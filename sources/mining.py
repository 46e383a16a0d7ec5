"""The `mine` job: the pipeline that turns a source's documents into drawers.

The adapter discovers candidates after the source's cursor and reads each one; the core skips a
document whose revision it already holds, normalizes and chunks the rest, files the chunks as
drawers, records the document, and only then moves the cursor. A changed document keeps its
unchanged chunks, supersedes the changed ones and retires those past a shrunk end.

A unit of work is a batch of documents: pause and cancel are honoured between batches. Drawer ids
are derived from the job and the chunk (`mine-chunk:{source}:{document}:{index}:{hash}`), so the
batch a crash interrupted is replayed without filing anything twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jobs.kinds import JobKind
from jobs.replay import unit_id
from jobs.states import Priority
from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid
from palace.filing import Filed, Filing
from palace.hierarchy import WingNotFound
from palace.names import PathInvalid, check_drawer_name, check_wing_name
from palace.revisions import DrawerSuperseded
from sources import chunking
from sources.adapters import Adapter, CanonicalDocument, RawDocument, SourceRef, check_options

if TYPE_CHECKING:
    from jobs.run import JobRun
    from palace.filing import FilingService
    from palace.hierarchy import HierarchyService
    from palace.revisions import RevisionService
    from sources.services import SourceService

PARAMETERS = ("path", "source", "locator", "options", "wing", "full")
# Documents a unit of work: about 0.1-0.3 s of filing, so a pause lands quickly while the
# per-batch costs (a document read, a transaction, a checkpoint) stay small.
BATCH = 50
# Chunks filed in one transaction: 50 large files can be thousands of chunks, and one
# transaction of 8,658 chunks held the palace for tens of seconds.
FILE_CHUNKS = 200
COUNTS = ("documents", "created", "superseded", "retired", "unchanged", "skipped", "similar")


class MineServices(Protocol):
    """What the mine job calls: filing files the chunks, revisions supersede and retire those
    a document changed, the hierarchy reads what was filed before, the sources service keeps
    the places mined and their documents."""

    @property
    def hierarchy(self) -> HierarchyService: ...
    @property
    def filing(self) -> FilingService: ...
    @property
    def revisions(self) -> RevisionService: ...
    @property
    def sources(self) -> SourceService: ...


def parse(body: Mapping[str, Any], services: MineServices) -> dict[str, Any]:
    """The parameters as stored on the job. The place is identified now, so a job never starts
    on a path that is not there or an option the source does not take."""
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise InputInvalid(
            unknown[0], f"is not a mine job parameter (known: {', '.join(PARAMETERS)})"
        )
    if (body.get("path") is None) == (body.get("source") is None):
        raise InputInvalid("path", "or `source`: give exactly one of them")
    options = _options(body.get("options"))
    params: dict[str, Any] = {}
    if body.get("path") is not None:
        path = body["path"]
        if not isinstance(path, str) or not os.path.isabs(path):
            raise InputInvalid(
                "path",
                f"must be an absolute path, not {path!r}: the daemon does not share your "
                "working directory",
            )
        if body.get("locator") is not None:
            raise InputInvalid("locator", "goes with `source`, not with `path`")
        params.update(path=path)
        adapter = services.sources.adapter("directory")
        ref = identify(adapter, path, options, "path")
    else:
        source = body["source"]
        if not isinstance(source, str):
            raise InputInvalid("source", "must be the name of a source")
        locator = body.get("locator")
        if locator is not None and not isinstance(locator, str):
            raise InputInvalid("locator", "must be a string")
        params.update(source=source, locator=locator)
        adapter = services.sources.adapter(source)
        services.sources.require_signed_in(source)
        ref = identify(adapter, locator, options, "locator")
    if options:
        params["options"] = options
    if body.get("wing") is not None:
        if not isinstance(body["wing"], str):
            raise InputInvalid("wing", "must be a wing's name")
        params["wing"] = _check_wing(services.hierarchy, body["wing"], given=True)
    else:
        _check_wing(services.hierarchy, adapter.default_wing(ref), given=False)
    full = body.get("full", False)
    if not isinstance(full, bool):
        raise InputInvalid("full", "must be true or false")
    if full:
        params["full"] = True
    return params


def _check_wing(hierarchy: HierarchyService, name: str, *, given: bool) -> str:
    """A wing the job may file into: an existing one whatever its name, else a valid new
    name (`memcastle::palace::path_invalid` otherwise). Checked at submission, so a job never
    fails on it after it started."""
    try:
        return check_wing_name(name)
    except PathInvalid as exc:
        try:
            hierarchy.find_wing(name)
        except WingNotFound:
            if given:
                raise exc from None
            raise PathInvalid(
                f"{exc.message}; it is the default `wing` (for a directory, its name): give `wing`"
            ) from None
        return name


def _options(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in raw.items()
    ):
        raise InputInvalid("options", 'must be an object of strings, like {"since": "2026-09"}')
    return dict(raw)


def identify(
    adapter: Adapter, locator: str | None, options: dict[str, str], field: str
) -> SourceRef:
    """The adapter's identity of the place, its refusals naming the job's own parameter."""
    check_options(adapter, options)
    try:
        return adapter.identify(locator, options)
    except InputInvalid as exc:
        if exc.field != "locator":
            raise
        raise InputInvalid(field, exc.message.removeprefix("`locator` ")) from None


def source_id(ref: SourceRef) -> str:
    """The id of a place: the same for every job on it, whatever their options."""
    key = json.dumps([ref.source, ref.account, ref.locator])
    digest = bytearray(hashlib.sha256(key.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


@dataclass
class Document:
    """A document read in this run that needs filing, and what it comes to."""

    raw: RawDocument
    canonical: CanonicalDocument
    chunks: list[str]
    hashes: list[str]
    previous: list[dict[str, Any]]
    # Per chunk index, the drawer that holds it once filed.
    drawers: dict[int, str] = field(default_factory=dict)


class Pipeline:
    """One run of a mine job over one source."""

    def __init__(self, job: JobRun[MineServices]) -> None:
        services = job.services
        self.job = job
        self.hierarchy = services.hierarchy
        self.filing = services.filing
        self.revisions = services.revisions
        self.sources = services.sources
        self.config = services.sources.config
        self.ctx = RequestContext.build(requested_by=job.requested_by)
        params = job.params
        self.adapter = services.sources.adapter(params.get("source", "directory"))
        field_name = "path" if "path" in params else "locator"
        locator = params.get("path", params.get("locator"))
        self.ref = identify(self.adapter, locator, params.get("options", {}), field_name)
        self.source_id = source_id(self.ref)
        self.wing = params.get("wing") or self.adapter.default_wing(self.ref)
        self.room = self.adapter.default_room()
        self.full = bool(params.get("full"))
        # A run that follows one that ended without finishing (this job's own earlier attempt,
        # or another job's) looks for the drawers it filed and never recorded.
        self.after_unfinished = job.resumed

    def run(self) -> dict[str, Any]:
        """Mine the source; a second run of the same place, in this process or another, waits
        for the first to end."""
        self.sources.require_signed_in(self.adapter.name)
        with self.job.holding(_source_lock(self.source_id)):
            self._ensure_source()
            self._hold_the_place()
            # Read after the wait: the run waited for may have moved the cursor.
            counts = self._run(self._ensure_source())
            self.sources.release_run(self.source_id, self.job.job_id)
            return counts

    def _hold_the_place(self) -> None:
        """Claim the place, waiting while another process's run holds it. Claimed again before
        every batch: a run whose lease lapsed while it worked (a stalled process) may have lost
        the place to another, and must not file beside it."""

        def claim() -> bool:
            held = self.sources.claim_run(self.source_id, self.job.job_id, utc_now())
            if held is not None and held.after_unfinished:
                self.after_unfinished = True
            return held is not None

        self.job.waiting_for(claim)

    def _ensure_source(self) -> dict[str, Any]:
        now = utc_now()
        return self.sources.ensure(
            {
                "id": self.source_id,
                "source": self.ref.source,
                "account": self.ref.account,
                "locator": self.ref.locator,
                "credential": {},
                "cursor": None,
                "created_at": now,
                "updated_at": now,
            }
        )

    def _run(self, row: dict[str, Any]) -> dict[str, Any]:
        start_cursor = None if self.full else row.get("cursor")
        state: dict[str, Any] = {
            "next_index": 0,
            "cursor": start_cursor,
            **dict.fromkeys(COUNTS, 0),
            **self.job.checkpoint,
        }
        replayed = state["next_index"] if self.job.resumed else None
        remaining = self.config.max_documents - state["next_index"]
        discovery = self.adapter.discover(self.ref, state["cursor"], max(remaining, 0))
        candidates = discovery.candidates
        truncated = not discovery.exhausted
        total = state["next_index"] + len(candidates)
        if not candidates:
            self.job.save(
                state, current=total, total=total, message=_done(total, truncated, self.full)
            )
        for offset in range(0, len(candidates), BATCH):
            batch = candidates[offset : offset + BATCH]
            if offset:
                self._hold_the_place()
            self._file(batch, state, replaying=offset == 0 and replayed is not None)
            state["next_index"] += len(batch)
            state["cursor"] = batch[-1].cursor_after
            self.sources.advance(self.source_id, state["cursor"], self.job.job_id, utc_now())
            finished = offset + BATCH >= len(candidates)
            self.job.save(
                state,
                current=state["next_index"],
                total=total,
                message=_done(total, truncated, self.full)
                if finished
                else f"document {state['next_index']} of {total}",
            )
        return {**{count: state[count] for count in COUNTS}, "truncated": truncated}

    def _file(self, batch: list, state: dict[str, Any], *, replaying: bool) -> None:
        state["documents"] += len(batch)
        raws = []
        for candidate in batch:
            raw = self.adapter.read(self.ref, candidate)
            if raw is None:
                state["skipped"] += 1
            else:
                raws.append(raw)
        stored = self.sources.documents(self.source_id, [raw.external_id for raw in raws])
        documents = []
        for raw in raws:
            previous = stored.get(raw.external_id)
            if previous is not None and previous["revision"] == raw.revision:
                state["unchanged"] += 1
                continue
            canonical = self.adapter.normalize(raw)
            chunks = chunking.chunk(canonical.segments, self.config.chunk_chars)
            documents.append(
                Document(
                    raw=raw,
                    canonical=canonical,
                    chunks=chunks,
                    hashes=[hashlib.sha256(text.encode()).hexdigest() for text in chunks],
                    previous=(previous or {}).get("chunks") or [],
                )
            )
        if not documents:
            return
        self._revise_and_retire(documents, state)
        if self.after_unfinished:
            self._take_over_unrecorded(documents, state)
        self._file_new(documents, state, replaying=replaying)
        now = utc_now()
        self.sources.record_documents(
            self.source_id, [self._document_row(document, now) for document in documents]
        )

    def _revise_and_retire(self, documents: list[Document], state: dict[str, Any]) -> None:
        """Chunks whose text changed supersede the drawer that held them; chunks past a shrunk
        end are retired. Unchanged chunks keep their drawer."""
        old_ids = [chunk["drawer"] for document in documents for chunk in document.previous]
        old = self.hierarchy.drawers_by_ids(old_ids) if old_ids else {}
        for document in documents:
            for chunk in document.previous:
                index = chunk["index"]
                drawer = old.get(chunk["drawer"])
                if index >= len(document.chunks):
                    if drawer is not None:
                        drawer = self._latest_own(drawer, document, index)
                        if drawer.get("valid_to") is None:
                            self.revisions.retire(drawer)
                            state["retired"] += 1
                    continue
                if chunk["hash"] == document.hashes[index]:
                    document.drawers[index] = chunk["drawer"]
                    continue
                if drawer is None:
                    continue
                new_id = self._chunk_id(document, index)
                if drawer.get("superseded_by") == new_id:
                    document.drawers[index] = new_id  # done before a crash
                    continue
                drawer = self._latest_own(drawer, document, index)
                if drawer.get("valid_to") is None and drawer["content"] == document.chunks[index]:
                    document.drawers[index] = drawer["id"]
                    continue
                # Closed by someone else meanwhile, it is left: the chunk is filed afresh below.
                self._supersede(drawer, document, index, state)

    def _take_over_unrecorded(self, documents: list[Document], state: dict[str, Any]) -> None:
        """The chunks' drawers that an unfinished run filed and never recorded (a kill between
        filing a batch and recording its documents), found by the document's uri: each is the
        document's drawer for its chunk now, kept if its text is the chunk's, superseded if
        not, retired past the document's end. Without this, a document changed meanwhile (or
        mined by another job: the ids differ) would be filed again beside them."""
        located = [document for document in documents if document.canonical.uri]
        places = [
            (document.canonical.room or self.room, document.canonical.uri or "")
            for document in located
        ]
        found = self.hierarchy.current_drawers_with_uri(self.wing, places)
        for document, drawers in zip(located, found, strict=True):
            for index, drawer in self._unrecorded(document, drawers).items():
                if index >= len(document.chunks):
                    self.revisions.retire(drawer)
                    state["retired"] += 1
                elif drawer["content"] == document.chunks[index]:
                    document.drawers[index] = drawer["id"]
                else:
                    self._supersede(drawer, document, index, state)

    def _unrecorded(
        self, document: Document, drawers: list[dict[str, Any]]
    ) -> dict[int, dict[str, Any]]:
        """By chunk index, the latest of `drawers` mined from this document for a chunk the
        document's record does not cover (a recorded chunk's later versions are followed from
        its drawer) and this run has not given a drawer yet."""
        recorded = {chunk["index"] for chunk in document.previous}
        unrecorded: dict[int, dict[str, Any]] = {}
        for drawer in sorted(drawers, key=lambda drawer: drawer["created_at"]):
            index = _origin_of(drawer).get("chunk")
            if (
                isinstance(index, int)
                and index not in recorded
                and index not in document.drawers
                and self._mined_from(drawer, document, index)
            ):
                unrecorded[index] = drawer
        return unrecorded

    def _file_new(
        self, documents: list[Document], state: dict[str, Any], *, replaying: bool
    ) -> None:
        """File every chunk that has no drawer yet, in one batch; a first chunk whose name is
        held by another drawer (even one with the same text: a mined chunk is always its own
        drawer) is filed unnamed."""
        wanted = [
            (document, index)
            for document in documents
            for index in range(len(document.chunks))
            if index not in document.drawers
        ]
        if replaying:
            done = self.hierarchy.existing_drawer_ids(
                self._chunk_id(document, index) for document, index in wanted
            )
            for document, index in wanted:
                if self._chunk_id(document, index) in done:
                    document.drawers[index] = self._chunk_id(document, index)
            wanted = [(d, i) for d, i in wanted if i not in d.drawers]
        for start in range(0, len(wanted), FILE_CHUNKS):
            self._file_chunks(wanted[start : start + FILE_CHUNKS], state)

    def _file_chunks(self, wanted: list[tuple[Document, int]], state: dict[str, Any]) -> None:
        attempts = [(document, index, True) for document, index in wanted]
        while attempts:
            entries = [
                (
                    self.wing,
                    document.canonical.room or self.room,
                    self._filing(document, index, named),
                )
                for document, index, named in attempts
            ]
            retry = []
            for (document, index, named), filed in zip(
                attempts, self.filing.file_batch(self.ctx, entries), strict=True
            ):
                held = filed.error is not None or not filed.created
                if named and held:
                    if not self._take_over(document, index, filed, state):
                        retry.append((document, index, False))
                    continue
                if filed.error is not None:
                    raise filed.error
                assert filed.drawer is not None
                document.drawers[index] = filed.drawer["id"]
                if filed.created:
                    state["created"] += 1
                    state["similar"] += filed.similar
            attempts = retry

    def _latest_own(self, drawer: dict[str, Any], document: Document, index: int) -> dict[str, Any]:
        """The current version of a recorded chunk's drawer: a run that superseded it and ended
        before it recorded the document (a crash between the two) left the replacement, which
        is this chunk's drawer now, and may have been superseded in turn the same way. A drawer
        closed with no successor (retired by such a run: the document had shrunk) is the end."""
        seen = {drawer["id"]}
        while drawer.get("valid_to") is not None:
            successor_id = drawer.get("superseded_by")
            if successor_id is None or successor_id in seen:
                break
            successor = self.hierarchy.drawers_by_ids([successor_id]).get(successor_id)
            if successor is None or not self._mined_from(successor, document, index):
                break
            seen.add(successor_id)
            drawer = successor
        return drawer

    def _take_over(
        self, document: Document, index: int, filed: Filed, state: dict[str, Any]
    ) -> bool:
        """Whether the drawer holding the chunk's name was mined from this very document by a
        run that ended before it recorded the document: it is then the document's drawer, kept
        if its text is the chunk's and superseded if not. A name held by anything else (another
        source's copy of the file, a drawer filed by hand) leaves the chunk to be filed
        unnamed."""
        holder = filed.drawer if filed.error is None else None
        name = _drawer_name(document.canonical.name)
        if holder is None and name is not None:
            room = document.canonical.room or self.room
            holder = self.hierarchy.drawer_named(self.wing, room, name)
        if holder is None or not self._mined_from(holder, document, index):
            return False
        if holder["content"] == document.chunks[index]:
            document.drawers[index] = holder["id"]
            return True
        return self._supersede(holder, document, index, state)

    def _supersede(
        self, drawer: dict[str, Any], document: Document, index: int, state: dict[str, Any]
    ) -> bool:
        """Supersede `drawer` with the chunk, which it then holds; False when the drawer was
        superseded by someone else meanwhile."""
        try:
            revision = self.revisions.revise(
                self.ctx, drawer, self._filing(document, index, named=False)
            )
        except DrawerSuperseded:
            return False
        document.drawers[index] = revision.replacement["id"]
        state["superseded"] += 1
        state["similar"] += revision.similar
        return True

    def _mined_from(self, drawer: Mapping[str, Any], document: Document, index: int) -> bool:
        origin = _origin_of(drawer)
        return (
            origin.get("source_id") == self.source_id
            and origin.get("document") == document.raw.external_id
            and origin.get("chunk") == index
        )

    def _filing(self, document: Document, index: int, named: bool) -> Filing:
        canonical = document.canonical
        return Filing(
            content=document.chunks[index],
            name=_drawer_name(canonical.name) if named and index == 0 else None,
            tags=list(canonical.tags),
            source={
                "kind": canonical.kind,
                "uri": canonical.uri,
                "origin": _origin(
                    source_id=self.source_id,
                    source=self.ref.source,
                    document=document.raw.external_id,
                    chunk=index,
                    revision=document.raw.revision,
                    # The document's metadata as mined: what source preferences match on, and
                    # when it happened, which their freshness counts from (search.md 5).
                    metadata=document.raw.metadata or None,
                    occurred_at=document.raw.occurred_at,
                ),
            },
            drawer_id=self._chunk_id(document, index),
            job_id=self.job.job_id,
            # A mined chunk is always stored: a copy is linked, never skipped.
            keep_copy=True,
        )

    def _chunk_id(self, document: Document, index: int) -> str:
        return unit_id(
            self.job.job_id,
            f"mine-chunk:{self.source_id}:{document.raw.external_id}:{index}:"
            f"{document.hashes[index]}",
        )

    def _document_row(self, document: Document, now: Any) -> dict[str, Any]:
        raw = document.raw
        row = {
            "external_id": raw.external_id,
            "revision": raw.revision,
            "raw_hash": hashlib.sha256(raw.body.encode()).hexdigest(),
            "title": document.canonical.title,
            "metadata": raw.metadata,
            "occurred_at": raw.occurred_at,
            "chunks": [
                {"index": index, "hash": document.hashes[index], "drawer": document.drawers[index]}
                for index in range(len(document.chunks))
            ],
            "acquired_at": now,
            "job": self.job.job_id,
        }
        if self.adapter.capabilities.retains_raw:
            row["raw"] = raw.body
        return row


# One run per source at a time in this daemon: two runs of one place would start from the same
# cursor and file the same new documents twice. (Other processes of a remote palace wait on the
# place's claim in the store, `SourceService.claim_run`.)
_source_locks: dict[str, threading.Lock] = {}
_source_locks_guard = threading.Lock()


def _source_lock(source_id: str) -> threading.Lock:
    with _source_locks_guard:
        return _source_locks.setdefault(source_id, threading.Lock())


def _drawer_name(name: str | None) -> str | None:
    """The document's name, when it is a valid drawer name (else the chunk is unnamed)."""
    if name is None:
        return None
    try:
        return check_drawer_name(name)
    except PathInvalid:
        return None


def _done(total: int, truncated: bool, full: bool) -> str:
    if truncated:
        again = "run the mine again without full" if full else "run the mine again"
        return (
            f"stopped after {total} documents, the most one job reads (mining.max_documents): "
            f"{again} to continue from there"
        )
    return f"done: {total} of {total} documents"


def run(job: JobRun[MineServices]) -> dict[str, Any]:
    return Pipeline(job).run()


MINE = JobKind(
    name="mine",
    priority=Priority.BACKGROUND,
    parse=parse,
    run=run,
    gate=lambda params: "mine",
    summary="read a source (a directory, by default) and file its documents as drawers",
    writes_palace=lambda params: True,
)


def _origin_of(drawer: Mapping[str, Any]) -> Mapping[str, Any]:
    """A drawer's `source.origin`, empty when it was not mined."""
    return (drawer.get("source") or {}).get("origin") or {}


def _origin(**values: Any) -> dict[str, Any]:
    """A mined drawer's `source.origin`: what is known of where it came from, nothing unset."""
    return {key: value for key, value in values.items() if value is not None}
