"""The `embed` job: give every drawer without a vector in the default profile its vector.

Drawers are taken oldest `created_at` first (current and superseded alike: a search of the past
needs the drawers of the past), optionally one wing's, in batches of the profile's `batch_size`.
A batch is one unit of work: its vectors are stored in one transaction, then the checkpoint is
saved, so pause and cancel land between batches. The database is the cursor: a resumed or later
run selects only the drawers still without a vector, so nothing is embedded twice. A provider
that fails fails the job with `memcastle::embed::failed`; what was stored before stays.

`Sweeper` queues one automatically after drawer writes and at start-up, when the default
profile can embed, with at most one waiting at a time.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jobs import kinds
from jobs.run import JobRun
from jobs.states import Priority
from memcastle_project import runtime
from memcastle_project.context import RequestContext
from memcastle_project.errors import InputInvalid, MemCastleError
from memcastle_project.events import Event, EventBus
from memcastle_project.logs import fields
from palace.services import WingNotFound

if TYPE_CHECKING:
    from jobs.services import JobService
    from palace.embeddings.service import EmbeddingService

logger = logging.getLogger(__name__)

PARAMETERS = ("wing",)
# Who an automatic embed job is recorded as requested by.
SWEEP_REQUESTER = "auto"
# After a drawer write, how long the sweeper gathers more writes before it looks at the queue:
# a mine files thousands of drawers, and one look serves them all.
GATHER_SECS = 0.2
GATHER_MAX_SECS = 2.0


def parse(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters as stored on the job; refused at submission when nothing can embed."""
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise InputInvalid(
            unknown[0], f"is not an embed job parameter (known: {', '.join(PARAMETERS)})"
        )
    current = runtime.current()
    params: dict[str, Any] = {}
    wing = body.get("wing")
    if wing is not None:
        if not isinstance(wing, str) or not wing:
            raise InputInvalid("wing", "must be a wing's name")
        current.palace.find_wing(wing)
        params["wing"] = wing
    current.embeddings.embedding_profile()
    return params


# One embed run at a time in a process: two would select the same drawers and embed them twice.
_run_lock = threading.Lock()
# How often a run waiting for another checks for a pause or cancel.
WAIT_SLICE_SECS = 0.25


def run(job: JobRun) -> dict[str, Any]:
    while not _run_lock.acquire(timeout=WAIT_SLICE_SECS):
        job.check()
    try:
        return _run(job)
    finally:
        _run_lock.release()


def _run(job: JobRun) -> dict[str, Any]:
    service: EmbeddingService = runtime.current().embeddings
    profile = service.embedding_profile()
    repository = service.repository
    wing_id = None
    if job.params.get("wing") is not None:
        try:
            wing_id = runtime.current().palace.find_wing(job.params["wing"])["id"]
        except WingNotFound:
            # Deleted since the job was submitted: nothing of it is left to embed.
            job.save({}, current=0, total=0, message="the wing no longer exists", last=True)
            return {"embedded": 0, "profile": profile.name}
    state: dict[str, Any] = {"embedded": 0, **job.checkpoint}
    if state.get("profile") != profile.name:
        # Restarted with another default profile: its count starts again.
        state = {"embedded": 0}
    state["profile"] = profile.name
    done = repository.embedded(profile.name)
    missing = repository.oldest_first(
        drawer for drawer in repository.drawer_ids(wing_id) if drawer not in done
    )
    total = state["embedded"] + len(missing)
    if not missing:
        job.save(state, current=total, total=total, message="nothing left to embed", last=True)
    size = profile.batch_size
    for start in range(0, len(missing), size):
        batch = missing[start : start + size]
        contents = repository.contents(batch)
        ids = [drawer for drawer in batch if drawer in contents]
        vectors = service.embed_documents(profile, [contents[drawer] for drawer in ids])
        written = service.store_vectors(profile, dict(zip(ids, vectors, strict=True)))
        state["embedded"] += len(written)
        # Drawers deleted meanwhile are neither embedded nor left to do.
        total -= len(batch) - len(written)
        last = start + size >= len(missing)
        job.save(
            state,
            current=state["embedded"],
            total=total,
            message="done" if last else f"drawer {state['embedded']} of {total}",
            last=last,
        )
    return {"embedded": state["embedded"], "profile": profile.name}


EMBED = kinds.register(
    kinds.JobKind(
        name="embed",
        priority=Priority.LOW,
        parse=parse,
        run=run,
        gate=lambda params: "embed",
        summary="embed the drawers that have no vector in the default embedding profile",
        # It writes vectors only, each only while its drawer exists: deletes need not wait.
        writes_palace=lambda params: False,
    )
)


class Sweeper:
    """Queues an embed job at start-up and after drawer writes, when the default profile can
    embed. Coalesced: none is queued while one is already waiting (a running one does not
    count, so writes made during a run are embedded by the next)."""

    def __init__(self, embeddings: EmbeddingService, jobs: JobService, events: EventBus) -> None:
        self.embeddings = embeddings
        self.jobs = jobs
        self.events = events
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        default = self.embeddings.default
        return default is not None and default.can_embed

    def start(self) -> None:
        """Queue one now and follow the drawer writes of this process until the event bus
        closes (at shutdown)."""
        if not self.enabled or self._thread is not None:
            return
        self.queue(at_start_up=True)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._follow()), name="memcastle-embed-sweeps", daemon=True
        )
        self._thread.start()

    def queue(self, *, at_start_up: bool = False) -> dict[str, Any] | None:
        """Submit an embed job unless one is already queued; returns the job submitted.

        At start-up a running one counts too (a job recovered from a crash may have been
        claimed already): nothing was written since, so it leaves nothing for another."""
        with self._lock:
            try:
                statuses = ("queued", "running") if at_start_up else ("queued",)
                for status in statuses:
                    _, waiting = self.jobs.repository.list(
                        status=status, kind="embed", limit=1, offset=0
                    )
                    if waiting:
                        logger.debug("embed sweep: a job is already %s", status)
                        return None
                return self.jobs.submit(
                    RequestContext.build(requested_by=SWEEP_REQUESTER), {"type": "embed"}
                )
            except MemCastleError as exc:
                logger.warning(
                    "could not queue an embed job; the next drawer write or start tries again",
                    extra=fields(error=exc.code),
                )
                return None

    async def _follow(self) -> None:
        subscription = self.events.subscribe()
        try:
            while True:
                event = await subscription.next(3600)
                if event is None:
                    if subscription.closed:
                        return
                    continue
                if not _wants_vector(event):
                    continue
                # Let the rest of a burst of writes arrive, then look once (a long mine is
                # looked at every GATHER_MAX_SECS).
                until = asyncio.get_running_loop().time() + GATHER_MAX_SECS
                while asyncio.get_running_loop().time() < until:
                    if await subscription.next(GATHER_SECS) is None:
                        break
                if subscription.closed:
                    return
                await asyncio.to_thread(self.queue)
        finally:
            subscription.cancel()


def _wants_vector(event: Event) -> bool:
    """A drawer was filed, or this follower fell behind and may have missed one."""
    return event.kind == "resync" or (
        event.kind == "drawer" and event.data.get("action") == "created"
    )
