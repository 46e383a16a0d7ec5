"""The `embed` job: give every drawer without a vector in the default profile its vector.

Drawers are taken oldest `created_at` first (current and superseded alike: a search of the past
needs the drawers of the past), optionally one wing's, in batches of the profile's `batch_size`.
A batch is one unit of work: its vectors are stored in one transaction, then the checkpoint is
saved, so pause and cancel land between batches. The database is the cursor: a resumed or later
run selects only the drawers still without a vector, so nothing is embedded twice. A provider
that fails fails the job with `memcastle::embed::failed`; what was stored before stays.

`EmbedSweeper` queues one automatically after drawer writes and at start-up, when the default
profile can embed, with at most one waiting at a time (`jobs.sweeper`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from jobs.kinds import JobKind
from jobs.states import Priority
from jobs.sweeper import Sweeper
from kernel.errors import InputInvalid
from kernel.events import Event
from palace.hierarchy import WingNotFound

if TYPE_CHECKING:
    from jobs.run import JobRun
    from jobs.services import JobService
    from kernel.events import EventBus
    from palace.embeddings.service import EmbeddingService
    from palace.hierarchy import HierarchyService

PARAMETERS = ("wing",)


class EmbedServices(Protocol):
    """What the embed job and its sweeps call."""

    @property
    def embeddings(self) -> EmbeddingService: ...
    @property
    def hierarchy(self) -> HierarchyService: ...
    @property
    def jobs(self) -> JobService: ...
    @property
    def events(self) -> EventBus: ...


def parse(body: Mapping[str, Any], services: EmbedServices) -> dict[str, Any]:
    """The parameters as stored on the job; refused at submission when nothing can embed."""
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise InputInvalid(
            unknown[0], f"is not an embed job parameter (known: {', '.join(PARAMETERS)})"
        )
    wing = services.hierarchy.wing_parameter(body.get("wing"))
    services.embeddings.embedding_profile()
    return {"wing": wing} if wing is not None else {}


# One embed run at a time in a process: two would select the same drawers and embed them twice.
_run_lock = threading.Lock()


def run(job: JobRun[EmbedServices]) -> dict[str, Any]:
    with job.holding(_run_lock):
        return _run(job)


def _run(job: JobRun[EmbedServices]) -> dict[str, Any]:
    service = job.services.embeddings
    profile = service.embedding_profile()
    wing_id = None
    if job.params.get("wing") is not None:
        try:
            wing_id = job.services.hierarchy.find_wing(job.params["wing"])["id"]
        except WingNotFound:
            # Deleted since the job was submitted: nothing of it is left to embed.
            job.save({}, current=0, total=0, message="the wing no longer exists", last=True)
            return {"embedded": 0, "profile": profile.name}
    state: dict[str, Any] = {"embedded": 0, **job.checkpoint}
    if state.get("profile") != profile.name:
        # Restarted with another default profile: its count starts again.
        state = {"embedded": 0}
    state["profile"] = profile.name
    missing = service.missing(profile, wing_id)
    total = state["embedded"] + len(missing)
    if not missing:
        job.save(state, current=total, total=total, message="nothing left to embed", last=True)
    size = profile.batch_size
    for start in range(0, len(missing), size):
        batch = missing[start : start + size]
        contents = service.contents(batch)
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


EMBED = JobKind(
    name="embed",
    priority=Priority.LOW,
    parse=parse,
    run=run,
    gate=lambda params: "embed",
    summary="embed the drawers that have no vector in the default embedding profile",
    # It writes vectors only, each only while its drawer exists: deletes need not wait.
    writes_palace=lambda params: False,
)


class EmbedSweeper(Sweeper):
    """Queues an embed job at start-up and after drawer writes, when the default profile can
    embed."""

    kind = "embed"
    retried_by = "the next drawer write or start"

    def __init__(self, services: EmbedServices) -> None:
        super().__init__(services.jobs, services.events)
        self.embeddings = services.embeddings

    @property
    def enabled(self) -> bool:
        default = self.embeddings.default
        return default is not None and default.can_embed

    def triggers(self, event: Event) -> bool:
        return _wants_vector(event)


def _wants_vector(event: Event) -> bool:
    """A drawer was filed, or this follower fell behind and may have missed one."""
    return event.kind == "resync" or (
        event.kind == "drawer" and event.data.get("action") == "created"
    )
