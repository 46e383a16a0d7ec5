"""Job states: the transition table, priorities, replay-safe unit ids and the recovery decision.

Pure functions only; no store. The table below is the spec's (jobs.md §3), written out once so
that every (status, move) pair is checked: allowed moves give exactly the expected fields, every
other pair is refused with `memcastle::jobs::transition_invalid`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from typing import Any

import pytest

from jobs.executor import MAX_ATTEMPTS, recovery_move
from jobs.replay import unit_id
from jobs.states import Priority, Status, TransitionInvalid, transition

NOW = dt.datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
EARLIER = NOW - dt.timedelta(minutes=5)
JOB_ID = "0b7c5a52-5c0e-4c55-9d2b-6a2f0f1b9a10"

MOVES = (
    "claim",
    "request_pause",
    "request_cancel",
    "pause",
    "resume",
    "complete",
    "fail",
    "cancel",
    "recover",
    "interrupt",
    "retry",
)

# move -> (statuses it is allowed from, status it leads to)
TABLE: dict[str, tuple[set[Status], Status]] = {
    "claim": ({Status.QUEUED}, Status.RUNNING),
    "request_pause": ({Status.RUNNING}, Status.RUNNING),
    "request_cancel": ({Status.RUNNING}, Status.RUNNING),
    "pause": ({Status.RUNNING}, Status.PAUSED),
    "resume": ({Status.PAUSED}, Status.QUEUED),
    "complete": ({Status.RUNNING}, Status.COMPLETED),
    "fail": ({Status.RUNNING}, Status.FAILED),
    "cancel": ({Status.QUEUED, Status.PAUSED, Status.RUNNING}, Status.CANCELLED),
    "recover": ({Status.RUNNING}, Status.QUEUED),
    "interrupt": ({Status.RUNNING}, Status.QUEUED),
    "retry": ({Status.FAILED}, Status.QUEUED),
}

LEASE_CLEARED = {
    "lease_owner": None,
    "lease_expires_at": None,
    "pause_requested": False,
    "cancel_requested": False,
}

# The name a refusal uses for the move (the API's action, not the internal move).
VERBS = {"request_pause": "pause", "request_cancel": "cancel"}

ALLOWED = [(s, m) for m in MOVES for s in Status if s in TABLE[m][0]]
REFUSED = [(s, m) for m in MOVES for s in Status if s not in TABLE[m][0]]


def job(status: Status | str, **fields: Any) -> dict[str, Any]:
    """A job row as read, in `status`, with the fields a row in that status has."""
    status = Status(status)
    row: dict[str, Any] = {
        "id": JOB_ID,
        "status": status.value,
        "attempt": 2,
        "recovery_attempts": 1,
        "max_attempts": MAX_ATTEMPTS,
        "checkpoint": {"next_step": 4},
        "pause_requested": False,
        "cancel_requested": False,
        "started_at": EARLIER,
    }
    if status is Status.RUNNING:
        row["lease_owner"] = "memcastle-1-abcd"
        row["lease_expires_at"] = NOW + dt.timedelta(seconds=30)
    if status.terminal:
        row["completed_at"] = EARLIER
    if status is Status.FAILED:
        row["error"] = "it broke"
        row["error_code"] = "memcastle::server::failed"
    row.update(fields)
    return row


def expected_changes(status: Status, move: str, row: dict[str, Any]) -> dict[str, Any]:
    """What the spec says `move` writes on `row` (read in `status`)."""
    target = TABLE[move][1]
    changes: dict[str, Any] = {"status": target.value, "updated_at": NOW}
    if move == "claim":
        changes["attempt"] = row["attempt"] + 1
        if row.get("started_at") is None:
            changes["started_at"] = NOW
    elif move == "request_pause":
        changes["pause_requested"] = True
    elif move == "request_cancel":
        changes["cancel_requested"] = True
    elif move == "retry":
        changes.update(error=None, error_code=None, recovery_attempts=0, completed_at=None)
    elif move == "recover":
        changes["recovery_attempts"] = row["recovery_attempts"] + 1
    if status is Status.RUNNING and target is not Status.RUNNING:
        changes.update(LEASE_CLEARED)
    if target.terminal:
        changes["completed_at"] = NOW
    return changes


# The table, exhaustively ----------------------------------------------------------------------


def test_the_table_covers_every_pair() -> None:
    assert len(ALLOWED) + len(REFUSED) == len(Status) * len(MOVES) == 66
    assert len(ALLOWED) == 13


@pytest.mark.parametrize(("status", "move"), ALLOWED, ids=[f"{s}-{m}" for s, m in ALLOWED])
def test_allowed_moves_write_exactly_the_expected_fields(status: Status, move: str) -> None:
    row = job(status)
    changes = transition(row, move, NOW)

    assert changes == expected_changes(status, move, row)
    assert changes["status"] == TABLE[move][1].value
    assert "checkpoint" not in changes, "no move touches the checkpoint"
    assert "id" not in changes


@pytest.mark.parametrize(("status", "move"), REFUSED, ids=[f"{s}-{m}" for s, m in REFUSED])
def test_every_other_pair_is_refused(status: Status, move: str) -> None:
    with pytest.raises(TransitionInvalid) as caught:
        transition(job(status), move, NOW)

    error = caught.value
    assert error.status == 400
    assert error.code == "memcastle::jobs::transition_invalid"
    verb = VERBS.get(move, move)
    assert error.message == f"cannot {verb} job {JOB_ID}: it is {status.value}"
    assert error.body()["help"]


def test_the_transition_does_not_modify_the_row_it_reads() -> None:
    row = job(Status.RUNNING)
    before = dict(row)
    transition(row, "complete", NOW)
    assert row == before


# Leaving running, terminal states ---------------------------------------------------------


LEAVING_RUNNING = [
    m for m in MOVES if Status.RUNNING in TABLE[m][0] and TABLE[m][1] is not Status.RUNNING
]


def test_the_moves_that_leave_running() -> None:
    assert sorted(LEAVING_RUNNING) == sorted(
        ["pause", "complete", "fail", "cancel", "recover", "interrupt"]
    )


@pytest.mark.parametrize("move", LEAVING_RUNNING)
def test_leaving_running_clears_the_lease_and_both_requests(move: str) -> None:
    # Both requests set is not a state the services produce, but the clearing must not care.
    row = job(Status.RUNNING, pause_requested=True, cancel_requested=True)
    changes = transition(row, move, NOW)
    for field, value in LEASE_CLEARED.items():
        assert field in changes and changes[field] == value, field


@pytest.mark.parametrize("move", ["claim", "request_pause", "request_cancel"])
def test_staying_in_or_entering_running_keeps_the_lease_fields(move: str) -> None:
    status = Status.QUEUED if move == "claim" else Status.RUNNING
    changes = transition(job(status), move, NOW)
    assert "lease_owner" not in changes
    assert "lease_expires_at" not in changes


@pytest.mark.parametrize(("move", "status"), [("resume", Status.PAUSED), ("cancel", Status.QUEUED)])
def test_moves_not_from_running_do_not_write_lease_fields(move: str, status: Status) -> None:
    changes = transition(job(status), move, NOW)
    assert not set(LEASE_CLEARED) & set(changes)


TERMINAL_MOVES = [(s, m) for s, m in ALLOWED if TABLE[m][1].terminal]


@pytest.mark.parametrize(("status", "move"), TERMINAL_MOVES)
def test_terminal_states_set_completed_at(status: Status, move: str) -> None:
    assert transition(job(status), move, NOW)["completed_at"] == NOW


@pytest.mark.parametrize(
    ("status", "move"), [(s, m) for s, m in ALLOWED if not TABLE[m][1].terminal and m != "retry"]
)
def test_non_terminal_moves_leave_completed_at_alone(status: Status, move: str) -> None:
    assert "completed_at" not in transition(job(status), move, NOW)


def test_terminal_statuses() -> None:
    assert {s for s in Status if s.terminal} == {
        Status.COMPLETED,
        Status.FAILED,
        Status.CANCELLED,
    }
    assert [s.value for s in Status] == [
        "queued",
        "running",
        "paused",
        "completed",
        "failed",
        "cancelled",
    ]


# Claim ------------------------------------------------------------------------------------


def test_the_first_claim_sets_started_at_and_counts_the_attempt() -> None:
    changes = transition(job(Status.QUEUED, attempt=0, started_at=None), "claim", NOW)
    assert changes["attempt"] == 1
    assert changes["started_at"] == NOW


def test_a_claim_without_attempt_or_started_at_fields() -> None:
    row = {"id": JOB_ID, "status": "queued"}
    changes = transition(row, "claim", NOW)
    assert changes == {"status": "running", "updated_at": NOW, "attempt": 1, "started_at": NOW}


def test_a_later_claim_keeps_started_at_and_counts_the_attempt() -> None:
    changes = transition(job(Status.QUEUED, attempt=3, started_at=EARLIER), "claim", NOW)
    assert changes["attempt"] == 4
    assert "started_at" not in changes, "started_at is the first claim's"


def test_a_claim_does_not_set_the_lease_itself() -> None:
    # The lease fields are the caller's (the executor's) to add.
    changes = transition(job(Status.QUEUED), "claim", NOW)
    assert "lease_owner" not in changes and "lease_expires_at" not in changes


# Retry and recover ------------------------------------------------------------------------


def test_retry_clears_the_error_and_resets_the_budget_but_keeps_the_checkpoint() -> None:
    row = job(Status.FAILED, recovery_attempts=3, checkpoint={"next_step": 7, "failed_once": True})
    changes = transition(row, "retry", NOW)

    assert changes["status"] == "queued"
    assert changes["error"] is None
    assert changes["error_code"] is None, "the failure's code goes with its message"
    assert changes["recovery_attempts"] == 0
    assert changes["completed_at"] is None, "a queued job is no longer complete"
    assert "checkpoint" not in changes
    assert "attempt" not in changes
    assert "started_at" not in changes


@pytest.mark.parametrize(("before", "after"), [(0, 1), (1, 2), (2, 3), (None, 1)])
def test_recover_spends_one_of_the_budget(before: int | None, after: int) -> None:
    changes = transition(job(Status.RUNNING, recovery_attempts=before), "recover", NOW)
    assert changes["recovery_attempts"] == after
    assert changes["status"] == "queued"


def test_interrupt_spends_no_budget() -> None:
    changes = transition(job(Status.RUNNING, recovery_attempts=1), "interrupt", NOW)
    assert "recovery_attempts" not in changes
    assert changes["status"] == "queued"


# Requests ---------------------------------------------------------------------------------


def test_request_pause_sets_only_pause_requested() -> None:
    changes = transition(job(Status.RUNNING), "request_pause", NOW)
    assert changes == {"status": "running", "updated_at": NOW, "pause_requested": True}


def test_request_cancel_sets_only_cancel_requested() -> None:
    changes = transition(job(Status.RUNNING), "request_cancel", NOW)
    assert changes == {"status": "running", "updated_at": NOW, "cancel_requested": True}


@pytest.mark.parametrize(
    "requests",
    [
        {"pause_requested": True},
        {"cancel_requested": True},
        {"pause_requested": True, "cancel_requested": True},
    ],
)
def test_a_pause_is_refused_once_a_stop_was_requested(requests: dict[str, bool]) -> None:
    with pytest.raises(TransitionInvalid) as caught:
        transition(job(Status.RUNNING, **requests), "request_pause", NOW)
    assert caught.value.code == "memcastle::jobs::transition_invalid"
    assert caught.value.message == f"cannot pause job {JOB_ID}: a stop was already requested"


def test_a_cancel_is_refused_once_a_cancel_was_requested() -> None:
    with pytest.raises(TransitionInvalid) as caught:
        transition(job(Status.RUNNING, cancel_requested=True), "request_cancel", NOW)
    assert caught.value.status == 400
    assert caught.value.message == f"cannot cancel job {JOB_ID}: a cancel was already requested"


def test_a_cancel_may_follow_a_pause_request() -> None:
    changes = transition(job(Status.RUNNING, pause_requested=True), "request_cancel", NOW)
    assert changes["cancel_requested"] is True


@pytest.mark.parametrize("move", ["pause", "complete", "fail", "cancel", "recover", "interrupt"])
def test_pending_requests_do_not_block_the_moves_that_leave_running(move: str) -> None:
    row = job(Status.RUNNING, pause_requested=True, cancel_requested=True)
    assert transition(row, move, NOW)["status"] == TABLE[move][1].value


# Priority ---------------------------------------------------------------------------------


def test_priority_values() -> None:
    assert [(p.name, int(p)) for p in Priority] == [
        ("CRITICAL", 100),
        ("HIGH", 75),
        ("NORMAL", 50),
        ("LOW", 25),
        ("BACKGROUND", 0),
    ]
    assert sorted(Priority, reverse=True) == list(Priority)


@pytest.mark.parametrize("stored", [1, 49, 51, 99, 101, -1])
def test_any_other_stored_priority_is_an_error(stored: int) -> None:
    with pytest.raises(ValueError):
        Priority(stored)


# Replay-safe unit ids ---------------------------------------------------------------------


def test_unit_id_is_deterministic_and_a_valid_uuid() -> None:
    first = unit_id(JOB_ID, "demo-step:0")
    assert first == unit_id(JOB_ID, "demo-step:0")
    parsed = uuid.UUID(first)
    assert str(parsed) == first, "canonical lower-case form"
    assert parsed.version == 8
    assert parsed.variant == uuid.RFC_4122


def test_unit_id_derivation_is_stable() -> None:
    # The derivation is persisted API (replayed units must find their earlier records): pin it.
    job_id = "cfadac10-fbda-412a-949f-4b9a00fb1ee8"
    assert unit_id(job_id, "demo-step:0") == "59cdfe9d-c5d9-8f7f-b017-860787590048"
    assert unit_id(job_id, "demo-step:2") == "275a73a2-7a04-8f81-812a-aa2224caa62a"


def test_unit_ids_differ_per_job_and_per_unit_name() -> None:
    jobs = [JOB_ID, str(uuid.uuid4()), str(uuid.uuid4())]
    names = ["demo-step:0", "demo-step:1", "checkpoint-drawer:0", "checkpoint-edge:0"]
    ids = {unit_id(j, n) for j, n in itertools.product(jobs, names)}
    assert len(ids) == len(jobs) * len(names)


def test_unit_id_separates_job_and_name() -> None:
    # Without a separator, ("a", "bc") and ("ab", "c") would hash the same text.
    assert unit_id("a", "bc") != unit_id("ab", "c")


# The recovery decision --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "move"),
    [
        ({"cancel_requested": True}, "cancel"),
        ({"cancel_requested": True, "pause_requested": True}, "cancel"),
        ({"cancel_requested": True, "recovery_attempts": 3, "max_attempts": 3}, "cancel"),
        ({"pause_requested": True}, "pause"),
        ({"pause_requested": True, "recovery_attempts": 3, "max_attempts": 3}, "pause"),
        ({"recovery_attempts": 0, "max_attempts": 3}, "recover"),
        ({"recovery_attempts": 2, "max_attempts": 3}, "recover"),
        ({"recovery_attempts": 3, "max_attempts": 3}, "fail"),
        ({"recovery_attempts": 5, "max_attempts": 3}, "fail"),
        ({"recovery_attempts": 1, "max_attempts": 1}, "fail"),
        ({"recovery_attempts": 4, "max_attempts": 5}, "recover"),
        ({}, "recover"),
        ({"recovery_attempts": MAX_ATTEMPTS}, "fail"),
        ({"recovery_attempts": MAX_ATTEMPTS - 1}, "recover"),
    ],
)
def test_recovery_move(row: dict[str, Any], move: str) -> None:
    assert recovery_move({"status": "running", **row}) == move


def test_the_default_crash_budget_is_three() -> None:
    assert MAX_ATTEMPTS == 3


@pytest.mark.parametrize(
    "row",
    [
        {"cancel_requested": True},
        {"pause_requested": True},
        {"recovery_attempts": 0},
        {"recovery_attempts": 3, "max_attempts": 3},
    ],
)
def test_every_recovery_move_is_allowed_from_running(row: dict[str, Any]) -> None:
    running = job(Status.RUNNING, **row)
    move = recovery_move(running)
    changes = transition(running, move, NOW)
    assert changes["status"] in ("cancelled", "paused", "queued", "failed")
    assert changes["lease_owner"] is None
