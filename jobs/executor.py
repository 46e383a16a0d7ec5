"""This process's side of the job queue: claiming, running, leases, recovery and the drain.

A broker message only wakes the executor: `execute` then claims the most urgent queued job with a
compare-and-set on its row and runs it on the calling (Celery pool) thread. While a job runs, its
lease is renewed every third of `jobs.lease_ttl_secs`, and every write it makes is fenced on that
lease, so a worker that lost its job can no longer touch it.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from jobs import kinds
from jobs.repository import JobRepository
from jobs.run import JobRun, JobStopped, LeaseLost
from jobs.states import Status, transition
from kernel.clock import utc_now
from kernel.config import JobsConfig
from kernel.errors import MemCastleError
from kernel.events import EventBus
from kernel.logs import fields
from kernel.store import Statement

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
# A job as `JobService.submit` queues it, the state most claims find.
NEVER_CLAIMED = {"id": None, "status": Status.QUEUED.value, "attempt": 0}
# How many times a stopping job re-reads a row that changed under its final write.
STOP_ATTEMPTS = 5


def recovery_move(row: Mapping[str, Any]) -> str:
    """What a crash leaves a running job as: the user's request first, then the budget."""
    if row.get("cancel_requested"):
        return "cancel"
    if row.get("pause_requested"):
        return "pause"
    if int(row.get("recovery_attempts") or 0) < int(row.get("max_attempts") or MAX_ATTEMPTS):
        return "recover"
    return "fail"


