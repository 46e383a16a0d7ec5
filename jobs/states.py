"""A job's states, priorities, and the one function that moves a job between states.

```
queued  --claim-->          running
running --pause-->          paused      (the handler honouring a pause request)
paused  --resume-->         queued
running --complete-->       completed
running --fail-->           failed
queued|paused|running --cancel--> cancelled
running --recover-->        queued      (crash recovery, within the budget)
running --interrupt-->      queued      (shutdown drain)
failed  --retry-->          queued      (clears the error, keeps the checkpoint)
running --request_pause-->  running     (sets pause_requested)
running --request_cancel--> running     (sets cancel_requested)
```

Leaving `running` clears the lease and both requests. Anything else is `TransitionInvalid`.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from typing import Any

from kernel.errors import MemCastleError


class Status(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


class Priority(enum.IntEnum):
    CRITICAL = 100
    HIGH = 75
    NORMAL = 50
    LOW = 25
    BACKGROUND = 0


class TransitionInvalid(MemCastleError):
    status = 400
    code = "memcastle::jobs::transition_invalid"
    help = "read the job's status with GET /api/jobs/{id}; see the job states in the docs"


_MOVES: dict[str, tuple[frozenset[Status], Status]] = {
    "claim": (frozenset({Status.QUEUED}), Status.RUNNING),
    "request_pause": (frozenset({Status.RUNNING}), Status.RUNNING),
    "request_cancel": (frozenset({Status.RUNNING}), Status.RUNNING),
    "pause": (frozenset({Status.RUNNING}), Status.PAUSED),
    "resume": (frozenset({Status.PAUSED}), Status.QUEUED),
    "complete": (frozenset({Status.RUNNING}), Status.COMPLETED),
    "fail": (frozenset({Status.RUNNING}), Status.FAILED),
    "cancel": (frozenset({Status.QUEUED, Status.PAUSED, Status.RUNNING}), Status.CANCELLED),
    "recover": (frozenset({Status.RUNNING}), Status.QUEUED),
    "interrupt": (frozenset({Status.RUNNING}), Status.QUEUED),
    "retry": (frozenset({Status.FAILED}), Status.QUEUED),
}

# How a refusal reads to someone who asked for the move by its API name.
_VERBS = {"request_pause": "pause", "request_cancel": "cancel"}

_LEASE_CLEARED = {
    "lease_owner": None,
    "lease_expires_at": None,
    "pause_requested": False,
    "cancel_requested": False,
}


def transition(job: Mapping[str, Any], move: str, now: dt.datetime) -> dict[str, Any]:
    """The fields to write for `move` on `job` as read; raises `TransitionInvalid`.

    Lease fields for a claim, and the error of a failure, are the caller's to add.
    """
    allowed, target = _MOVES[move]
    current = Status(job["status"])
    verb = _VERBS.get(move, move).replace("_", "-")
    if current not in allowed:
        raise TransitionInvalid(f"cannot {verb} job {job['id']}: it is {current.value}")
    if move == "request_pause" and (job.get("pause_requested") or job.get("cancel_requested")):
        raise TransitionInvalid(f"cannot pause job {job['id']}: a stop was already requested")
    if move == "request_cancel" and job.get("cancel_requested"):
        raise TransitionInvalid(f"cannot cancel job {job['id']}: a cancel was already requested")

    changes: dict[str, Any] = {"status": target.value, "updated_at": now}
    if move == "request_pause":
        changes["pause_requested"] = True
    elif move == "request_cancel":
        changes["cancel_requested"] = True
    elif move == "claim":
        changes["attempt"] = int(job.get("attempt") or 0) + 1
        if job.get("started_at") is None:
            changes["started_at"] = now
    elif move == "retry":
        # A retry is a new decision by someone: it gets a fresh crash budget.
        changes.update(error=None, error_code=None, recovery_attempts=0, completed_at=None)
    elif move == "recover":
        changes["recovery_attempts"] = int(job.get("recovery_attempts") or 0) + 1

    if current is Status.RUNNING and target is not Status.RUNNING:
        changes.update(_LEASE_CLEARED)
    if target.terminal:
        changes["completed_at"] = now
    return changes
