"""What a handler sees of its job while it runs: parameters, checkpoint, and the way to save.

Handlers loop over units of work. After each unit they call `save` with the state to resume from;
the save is fenced on the lease, and it is where a pause, cancel or shutdown interrupt is
honoured, so a handler stops only between units and never loses a finished one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kernel.errors import MemCastleError
from kernel.store import Statement

# How often a run waiting for another's lock checks for a pause or cancel.
WAIT_SLICE_SECS = 0.25


class JobStopped(Exception):
    """Raised inside a handler to stop it between units; the runner decides the new state."""


class LeaseLost(MemCastleError):
    """The job is no longer ours: force-cancelled, or taken over after our lease expired."""

    code = "memcastle::jobs::lease_lost"
    help = "another worker took the job after this one's lease expired; nothing to do"


Saver = Callable[[dict[str, Any], dict[str, Any]], Mapping[str, Any]]
# The write of a run's end state (completed, with its result), as a statement.
Ender = Callable[["JobRun[Any]", dict[str, Any]], Statement]


class JobRun[Services]:
    """One run of a job. `services` is what its handler calls: the services the composition
    root handed to the executor, typed by the protocol the handler's app declares
    (`palace.checkpoint.CheckpointServices`, ...)."""

    def __init__(self, row: Mapping[str, Any], services: Services, save: Saver, end: Ender) -> None:
        self.services = services
        # The row as last written by this run; the final transition is computed from it.
        self.row: Mapping[str, Any] = row
        self.job_id: str = row["id"]
        self.kind: str = row["kind"]["type"]
        self.params: dict[str, Any] = {k: v for k, v in row["kind"].items() if k != "type"}
        self.checkpoint: dict[str, Any] = dict(row.get("checkpoint") or {})
        self.attempt: int = int(row.get("attempt") or 1)
        # The state of the last unit, when the job's end state is to carry it (see `save`).
        self.unsaved: dict[str, Any] = {}
        self.requested_by: str = row.get("requested_by") or "http"
        self._save = save
        self._end = end
        # The row as the handler's own last write left it, when that write ended the job.
        self.ended: Mapping[str, Any] | None = None
        self._wake = threading.Event()
        # Set from other threads: a request seen on the row, a shutdown interrupt, or an abort
        # (force-cancel or a lost lease), which also cuts a `sleep` short.
        self.stop_requested = bool(row.get("pause_requested") or row.get("cancel_requested"))
        self.interrupted = False
        self.aborted = False

    @contextmanager
    def holding(self, lock: threading.Lock) -> Iterator[None]:
        """Hold `lock` while the run works, waiting for the run that holds it and honouring a
        pause or cancel meanwhile: two runs of some kinds (embed, extract, a mine of one source)
        would do the same work twice."""
        while not lock.acquire(timeout=WAIT_SLICE_SECS):
            self.check()
        try:
            yield
        finally:
            lock.release()

    def save(
        self,
        checkpoint: dict[str, Any],
        *,
        current: int,
        total: int | None = None,
        message: str | None = None,
        last: bool = False,
    ) -> None:
        """Persist the resume state and progress, then stop here if a stop is pending.

        After the `last` unit nothing is left to stop before: the state is kept for the job's
        end state to write, which saves a write per job (a fifth of a 10-item checkpoint's
        time). A crash in between replays that unit, as it would a unit not saved yet.
        """
        progress: dict[str, Any] = {"current": current}
        if total is not None:
            progress["total"] = total
        if message is not None:
            progress["message"] = message
        if last:
            self.unsaved = {"checkpoint": checkpoint, "progress": progress}
            self.checkpoint = dict(checkpoint)
            return
        row = self._save(checkpoint, progress)
        self.row = row
        self.checkpoint = dict(checkpoint)
        if row.get("pause_requested") or row.get("cancel_requested"):
            self.stop_requested = True
        self.check()

    def ending(self, result: dict[str, Any]) -> Statement:
        """The write of this job's end state: completed, with `result` and the state of the
        last unit (saved with `last=True`), for the handler to run in the transaction of that
        unit's own writes, a write fewer per job. The handler then hands what it returned to
        `finished` and returns `result`; a handler that does not leaves the end state to the
        runner."""
        return self._end(self, result)

    def finished(self, row: Mapping[str, Any] | None) -> None:
        """The end state written by `ending`'s statement: the row it returned, None when the
        job was no longer ours."""
        if row is None:
            raise LeaseLost(f"job {self.job_id} is no longer held by this worker")
        self.ended = row

    @property
    def resumed(self) -> bool:
        """Whether an earlier run of this job may have done work it did not save."""
        return self.attempt > 1

    def waiting_for(self, claim: Callable[[], bool]) -> None:
        """Return once `claim()` is True, trying every `WAIT_SLICE_SECS` and honouring a pause
        or cancel meanwhile: what another process runs (a mine of the same source) is not
        waited for with a lock of this one."""
        while not claim():
            self.sleep(WAIT_SLICE_SECS)

    def check(self) -> None:
        """Raise `JobStopped` if the job should stop before its next unit."""
        if self.stop_requested or self.interrupted or self.aborted:
            raise JobStopped()

    def sleep(self, seconds: float) -> None:
        """Wait as part of a unit's work; a pending stop ends the wait and the unit."""
        self.check()
        self._wake.wait(seconds)
        self.check()

    def request_stop(self) -> None:
        self.stop_requested = True
        self._wake.set()

    def interrupt(self) -> None:
        self.interrupted = True
        self._wake.set()

    def abort(self) -> None:
        self.aborted = True
        self._wake.set()
