"""Application services for jobs: submit, read, and control.

REST views (and later MCP tools and CLI commands) call these. Submitting is gated by the memory
mode of the job's kind; reading is a read; control (pause, resume, cancel, force-cancel, retry)
is never gated. Every change is a compare-and-set on the job's row, announced after it is saved.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from jobs import kinds
from jobs.executor import MAX_ATTEMPTS, Executor
from jobs.kinds import JobKind
from jobs.repository import JobRepository
from jobs.shapes import Job, JobList
from jobs.states import Status, transition
from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import Conflict, InputInvalid, NotFound
from kernel.logs import fields
from kernel.validation import body_object, is_uuid, parse_limit, parse_offset

logger = logging.getLogger(__name__)

JOB_LIST_LIMIT = 50
# A control request re-reads and tries again this many times before calling the job contended.
CONTROL_ATTEMPTS = 3
ACTIONS = ("pause", "resume", "cancel", "force-cancel", "retry")


# Jobs removed in one transaction by a prune: a long history goes in several, each short.
PRUNE_BATCH = 500
# A hundred years: the oldest age a prune takes (and `jobs.retention_days`).
MAX_AGE_DAYS = 36500


class JobIdInvalid(InputInvalid):
    code = "memcastle::jobs::id_invalid"


class JobNotFound(NotFound):
    code = "memcastle::jobs::not_found"
    help = "list the jobs with GET /api/jobs"


class JobContended(Conflict):
    code = "memcastle::jobs::contended"
    help = "the job kept changing state under the request and nothing was changed; run it again"


class JobOrphaned(Conflict):
    code = "memcastle::jobs::orphaned"
    help = (
        "restart the daemon, which re-queues the job, or stop it now with "
        "POST /api/jobs/{id}/force-cancel"
    )


def job_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The job record as `jobs.shapes.Job` renders it (which adds the optional fields unset, as
    null): the fields the shape declares (not the claim order the database computes), its
    checkpoint `{}` until the handler saves one, and its stop requests false unless made."""
    values = Job.select(row)
    values["checkpoint"] = row.get("checkpoint") or {}
    values["pause_requested"] = bool(row.get("pause_requested"))
    values["cancel_requested"] = bool(row.get("cancel_requested"))
    return values


def parse_job_id(raw: str) -> str:
    if not is_uuid(raw):
        raise JobIdInvalid("id", f"must be a job's UUID (got {raw!r})")
    return str(uuid.UUID(raw))


def _choice(raw: object, field: str, choices: list[str]) -> str | None:
    if raw is None or raw == "":
        return None
    if raw not in choices:
        raise InputInvalid(field, f"must be one of {', '.join(choices)} (got {raw!r})")
    return str(raw)


