"""Jobs queued by themselves: a `Sweeper` submits a job of one kind at start-up and after the
events of this process that call for one, with at most one of that kind waiting at a time.

A burst of events (a mine files thousands of drawers) is gathered for up to `GATHER_MAX_SECS`,
until `GATHER_SECS` pass without another, and then looked at once: one look at the queue serves
them all. A running job does not count as waiting, so what is written during a run is read by
the next one. The embed job (`palace.embeddings.job`) and the extract job (`graph.extraction`)
each subclass it with what enables it and which events call for it, and their apps register the
subclass with their job kinds (`jobs.kinds.AppJobs`); the daemon and `memcastle worker` start
one of each once their job workers run (`memcastle_project.runtime`).
"""

from __future__ import annotations

import abc
import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from kernel.context import RequestContext
from kernel.errors import MemCastleError
from kernel.events import Event, EventBus
from kernel.logs import fields

if TYPE_CHECKING:
    from jobs.services import JobService

# Who an automatic job is recorded as requested by.
SWEEP_REQUESTER = "auto"
# After an event that calls for a job, how long to wait for more before looking at the queue
# (a quiet spell of GATHER_SECS, at most GATHER_MAX_SECS in all).
GATHER_SECS = 0.2
GATHER_MAX_SECS = 2.0
# How long one wait for an event lasts before the follower checks whether the bus closed.
IDLE_SECS = 3600


class Sweeper(abc.ABC):
    """Queues a job of kind `kind` at start-up and after the events that call for one, while
    `enabled`. Subclasses say which events may call for one (`triggers`, looked at one by one on
    the event loop) and whether a gathered burst does (`calls_for`, run on a worker thread, so
    it may read the store)."""

    kind: str
    # What the warning says will try again when a job could not be queued.
    retried_by: str

    def __init__(self, jobs: JobService, events: EventBus) -> None:
        self.jobs = jobs
        self.events = events
        # Logged under the subclass's module: each job kind's sweeps keep their own logger name,
        # so `MEMCASTLE_LOG=palace.embeddings.job=debug` shows the embed sweeps' decisions.
        self.logger = logging.getLogger(type(self).__module__)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    @abc.abstractmethod
    def enabled(self) -> bool:
        """Whether jobs of this kind can run here at all (a provider is configured)."""

    @abc.abstractmethod
    def triggers(self, event: Event) -> bool:
        """Whether `event` may call for a job: it starts a burst."""

    def calls_for(self, burst: list[Event]) -> bool:
        """Whether a burst that began with a triggering event calls for a job."""
        return True

    def start(self) -> None:
        """Queue one now and follow this process's events until the event bus closes (at
        shutdown)."""
        if not self.enabled or self._thread is not None:
            return
        self.queue(at_start_up=True)
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._follow()),
            name=f"memcastle-{self.kind}-sweeps",
            daemon=True,
        )
        self._thread.start()

    def queue(self, *, at_start_up: bool = False) -> dict[str, Any] | None:
        """Submit a job unless one is already queued; returns the job submitted.

        At start-up a running one counts too (a job recovered from a crash may have been
        claimed already): nothing was written since, so it leaves nothing for another."""
        with self._lock:
            try:
                statuses = ("queued", "running") if at_start_up else ("queued",)
                for status in statuses:
                    if self.jobs.any_waiting(self.kind, (status,)):
                        self.logger.debug("%s sweep: a job is already %s", self.kind, status)
                        return None
                return self.jobs.submit(
                    RequestContext.build(requested_by=SWEEP_REQUESTER), {"type": self.kind}
                )
            except MemCastleError as exc:
                self.logger.warning(
                    "could not queue an %s job; %s tries again",
                    self.kind,
                    self.retried_by,
                    extra=fields(error=exc.code),
                )
                return None

    async def _follow(self) -> None:
        subscription = self.events.subscribe(foreign=False)
        try:
            while True:
                event = await subscription.next(IDLE_SECS)
                if event is None:
                    if subscription.closed:
                        return
                    continue
                if not self.triggers(event):
                    continue
                burst = [event]
                until = asyncio.get_running_loop().time() + GATHER_MAX_SECS
                while asyncio.get_running_loop().time() < until:
                    more = await subscription.next(GATHER_SECS)
                    if more is None:
                        break
                    burst.append(more)
                if subscription.closed:
                    return
                if await asyncio.to_thread(self.calls_for, burst):
                    await asyncio.to_thread(self.queue)
        finally:
            subscription.cancel()