class Executor:
    def __init__(
        self,
        repository: JobRepository,
        events: EventBus,
        config: JobsConfig,
        *,
        exclusive_store: bool,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self._repository = repository
        self.events = events
        self.lease_ttl = dt.timedelta(seconds=config.lease_ttl_secs)
        self.concurrency = config.max_concurrency
        # An embedded palace is locked by this process, so no other worker can hold a job.
        self.exclusive_store = exclusive_store
        self.clock = clock
        self.worker_id = f"memcastle-{os.getpid()}-{secrets.token_hex(4)}"
        self.dispatch: Callable[[str], None] = lambda job_id: None
        # What job kinds call: handed over by the composition root once it has built them (they
        # include the job service, which is built on this executor).
        self.services: Any = None
        self.closing = False
        self._runs: dict[str, JobRun] = {}
        self._claiming: set[str] = set()
        # Claims in flight that do not know yet which job they claim (`_claim`).
        self._blind_claims = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopped = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._drain_started = 0.0

    # Notices and dispatch, shared with the submitting side.

    def announce(self, row: Mapping[str, Any], action: str) -> None:
        self.events.publish(
            "job", action, id=row["id"], job_kind=row["kind"]["type"], status=row["status"]
        )

    # What control requests ask of the jobs running here.

    def is_live(self, row: Mapping[str, Any]) -> bool:
        """Whether a running job has a worker: ours, or another's whose lease is current."""
        with self._lock:
            if row.get("lease_owner") == self.worker_id:
                return (
                    row["id"] in self._runs or row["id"] in self._claiming or self._blind_claims > 0
                )
        expires = row.get("lease_expires_at")
        return not self.exclusive_store and expires is not None and expires > self.clock()

    def notify(self, job_id: str) -> None:
        """A pause or cancel was requested: a job running here stops at its next unit."""
        run = self._runs.get(job_id)
        if run is not None:
            run.request_stop()

    def abort(self, job_id: str) -> None:
        """The job was force-cancelled: a job running here stops at once."""
        run = self._runs.get(job_id)
        if run is not None:
            run.abort()

    # Running jobs.

    def execute(self, job_id: str) -> None:
        """Handle one message (naming `job_id`): claim the most urgent queued job and run it.

        The named job is usually the one claimed; when a more urgent one waits, that one goes
        first and the named job is claimed by a later message.
        """
        run = self._claim()
        if run is not None:
            self._run(run)

    def _claim(self) -> JobRun | None:
        """Claim the most urgent queued job, or return None when none is queued.

        The first try assumes the most urgent job was never claimed, which saves reading the
        queue first; a job in another state (resumed, retried, recovered) is claimed from the
        state read. Losing every candidate to other workers means reading again, not giving
        up: the job submitted meanwhile may have had its message taken by one of those workers,
        and this message is then the only one left to run it.
        """
        with self._lock:
            if self.closing:
                return None
            self._blind_claims += 1
        row = None
        try:
            row, candidates = self._repository.claim_first(self._claim_changes(NEVER_CLAIMED))
        finally:
            with self._lock:
                self._blind_claims -= 1
                run = self._register(row)
        if run is not None:
            return self._claimed(run)
        while candidates:
            for candidate in candidates:
                with self._lock:
                    if self.closing:
                        return None
                run = self._try_claim(candidate)
                if run is not None:
                    return run
            candidates = self._repository.claim_candidates()
        return None

    def _try_claim(self, candidate: Mapping[str, Any]) -> JobRun | None:
        with self._lock:
            self._claiming.add(candidate["id"])
        row = None
        try:
            row = self._repository.compare_and_set(candidate, self._claim_changes(candidate))
        finally:
            with self._lock:
                self._claiming.discard(candidate["id"])
                run = self._register(row)
        return self._claimed(run) if run is not None else None

    def _claim_changes(self, seen: Mapping[str, Any]) -> dict[str, Any]:
        now = self.clock()
        changes = transition(seen, "claim", now)
        changes["lease_owner"] = self.worker_id
        changes["lease_expires_at"] = now + self.lease_ttl
        return changes

    def _register(self, row: Mapping[str, Any] | None) -> JobRun | None:
        """The run of a job just claimed (None for none); called with the lock held."""
        if row is None:
            return None
        run = JobRun(row, self.services, self._saver(row["id"]), self._end_statement)
        self._runs[row["id"]] = run
        if self.closing:
            # The drain began while this claim was in flight.
            run.interrupt()
        return run

    def _claimed(self, run: JobRun) -> JobRun:
        logger.info("job claimed by worker", extra=self._fields(run.row, worker_id=True))
        self.announce(run.row, "updated")
        return run

    def _saver(self, job_id: str) -> Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]:
        def save(checkpoint: dict[str, Any], progress: dict[str, Any]) -> dict[str, Any]:
            row = self._repository.fenced_update(
                job_id,
                self.worker_id,
                {"checkpoint": checkpoint, "progress": progress, "updated_at": self.clock()},
            )
            if row is None:
                raise LeaseLost(f"job {job_id} is no longer held by this worker")
            self.announce(row, "updated")
            return row

        return save

    def _end_statement(self, run: JobRun[Any], result: dict[str, Any]) -> Statement:
        changes = {**run.unsaved, **transition(run.row, "complete", self.clock()), "result": result}
        return self._repository.end_statement(run.job_id, self.worker_id, changes)

    def _run(self, run: JobRun) -> None:
        started = time.monotonic()
        kind = kinds.get(run.kind)
        try:
            if kind is None:
                raise MemCastleError(
                    f"this daemon cannot run jobs of kind {run.kind!r}",
                    code="memcastle::jobs::kind_unknown",
                    help="run the job with the MemCastle version that queued it",
                )
            logger.info("job started", extra=fields(job_id=run.job_id, job_type=run.kind))
            result = kind.run(run)
        except JobStopped:
            self._stop(run, started)
        except LeaseLost:
            self._abandon(run)
        except MemCastleError as exc:
            self._finish(run, "fail", started, error=exc.message, error_code=exc.code)
        except Exception as exc:
            logger.exception("job handler failed", extra=fields(job_id=run.job_id))
            self._finish(
                run,
                "fail",
                started,
                error=f"the {run.kind} job failed unexpectedly ({type(exc).__name__})",
                error_code="memcastle::server::failed",
            )
        else:
            if run.ended is not None:
                self._ended(run, "complete", started, run.ended)
            else:
                self._finish(run, "complete", started, result=result)
        finally:
            with self._idle:
                self._runs.pop(run.job_id, None)
                self._idle.notify_all()

    def _stop(self, run: JobRun, started: float) -> None:
        """The handler stopped between units: cancel and pause requests win over an interrupt.

        The end state is written as a compare-and-set on the row as read, so a request that
        lands in between is read again and wins, instead of being lost.
        """
        for _ in range(STOP_ATTEMPTS):
            try:
                row = self._repository.get(run.job_id)
            except MemCastleError:
                self._unrecorded(run, "stop")
                return
            if row is None or row.get("lease_owner") != self.worker_id:
                self._abandon(run)
                return
            if row["status"] != Status.RUNNING:
                self._abandon(run)
                return
            if row.get("cancel_requested"):
                move = "cancel"
            elif row.get("pause_requested"):
                move = "pause"
            else:
                move = "interrupt"
            if self._finish(run, move, started, seen=row):
                return
        logger.warning(
            "job kept changing while it stopped; it is recovered when its lease expires",
            extra=fields(job_id=run.job_id),
        )

    def _finish(
        self,
        run: JobRun,
        move: str,
        started: float,
        *,
        seen: Mapping[str, Any] | None = None,
        **outcome: Any,
    ) -> bool:
        """Write the job's end state, fenced on our lease; with `seen`, only if the row is
        still as read. Returns False when it was not (read it again and retry)."""
        changes = {**run.unsaved, **transition(seen or run.row, move, self.clock()), **outcome}
        try:
            if seen is None:
                row = self._repository.fenced_update(run.job_id, self.worker_id, changes)
            else:
                row = self._repository.compare_and_set(seen, changes)
        except MemCastleError:
            self._unrecorded(run, move)
            return True
        if row is None:
            if seen is not None:
                return False
            self._abandon(run)
            return True
        self._ended(run, move, started, row)
        return True

    def _ended(self, run: JobRun, move: str, started: float, row: Mapping[str, Any]) -> None:
        """Announce and log the end state `move` written (`row`), and send a job put back in
        the queue again."""
        self.announce(row, "updated")
        elapsed_ms = int((time.monotonic() - started) * 1000)
        if move == "fail":
            logger.info(
                "job failed",
                extra=fields(
                    job_id=run.job_id,
                    error=row.get("error_code"),
                    elapsed_ms=elapsed_ms,
                    attempt=row.get("attempt"),
                ),
            )
            return
        logger.info(
            f"job {row['status'] if move != 'interrupt' else 'interrupted'}",
            extra=fields(job_id=run.job_id, job_type=run.kind, elapsed_ms=elapsed_ms),
        )
        if row["status"] == Status.QUEUED:
            # Even while draining: on a shared broker another worker takes it at once (this
            # one has stopped consuming); in-process, the next start sends it again.
            self.dispatch(run.job_id)

    def _unrecorded(self, run: JobRun, outcome: str) -> None:
        logger.warning(
            "could not record the end of a job; it is recovered later",
            extra=fields(job_id=run.job_id, outcome=outcome),
        )

    def _abandon(self, run: JobRun) -> None:
        logger.info(
            "job abandoned: it is no longer held by this worker (force-cancelled or taken over)",
            extra=fields(job_id=run.job_id, worker_id=self.worker_id),
        )

    def _fields(self, row: Mapping[str, Any], *, worker_id: bool = False) -> dict[str, Any]:
        values: dict[str, Any] = {
            "job_id": row["id"],
            "job_type": row["kind"]["type"],
            "priority": row["priority"],
            "requested_by": row.get("requested_by"),
            "attempt": row.get("attempt"),
        }
        if worker_id:
            values["worker_id"] = self.worker_id
        return fields(**values)

    # Leases.

    def _start_heartbeat(self) -> None:
        """Renew leases (and, on a shared store, reap expired ones) on a thread of its own."""
        self._heartbeat = threading.Thread(
            target=self._heartbeat_loop, name="memcastle-job-leases", daemon=True
        )
        self._heartbeat.start()

    def _heartbeat_loop(self) -> None:
        interval = self.lease_ttl.total_seconds() / 3
        last_renewed = time.monotonic()
        last_reaped = time.monotonic()
        while not self._stopped.wait(interval):
            try:
                self._renew()
                last_renewed = time.monotonic()
                if not self.exclusive_store and time.monotonic() - last_reaped >= interval * 3:
                    self.reap()
                    last_reaped = time.monotonic()
            except MemCastleError:
                if time.monotonic() - last_renewed >= self.lease_ttl.total_seconds():
                    logger.warning("the datastore is unreachable: interrupting the running jobs")
                    for run in list(self._runs.values()):
                        run.interrupt()
            except Exception:
                logger.exception("renewing job leases failed")

    def _renew(self) -> None:
        runs = dict(self._runs)
        held = {
            row["id"]: row
            for row in self._repository.renew_leases(
                self.worker_id, runs, self.clock() + self.lease_ttl
            )
        }
        for job_id, run in runs.items():
            row = held.get(job_id)
            if row is None:
                # Still ours in memory, no longer on the row: another worker or a force-cancel.
                if self._runs.get(job_id) is run:
                    run.abort()
            elif row.get("pause_requested") or row.get("cancel_requested"):
                run.request_stop()

    # Recovery.

    def start_up(self) -> None:
        """Settle the running jobs left without a worker, send a message for every queued job
        (the broker need not have kept any), and start renewing leases."""
        self._recover(expired_only=not self.exclusive_store)
        for job_id in self._repository.ids_with_status(Status.QUEUED):
            self.dispatch(job_id)
        self._start_heartbeat()

    def reap(self) -> None:
        """On a shared store: take back the jobs whose worker stopped renewing its lease, and
        wake the workers for queued jobs that waited a whole lease period (their message may be
        lost with a broker that restarted). Any message claims the most urgent job, so a few
        messages are enough however long the queue is."""
        for job_id in self._recover(expired_only=True):
            self.dispatch(job_id)
        stale = self._repository.queued_since(self.clock() - self.lease_ttl, self.concurrency)
        for job_id in stale:
            self.dispatch(job_id)

    def _recover(self, *, expired_only: bool) -> list[str]:
        """Move running jobs that have no worker; returns the ids now queued.

        On an embedded palace at start-up every running job is such a job. On a shared store
        only expired leases count (a missing expiry counts as expired), and each move is guarded
        on the lease still being the one read.
        """
        now = self.clock()
        queued = []
        for row in self._repository.rows_with_status(Status.RUNNING):
            with self._lock:
                if row["id"] in self._runs or row["id"] in self._claiming:
                    continue
            expires = row.get("lease_expires_at")
            if expired_only and expires is not None and expires > now:
                continue
            move = recovery_move(row)
            changes = transition(row, move, now)
            if move == "fail":
                changes["error"] = (
                    f"the job was interrupted by a crash {row.get('recovery_attempts') or 0} "
                    "times, its whole budget"
                )
                changes["error_code"] = "memcastle::jobs::recovery_exhausted"
            written = self._repository.compare_and_set(
                row, changes, expired_by=now if expired_only else None
            )
            if written is None:
                continue
            self.announce(written, "updated")
            logger.info("job recovered", extra=fields(job_id=row["id"], status=written["status"]))
            if written["status"] == Status.QUEUED:
                queued.append(row["id"])
        return queued

    # The drain.

    def begin_drain(self) -> None:
        """Stop claiming and ask every running job to checkpoint and return to the queue."""
        with self._lock:
            if not self.closing:
                self.closing = True
                self._drain_started = time.monotonic()
            runs = list(self._runs.values())
        for run in runs:
            run.interrupt()

    def finish_drain(self, timeout: float) -> int:
        """Wait until `timeout` seconds after the drain began for the interrupted jobs;
        returns how many are left.

        Those stay `running` and are recovered at the next start, losing the work done since
        their last checkpoint.
        """
        deadline = self._drain_started + timeout
        with self._idle:
            while self._runs and (remaining := deadline - time.monotonic()) > 0:
                self._idle.wait(remaining)
            left = list(self._runs.values())
        self._stopped.set()
        if left:
            logger.warning(
                "jobs still running after the drain; they are recovered at the next start",
                extra=fields(jobs=len(left)),
            )
            for run in left:
                run.abort()
        return len(left)