class JobService:
    def __init__(
        self,
        repository: JobRepository,
        executor: Executor,
        clock: Callable[[], dt.datetime] = utc_now,
        *,
        retention_days: int = 30,
    ) -> None:
        self._repository = repository
        self.executor = executor
        self.clock = clock
        self.retention_days = retention_days
        # Finding a queued job to join and queueing one are one step within this process.
        self._joining = threading.Lock()

    def submit(self, ctx: RequestContext, data: object) -> dict[str, Any]:
        """Queue a job of the kind named by `type`; it is returned at once, still queued."""
        kind, params = self._parse(ctx, data)
        return self._create(ctx, kind, params)

    def submit_or_join(self, ctx: RequestContext, data: object) -> tuple[dict[str, Any], bool]:
        """Queue a job, or join a queued one of exactly the same kind and input (jobs.md
        section 8: a miner's runs, by hand or by a trigger). A running one is not joined, since
        it may have read its source before the change that asked for this run. Returns the job
        and whether it was joined."""
        kind, params = self._parse(ctx, data)
        with self._joining:
            queued = self._repository.queued_like({"type": kind.name, **params})
            if queued is not None:
                return Job.render(job_values(queued)), True
            return self._create(ctx, kind, params), False

    def _parse(self, ctx: RequestContext, data: object) -> tuple[JobKind, dict[str, Any]]:
        body = body_object(data)
        name = body.get("type")
        kind = kinds.get(name) if isinstance(name, str) else None
        if kind is None:
            raise InputInvalid("type", f"must name a job kind (known: {', '.join(kinds.names())})")
        submitted = {k: v for k, v in body.items() if k not in ("type", "requested_by")}
        # The gate comes first: parsing may read the store (a wing, an audit job) or the
        # filesystem (a mine's path), which a session the mode refuses must not reach.
        operation = kind.gate(submitted)
        if operation is not None:
            ctx.require_write(operation)
        return kind, kind.parse(submitted, self.executor.services)

    def _create(self, ctx: RequestContext, kind: JobKind, params: dict[str, Any]) -> dict[str, Any]:
        priority = kind.priority_for(params) if kind.priority_for else kind.priority
        now = self.clock()
        row = self._repository.create(
            {
                "id": str(uuid.uuid4()),
                "kind": {"type": kind.name, **params},
                "status": Status.QUEUED.value,
                "priority": int(priority),
                "created_at": now,
                "updated_at": now,
                "requested_by": ctx.requested_by,
                "progress": {"current": 0},
                "attempt": 0,
                "recovery_attempts": 0,
                "max_attempts": MAX_ATTEMPTS,
                "checkpoint": {},
                "pause_requested": False,
                "cancel_requested": False,
            }
        )
        logger.info(
            "job queued",
            extra=fields(
                job_id=row["id"],
                job_type=kind.name,
                priority=row["priority"],
                requested_by=ctx.requested_by,
            ),
        )
        self.executor.announce(row, "created")
        self.executor.dispatch(row["id"])
        return Job.render(job_values(row))

    def list_jobs(
        self,
        ctx: RequestContext,
        *,
        status: object = None,
        kind: object = None,
        limit: object = None,
        offset: object = None,
    ) -> dict[str, Any]:
        ctx.require_read("job_list")
        wanted_status = _choice(status, "status", [s.value for s in Status])
        wanted_kind = _choice(kind, "kind", kinds.names())
        page_size = parse_limit(limit, default=JOB_LIST_LIMIT)
        start = parse_offset(offset)
        rows, total = self._repository.page(
            status=wanted_status, kind=wanted_kind, limit=page_size, offset=start
        )
        return JobList.render(
            {
                "jobs": [job_values(row) for row in rows],
                "total": total,
                "limit": page_size,
                "offset": start,
            }
        )

    def show(self, ctx: RequestContext, job_id: str) -> dict[str, Any]:
        ctx.require_read("job_show")
        return Job.render(job_values(self._get(parse_job_id(job_id))))

    def record(self, job_id: str) -> dict[str, Any] | None:
        """A job's row as stored, for the job kinds that build on another job (a repair on its
        audit); None for an unknown job."""
        return self._repository.get(job_id)

    def any_waiting(self, kind: str, statuses: tuple[str, ...]) -> bool:
        """Whether a job of `kind` is in one of `statuses` (the sweeps' look at the queue)."""
        return any(self._repository.any_with(kind, status) for status in statuses)

    def write_demo_step(self, step_id: str, job_id: str, step: int, attempt: int) -> None:
        self._repository.write_demo_step(step_id, job_id, step, attempt)

    def demo_steps_written(self, job_id: str) -> int:
        return self._repository.demo_steps_written(job_id)

    def prune(self, ctx: RequestContext, data: object = None) -> dict[str, Any]:
        """Remove the jobs that finished more than `older_than_days` days ago (by default
        `jobs.retention_days`), with their records; what they filed stays. A write: a job's
        record carries its input."""
        body = body_object(data) if data is not None else {}
        for name in body:
            if name not in ("older_than_days", "requested_by"):
                raise InputInvalid(name, "is not a field of a prune (known: older_than_days)")
        days = body.get("older_than_days", self.retention_days)
        if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_AGE_DAYS:
            raise InputInvalid(
                "older_than_days", f"must be a whole number of days from 0 to 36500, not {days!r}"
            )
        ctx.require_write("job_prune")
        before = self.clock() - dt.timedelta(days=days)
        removed = 0
        while batch := self._repository.prune(before, PRUNE_BATCH):
            removed += batch
        if removed:
            logger.info("finished jobs removed", extra=fields(removed=removed))
        return {"removed": removed, "finished_before": before}

    def counts(self) -> dict[str, int]:
        """Jobs per status, for the status report (`jobs.shapes.JobCounts`)."""
        found = self._repository.count_by_status()
        return {status.value: found.get(status.value, 0) for status in Status}

    def _get(self, job_id: str) -> dict[str, Any]:
        row = self._repository.get(job_id)
        if row is None:
            raise JobNotFound(f"job {job_id} does not exist")
        return row

    def control(self, action: str, job_id: str) -> dict[str, Any]:
        """Pause, resume, cancel, force-cancel or retry a job. Never gated by a memory mode.

        Pause and cancel of a running job are requests, honoured by its handler at the next
        unit of work; the answer shows the request set. A move the state does not allow is
        refused and changes nothing, so repeating an action is refused too.
        """
        assert action in ACTIONS, action
        job_id = parse_job_id(job_id)
        for _ in range(CONTROL_ATTEMPTS):
            row = self._get(job_id)
            move = self._move(action, row)
            changes = transition(row, move, self.clock())
            if move in ("request_pause", "request_cancel") and not self.executor.is_live(row):
                raise JobOrphaned(
                    f"job {job_id} is recorded as running, but no worker is running it"
                )
            written = self._repository.compare_and_set(row, changes)
            if written is None:
                continue
            self.executor.announce(written, "updated")
            self._after(action, move, row, written)
            return Job.render(job_values(written))
        raise JobContended(f"job {job_id} kept changing state; nothing was changed")

    @staticmethod
    def _move(action: str, row: Mapping[str, Any]) -> str:
        running = row["status"] == Status.RUNNING
        if action == "pause":
            return "request_pause"
        if action == "cancel":
            return "request_cancel" if running else "cancel"
        if action == "force-cancel":
            return "cancel"
        return action

    def _after(
        self, action: str, move: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        logger.info(
            f"job {action} {'requested' if move.startswith('request_') else 'done'}",
            extra=fields(job_id=after["id"], status=after["status"]),
        )
        if move.startswith("request_"):
            self.executor.notify(after["id"])
        elif action == "force-cancel" and before["status"] == Status.RUNNING:
            self.executor.abort(after["id"])
        elif after["status"] == Status.QUEUED:
            self.executor.dispatch(after["id"])
