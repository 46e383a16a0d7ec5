"""The job executor and service against the real SurrealDB engine, without a daemon or broker.

`executor.dispatch` only records the ids it is given, so nothing runs until a test calls
`executor.execute(job_id)` itself: synchronously on the test's thread, or on a thread of the
test's own when the job must be seen while it runs. Time is a fake clock that ticks a
millisecond per reading, so creation order, leases and expiry are exact; the only real waits
are bounded polls for another thread to reach a point.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jobs import kinds
from jobs.executor import Executor
from jobs.repository import JobRepository
from jobs.run import JobRun, LeaseLost
from jobs.services import JobContended, JobIdInvalid, JobNotFound, JobOrphaned, JobService
from jobs.states import Priority, TransitionInvalid
from kernel.config import JobsConfig, load_config
from kernel.context import RequestContext
from kernel.errors import ConfigInvalid, InputInvalid, MemCastleError, ModeForbidden
from kernel.events import EventBus
from kernel.store import Store
from tests.support.waits import wait_for

CONFIG = JobsConfig(max_concurrency=4, drain_timeout_secs=10, lease_ttl_secs=30, broker_url=None)
TTL = dt.timedelta(seconds=CONFIG.lease_ttl_secs)
# The longest a test waits for another thread; a passing test never comes near it.
WAIT = 10.0
OTHER_WORKER = "memcastle-999-deadbeef"


class Clock:
    """Fake UTC time: every reading is a millisecond after the previous one."""

    def __init__(self) -> None:
        # Never on a whole second, like the daemon's clock (kernel.clock).
        self.now = dt.datetime(2030, 1, 1, 12, 0, 0, 500, tzinfo=dt.UTC)
        self.last = self.now
        self._lock = threading.Lock()

    def __call__(self) -> dt.datetime:
        with self._lock:
            self.now += dt.timedelta(milliseconds=1)
            self.last = self.now
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += dt.timedelta(seconds=seconds)


class Gate:
    """A handler that saves once, says it is inside its unit, then waits to be let go."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.runs = 0

    def run(self, job: JobRun) -> dict[str, Any]:
        self.runs += 1
        job.save({"next_unit": 1, "runs": self.runs}, current=1, total=2, message="unit 1 of 2")
        self.entered.set()
        if not self.release.wait(WAIT):
            raise AssertionError("the test never let the handler go")
        job.check()
        return {"units": 2}


class Harness:
    """An executor and a service over one store, with the test's threads and kinds."""

    def __init__(self, store: Store, *, exclusive: bool = True) -> None:
        self.store = store
        self.clock = Clock()
        self.sent: list[str] = []
        self.repository = JobRepository(store)
        self.executor = Executor(
            self.repository, EventBus(), CONFIG, exclusive_store=exclusive, clock=self.clock
        )
        self.executor.dispatch = self.sent.append
        self.service = JobService(self.repository, self.executor, clock=self.clock)
        # What the demo kind calls.
        self.executor.services = SimpleNamespace(jobs=self.service)
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self.kind_names: list[str] = []
        self.gates: list[Gate] = []

    # Jobs and rows.

    def submit(self, ctx: RequestContext | None = None, **body: Any) -> dict[str, Any]:
        return self.service.submit(ctx or RequestContext.build(), {"type": "demo", **body})

    def row(self, job_id: str) -> dict[str, Any]:
        found = self.repository.get(job_id)
        assert found is not None, job_id
        return found

    def insert(self, **fields: Any) -> dict[str, Any]:
        """A job row with the fields `JobService.submit` writes, overridden by `fields`."""
        now = self.clock()
        record = {
            "id": str(uuid.uuid4()),
            "kind": {"type": "demo", "steps": 2, "step_ms": 0},
            "status": "queued",
            "priority": int(Priority.NORMAL),
            "created_at": now,
            "updated_at": now,
            "requested_by": "http",
            "progress": {"current": 0},
            "attempt": 0,
            "recovery_attempts": 0,
            "max_attempts": 3,
            "checkpoint": {},
            "pause_requested": False,
            "cancel_requested": False,
        }
        record.update(fields)
        self.repository.create(record)
        return self.row(record["id"])

    def insert_running(self, *, expires_in: float | None = -1.0, **fields: Any) -> dict[str, Any]:
        """A job left running by another (dead or live) worker; `expires_in=None`: no expiry."""
        now = self.clock.now
        running: dict[str, Any] = {
            "status": "running",
            "attempt": 1,
            "started_at": now - dt.timedelta(minutes=1),
            "lease_owner": OTHER_WORKER,
            "checkpoint": {"next_step": 1},
        }
        if expires_in is not None:
            running["lease_expires_at"] = now + dt.timedelta(seconds=expires_in)
        return self.insert(**{**running, **fields})

    def set(self, job_id: str, assignments: str, **variables: Any) -> None:
        self.store.query(
            f"UPDATE type::record('job', $id) SET {assignments}", {"id": job_id, **variables}
        )

    def steps_written(self, job_id: str) -> list[dict[str, Any]]:
        return self.store.one("SELECT * FROM demo_step WHERE job = $job", {"job": job_id})

    # Kinds.

    def register(
        self, run: Callable[[JobRun], dict[str, Any]], *, writes_memory: bool = False
    ) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        kind = kinds.JobKind(
            name=name,
            priority=Priority.NORMAL,
            parse=lambda body, services: dict(body),
            run=run,
            gate=lambda params: name if writes_memory else None,
            summary="a kind of this test's own",
        )
        kinds.register(lambda: kinds.AppJobs(kinds=(kind,)))
        self.kind_names.append(name)
        return name

    def gated(self) -> tuple[str, Gate]:
        gate = Gate()
        self.gates.append(gate)
        return self.register(gate.run), gate

    # Threads.

    def start(self, job_id: str) -> threading.Thread:
        def target() -> None:
            try:
                self.executor.execute(job_id)
            except BaseException as exc:  # reported by the test
                self.errors.append(exc)

        thread = threading.Thread(target=target, name="test-job-run", daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def join(self) -> None:
        for thread in self.threads:
            thread.join(WAIT)
            assert not thread.is_alive(), "a job run did not end"
        assert self.errors == []

    def running_here(self, job_id: str) -> JobRun:
        wait_for(
            lambda: job_id in self.executor._runs,
            timeout=WAIT,
            what="the job to be claimed",
            interval=0.002,
        )
        return self.executor._runs[job_id]

    def close(self) -> None:
        for gate in self.gates:
            gate.release.set()
        for run in list(self.executor._runs.values()):
            run.abort()
        self.executor._stopped.set()
        for thread in self.threads:
            thread.join(WAIT)
        if self.executor._heartbeat is not None:
            self.executor._heartbeat.join(WAIT)
        for name in self.kind_names:
            kinds._kinds.pop(name, None)


@pytest.fixture
def h(store: Store) -> Iterator[Harness]:
    harness = Harness(store)
    yield harness
    harness.close()


@pytest.fixture
def shared(store: Store) -> Iterator[Harness]:
    """As if the store were a remote one shared with other workers."""
    harness = Harness(store, exclusive=False)
    yield harness
    harness.close()


# Submit and run ---------------------------------------------------------------------------


def test_submit_queues_a_job_and_dispatches_it(h: Harness, ctx: RequestContext) -> None:
    job = h.submit(ctx, steps=2, step_ms=0)

    assert job["status"] == "queued"
    assert job["kind"] == {"type": "demo", "steps": 2, "step_ms": 0}
    assert job["priority"] == 50
    assert job["requested_by"] == "http"
    assert job["progress"] == {"current": 0}
    assert (job["attempt"], job["recovery_attempts"], job["max_attempts"]) == (0, 0, 3)
    assert job["checkpoint"] == {}
    assert job["pause_requested"] is False and job["cancel_requested"] is False
    for field in ("started_at", "completed_at", "result", "error", "error_code"):
        assert job[field] is None, field
    assert job["lease_owner"] is None and job["lease_expires_at"] is None
    assert job["created_at"] == job["updated_at"]
    assert str(uuid.UUID(job["id"])) == job["id"]
    assert h.sent == [job["id"]]
    assert h.service.show(ctx, job["id"]) == job


def test_submit_defaults_and_requested_by(h: Harness) -> None:
    job = h.submit(RequestContext.build(channel="cli", requested_by="my-script"))
    assert job["kind"] == {"type": "demo", "steps": 5, "step_ms": 500}
    assert job["requested_by"] == "my-script"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "nope"}, "type"),
        ({"type": 5}, "type"),
        ({}, "type"),
        ({"type": "demo", "steps": 0}, "steps"),
        ({"type": "demo", "steps": True}, "steps"),
        ({"type": "demo", "step_ms": -1}, "step_ms"),
        ({"type": "demo", "steps": 2, "fail_at_step": 3}, "fail_at_step"),
        ({"type": "demo", "colour": "blue"}, "colour"),
    ],
)
def test_a_refused_submission_creates_nothing(
    h: Harness, ctx: RequestContext, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        h.service.submit(ctx, body)
    assert caught.value.field == field
    assert h.service.counts()["queued"] == 0
    assert h.sent == []


def test_a_demo_runs_to_completion(h: Harness) -> None:
    job = h.submit(steps=3, step_ms=0)

    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert row["status"] == "completed"
    assert row["result"] == {"steps": 3, "written": 3, "runs": [{"attempt": 1, "from_step": 0}]}
    assert row["progress"] == {"current": 3, "total": 3, "message": "step 3 of 3"}
    assert row["checkpoint"] == {"next_step": 3, "runs": [{"attempt": 1, "from_step": 0}]}
    assert row["attempt"] == 1
    assert row["started_at"] < row["completed_at"]
    for field in ("lease_owner", "lease_expires_at", "error", "error_code"):
        assert field not in row, field
    assert row["pause_requested"] is False and row["cancel_requested"] is False
    assert sorted(step["step"] for step in h.steps_written(job["id"])) == [0, 1, 2]
    assert h.executor._runs == {}
    assert h.sent == [job["id"]], "a finished job is not dispatched again"


def test_execute_with_nothing_queued_does_nothing(h: Harness) -> None:
    done = h.submit(steps=1, step_ms=0)
    h.executor.execute(done["id"])
    before = h.row(done["id"])

    h.executor.execute(done["id"])
    h.executor.execute(str(uuid.uuid4()))

    assert h.row(done["id"]) == before


def test_the_claim_takes_the_lease(h: Harness) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})

    h.start(job["id"])
    assert gate.entered.wait(WAIT)

    row = h.row(job["id"])
    assert row["status"] == "running"
    assert row["attempt"] == 1
    assert row["lease_owner"] == h.executor.worker_id
    assert row["lease_owner"].startswith("memcastle-")
    assert row["lease_expires_at"] == row["started_at"] + TTL
    assert row["progress"] == {"current": 1, "total": 2, "message": "unit 1 of 2"}
    assert h.executor.is_live(row)

    gate.release.set()
    h.join()
    assert h.row(job["id"])["result"] == {"units": 2}


# Claim order ------------------------------------------------------------------------------


def test_claims_take_the_most_urgent_then_the_oldest(h: Harness) -> None:
    claimed: list[str] = []

    def record(job: JobRun) -> dict[str, Any]:
        claimed.append(job.params["label"])
        return {}

    name = h.register(record)
    base = h.clock.now
    rows = {}
    for label, priority, age in [
        ("background", Priority.BACKGROUND, 0),
        ("normal-newer", Priority.NORMAL, 3),
        ("critical", Priority.CRITICAL, 5),
        ("normal-older", Priority.NORMAL, 1),
        ("high", Priority.HIGH, 4),
        ("low", Priority.LOW, 2),
    ]:
        created = base + dt.timedelta(seconds=age)
        rows[label] = h.insert(
            kind={"type": name, "label": label},
            priority=int(priority),
            created_at=created,
            updated_at=created,
        )

    for _ in rows:
        # The message names the least urgent job; the most urgent one goes first regardless.
        h.executor.execute(rows["background"]["id"])

    assert claimed == ["critical", "high", "normal-older", "normal-newer", "low", "background"]
    started = [h.row(rows[label]["id"])["started_at"] for label in claimed]
    assert started == sorted(started)
    assert all(h.row(row["id"])["status"] == "completed" for row in rows.values())


def test_a_raised_priority_goes_first(h: Harness) -> None:
    older = h.submit(steps=1, step_ms=0)
    newer = h.submit(steps=1, step_ms=0)
    h.store.query(
        "UPDATE type::record('job', $id) SET priority = $priority",
        {"id": newer["id"], "priority": int(Priority.CRITICAL)},
    )

    h.executor.execute(older["id"])
    assert h.row(newer["id"])["status"] == "completed"
    assert h.row(older["id"])["status"] == "queued"

    h.executor.execute(older["id"])
    assert h.row(older["id"])["status"] == "completed"


def test_a_claim_lost_to_another_worker_takes_the_next_candidate(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = h.submit(steps=1, step_ms=0)
    second = h.submit(steps=1, step_ms=0)
    original = h.repository.compare_and_set
    calls: list[str] = []

    def lose_the_first_try(changes: dict[str, Any]) -> Any:
        # Someone else claimed the first job, and put it back, between the read and the write.
        return None, h.repository.claim_candidates()

    def lose_the_first(seen: dict[str, Any], changes: dict[str, Any], **kw: Any) -> Any:
        calls.append(seen["id"])
        if len(calls) == 1:
            return None  # someone else changed the row between the read and the write
        return original(seen, changes, **kw)

    monkeypatch.setattr(h.repository, "claim_first", lose_the_first_try)
    monkeypatch.setattr(h.repository, "compare_and_set", lose_the_first)
    h.executor.execute(first["id"])

    assert calls == [first["id"], second["id"]]
    assert h.row(first["id"])["status"] == "queued"
    assert h.row(second["id"])["status"] == "completed"


def test_a_job_never_claimed_is_found_and_claimed_in_one_round_trip(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.submit(steps=1, step_ms=0)
    queries: list[str] = []
    query = h.store.query

    def counted(sql: str, variables: Any = None) -> list[Any]:
        queries.append(sql)
        return query(sql, variables)

    monkeypatch.setattr(h.store, "query", counted)
    claimed = h.executor._claim()

    assert claimed is not None and claimed.job_id == job["id"]
    assert len(queries) == 1
    row = h.row(job["id"])
    assert (row["status"], row["attempt"], row["lease_owner"]) == (
        "running",
        1,
        h.executor.worker_id,
    )
    assert row["started_at"] == row["updated_at"]


def test_a_job_claimed_before_is_claimed_from_the_state_read(h: Harness) -> None:
    """At the head of the queue, a job that ran before (here: interrupted) is not in the state
    the first try assumes: it is claimed from its row as read, keeping its first start."""
    started = h.clock() - dt.timedelta(minutes=5)
    job = h.insert(attempt=1, started_at=started, checkpoint={"next_step": 1})
    fresh = h.submit(steps=1, step_ms=0)

    h.executor.execute(fresh["id"])

    row = h.row(job["id"])
    assert (row["status"], row["attempt"], row["started_at"]) == ("completed", 2, started)
    assert h.row(fresh["id"])["status"] == "queued"


# Control ----------------------------------------------------------------------------------


def test_control_of_a_queued_job(h: Harness, ctx: RequestContext) -> None:
    job = h.submit(steps=1, step_ms=0)

    for action in ("pause", "resume", "retry"):
        with pytest.raises(TransitionInvalid) as caught:
            h.service.control(action, job["id"])
        assert caught.value.status == 400
        assert caught.value.message.endswith("it is queued")

    cancelled = h.service.control("cancel", job["id"])
    assert cancelled["status"] == "cancelled"
    assert cancelled["completed_at"] is not None
    assert h.service.show(ctx, job["id"]) == cancelled

    for action in ("cancel", "force-cancel", "resume", "retry", "pause"):
        with pytest.raises(TransitionInvalid):
            h.service.control(action, job["id"])
    assert h.service.show(ctx, job["id"]) == cancelled, "refused moves change nothing"
    assert h.sent == [job["id"]]


def test_force_cancel_of_a_queued_job(h: Harness) -> None:
    job = h.submit(steps=1, step_ms=0)
    assert h.service.control("force-cancel", job["id"])["status"] == "cancelled"
    h.executor.execute(job["id"])
    assert h.row(job["id"])["status"] == "cancelled", "a cancelled job is never claimed"


@pytest.mark.parametrize(
    ("raw", "error", "status", "code"),
    [
        ("not-a-uuid", JobIdInvalid, 400, "memcastle::jobs::id_invalid"),
        ("", JobIdInvalid, 400, "memcastle::jobs::id_invalid"),
        (str(uuid.uuid4()), JobNotFound, 404, "memcastle::jobs::not_found"),
    ],
)
def test_a_bad_or_unknown_id(
    h: Harness, ctx: RequestContext, raw: str, error: type, status: int, code: str
) -> None:
    for call in (lambda: h.service.control("cancel", raw), lambda: h.service.show(ctx, raw)):
        with pytest.raises(error) as caught:
            call()
        assert (caught.value.status, caught.value.code) == (status, code)


def test_an_id_in_upper_case_names_the_same_job(h: Harness, ctx: RequestContext) -> None:
    job = h.submit()
    assert h.service.show(ctx, job["id"].upper())["id"] == job["id"]


def test_pause_then_resume_a_running_job(h: Harness) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)
    run = h.executor._runs[job["id"]]

    answer = h.service.control("pause", job["id"])
    assert (answer["status"], answer["pause_requested"]) == ("running", True)
    assert run.stop_requested, "the run is told at once"
    with pytest.raises(TransitionInvalid) as caught:
        h.service.control("pause", job["id"])
    assert "already requested" in caught.value.message

    gate.release.set()
    h.join()
    paused = h.row(job["id"])
    assert paused["status"] == "paused"
    assert paused["pause_requested"] is False
    assert "lease_owner" not in paused and "lease_expires_at" not in paused
    assert "completed_at" not in paused
    assert paused["checkpoint"] == {"next_unit": 1, "runs": 1}
    assert h.sent == [], "a paused job is not dispatched"

    resumed = h.service.control("resume", job["id"])
    assert resumed["status"] == "queued"
    assert h.sent == [job["id"]]
    h.executor.execute(job["id"])
    done = h.row(job["id"])
    assert (done["status"], done["attempt"], done["result"]) == ("completed", 2, {"units": 2})
    assert done["started_at"] == paused["started_at"], "started_at is the first claim's"


def test_cancel_of_a_running_job_is_a_request(h: Harness) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)

    answer = h.service.control("cancel", job["id"])
    assert (answer["status"], answer["cancel_requested"]) == ("running", True)
    with pytest.raises(TransitionInvalid):
        h.service.control("cancel", job["id"])
    with pytest.raises(TransitionInvalid):
        h.service.control("pause", job["id"])

    gate.release.set()
    h.join()
    row = h.row(job["id"])
    assert row["status"] == "cancelled"
    assert row["cancel_requested"] is False
    assert "result" not in row


def test_force_cancel_stops_a_running_job_at_once(h: Harness) -> None:
    job = h.submit(steps=3, step_ms=600_000)
    h.start(job["id"])
    wait_for(
        lambda: "runs" in h.row(job["id"])["checkpoint"],
        timeout=WAIT,
        what="the first save",
        interval=0.002,
    )
    run = h.executor._runs[job["id"]]

    answer = h.service.control("force-cancel", job["id"])

    assert answer["status"] == "cancelled"
    assert answer["lease_owner"] is None and answer["lease_expires_at"] is None
    assert answer["completed_at"] is not None
    assert run.aborted
    h.join()  # the step's ten-minute wait was cut short
    row = h.row(job["id"])
    assert row["status"] == "cancelled"
    assert "result" not in row and "error" not in row
    assert row["checkpoint"]["next_step"] == 0, "what was saved is kept"
    assert h.steps_written(job["id"]) == []
    with pytest.raises(TransitionInvalid):
        h.service.control("force-cancel", job["id"])


# Orphans ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "expires_in"),
    [
        (OTHER_WORKER, -1.0),
        (OTHER_WORKER, None),
        # An embedded palace is this process's alone: even a current lease has no worker.
        (OTHER_WORKER, 60.0),
        ("self", 60.0),
    ],
    ids=["expired", "no-expiry", "current-lease", "ours-but-not-running"],
)
def test_control_of_a_job_without_a_worker_is_orphaned(
    h: Harness, owner: str, expires_in: float | None
) -> None:
    lease_owner = h.executor.worker_id if owner == "self" else owner
    job = h.insert_running(expires_in=expires_in, lease_owner=lease_owner)
    before = h.row(job["id"])
    assert not h.executor.is_live(before)

    for action in ("pause", "cancel"):
        with pytest.raises(JobOrphaned) as caught:
            h.service.control(action, job["id"])
        assert caught.value.status == 409
        assert caught.value.code == "memcastle::jobs::orphaned"
        assert "force-cancel" in caught.value.help
    assert h.row(job["id"]) == before, "nothing changed"

    answer = h.service.control("force-cancel", job["id"])
    assert answer["status"] == "cancelled"
    row = h.row(job["id"])
    assert row["status"] == "cancelled"
    assert "lease_owner" not in row and "lease_expires_at" not in row
    assert row["completed_at"] == answer["completed_at"]
    assert row["checkpoint"] == {"next_step": 1}


def test_on_a_shared_store_a_current_lease_elsewhere_is_live(shared: Harness) -> None:
    job = shared.insert_running(expires_in=60.0)
    assert shared.executor.is_live(shared.row(job["id"]))

    answer = shared.service.control("pause", job["id"])

    assert (answer["status"], answer["pause_requested"]) == ("running", True)
    assert answer["lease_owner"] == OTHER_WORKER, "the other worker keeps its job"


@pytest.mark.parametrize("expires_in", [-1.0, None], ids=["expired", "no-expiry"])
def test_on_a_shared_store_an_expired_lease_is_orphaned(
    shared: Harness, expires_in: float | None
) -> None:
    job = shared.insert_running(expires_in=expires_in)
    with pytest.raises(JobOrphaned):
        shared.service.control("cancel", job["id"])
    assert shared.row(job["id"])["cancel_requested"] is False


# Contention -------------------------------------------------------------------------------


def test_a_job_that_keeps_changing_is_contended(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.submit(steps=1, step_ms=0)
    published: list[tuple[Any, ...]] = []
    monkeypatch.setattr(h.executor.events, "publish", lambda *a, **kw: published.append(a))
    original = h.repository.compare_and_set
    seen_states: list[bool] = []

    def churn(seen: dict[str, Any], changes: dict[str, Any], **kw: Any) -> Any:
        # Between the service's read and its write, the row's state changes every time.
        seen_states.append(bool(seen.get("pause_requested")))
        h.set(seen["id"], "pause_requested = !(pause_requested ?? false)")
        return original(seen, changes, **kw)

    monkeypatch.setattr(h.repository, "compare_and_set", churn)

    with pytest.raises(JobContended) as caught:
        h.service.control("cancel", job["id"])

    assert caught.value.status == 409
    assert caught.value.code == "memcastle::jobs::contended"
    assert seen_states == [False, True, False], "three reads, each of the changed row"
    row = h.row(job["id"])
    assert row["status"] == "queued"
    assert "completed_at" not in row
    assert published == [], "nothing was announced"
    assert h.sent == [job["id"]]


def test_a_write_that_always_loses_is_contended(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.insert_running(expires_in=None)
    monkeypatch.setattr(h.repository, "compare_and_set", lambda *a, **kw: None)
    with pytest.raises(JobContended):
        h.service.control("force-cancel", job["id"])
    assert h.row(job["id"])["status"] == "running"


def test_one_change_under_the_request_is_retried(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.submit(steps=1, step_ms=0)
    original = h.repository.compare_and_set
    calls: list[int] = []

    def churn_once(seen: dict[str, Any], changes: dict[str, Any], **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            h.set(seen["id"], "priority = 75")
        return original(seen, changes, **kw)

    monkeypatch.setattr(h.repository, "compare_and_set", churn_once)
    # A priority change is not part of the compared state, so even the first write lands.
    assert h.service.control("cancel", job["id"])["status"] == "cancelled"
    assert len(calls) == 1


# Fenced writes ----------------------------------------------------------------------------


def test_a_save_after_the_lease_was_taken_is_refused(h: Harness) -> None:
    lost: list[LeaseLost] = []

    def taken_over(job: JobRun) -> dict[str, Any]:
        h.set(job.job_id, "lease_owner = $owner", owner=OTHER_WORKER)
        try:
            job.save({"next_unit": 1}, current=1)
        except LeaseLost as exc:
            lost.append(exc)
            raise
        raise AssertionError("the save was not fenced")

    job = h.insert(kind={"type": h.register(taken_over)})
    h.executor.execute(job["id"])

    assert len(lost) == 1
    assert lost[0].code == "memcastle::jobs::lease_lost"
    row = h.row(job["id"])
    assert row["status"] == "running", "abandoned, not failed"
    assert row["lease_owner"] == OTHER_WORKER
    assert row["checkpoint"] == {}, "the fenced save wrote nothing"
    assert "error" not in row and "error_code" not in row
    assert h.executor._runs == {}


def test_a_final_write_after_the_lease_was_taken_is_refused(h: Harness) -> None:
    def taken_over(job: JobRun) -> dict[str, Any]:
        h.set(job.job_id, "lease_owner = $owner", owner=OTHER_WORKER)
        return {"done": True}

    job = h.insert(kind={"type": h.register(taken_over)})
    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert row["status"] == "running"
    assert row["lease_owner"] == OTHER_WORKER
    assert "result" not in row and "completed_at" not in row


def test_fenced_update_needs_the_lease_and_a_running_job(h: Harness) -> None:
    job = h.insert_running(expires_in=60.0)
    assert h.repository.fenced_update(job["id"], "memcastle-someone", {"x": 1}) is None
    state = h.repository.fenced_update(job["id"], OTHER_WORKER, {"x": 1})
    assert state is not None and state["status"] == "running"
    assert "kind" in state and "checkpoint" not in state, "the state, not the whole record"
    assert h.row(job["id"])["x"] == 1
    h.set(job["id"], "status = 'paused'")
    assert h.repository.fenced_update(job["id"], OTHER_WORKER, {"x": 2}) is None
    assert h.row(job["id"])["x"] == 1


# Handler failures -------------------------------------------------------------------------


def test_an_unexpected_handler_error_fails_the_job(h: Harness) -> None:
    def broken(job: JobRun) -> dict[str, Any]:
        job.save({"next_unit": 1}, current=1)
        raise RuntimeError("secret detail /home/someone/file.txt")

    name = h.register(broken)
    job = h.insert(kind={"type": name})
    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert row["status"] == "failed"
    assert row["error_code"] == "memcastle::server::failed"
    assert row["error"] == f"the {name} job failed unexpectedly (RuntimeError)"
    assert "secret" not in row["error"]
    assert row["completed_at"] is not None
    assert "lease_owner" not in row and "lease_expires_at" not in row
    assert row["checkpoint"] == {"next_unit": 1}
    assert h.executor._runs == {}


def test_a_memcastle_error_keeps_its_code(h: Harness) -> None:
    def refusing(job: JobRun) -> dict[str, Any]:
        raise MemCastleError("no can do", code="memcastle::test::refused")

    job = h.insert(kind={"type": h.register(refusing)})
    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert (row["status"], row["error"], row["error_code"]) == (
        "failed",
        "no can do",
        "memcastle::test::refused",
    )


def test_a_job_of_an_unknown_kind_fails(h: Harness) -> None:
    job = h.insert(kind={"type": "from-the-future"})
    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert row["status"] == "failed"
    assert row["error_code"] == "memcastle::jobs::kind_unknown"
    assert "from-the-future" in row["error"]


def test_a_failed_demo_is_retried_from_its_checkpoint(h: Harness) -> None:
    job = h.submit(steps=3, step_ms=0, fail_at_step=2)
    h.executor.execute(job["id"])

    failed = h.row(job["id"])
    assert failed["status"] == "failed"
    assert failed["error_code"] == "memcastle::jobs::demo_failed"
    assert failed["error"] == "demo step 2 failed, as asked by fail_at_step"
    assert failed["checkpoint"]["next_step"] == 1
    assert failed["checkpoint"]["failed_once"] is True
    assert len(h.steps_written(job["id"])) == 1

    retried = h.service.control("retry", job["id"])
    assert retried["status"] == "queued"
    assert retried["error"] is None
    assert retried["completed_at"] is None
    assert retried["recovery_attempts"] == 0
    assert retried["checkpoint"] == failed["checkpoint"], "a retry keeps the checkpoint"
    assert h.sent == [job["id"], job["id"]]
    with pytest.raises(TransitionInvalid):
        h.service.control("retry", job["id"])

    h.executor.execute(job["id"])
    done = h.row(job["id"])
    assert done["status"] == "completed"
    assert done["attempt"] == 2
    assert done["result"] == {
        "steps": 3,
        "written": 3,
        "runs": [{"attempt": 1, "from_step": 0}, {"attempt": 2, "from_step": 1}],
    }
    assert "error" not in done


def test_a_retry_clears_the_error_code(h: Harness) -> None:
    job = h.submit(steps=2, step_ms=0, fail_at_step=1)
    h.executor.execute(job["id"])
    assert h.row(job["id"])["error_code"] == "memcastle::jobs::demo_failed"

    assert h.service.control("retry", job["id"])["error_code"] is None
    h.executor.execute(job["id"])
    done = h.row(job["id"])
    assert done["status"] == "completed"
    assert "error_code" not in done


# Replay safety ----------------------------------------------------------------------------


def test_replayed_demo_steps_are_written_once(h: Harness) -> None:
    job = h.submit(steps=4, step_ms=0)
    h.executor.execute(job["id"])
    first = h.row(job["id"])
    written = {row["id"]: row for row in h.steps_written(job["id"])}
    assert len(written) == 4

    # As if the checkpoint had never been saved: every step is replayed.
    h.set(
        job["id"],
        "status = 'queued', checkpoint.next_step = 0, completed_at = NONE, result = NONE",
    )
    h.executor.execute(job["id"])

    again = h.row(job["id"])
    assert again["status"] == "completed"
    assert again["attempt"] == 2
    assert again["started_at"] == first["started_at"]
    assert again["result"]["written"] == 4
    assert [run["from_step"] for run in again["result"]["runs"]] == [0, 0]
    replayed = {row["id"]: row for row in h.steps_written(job["id"])}
    assert replayed == written, "no step row was written again or changed"
    assert all(row["attempt"] == 1 for row in replayed.values())


def test_step_rows_are_per_job(h: Harness) -> None:
    one = h.submit(steps=2, step_ms=0)
    two = h.submit(steps=2, step_ms=0)
    h.executor.execute(one["id"])
    h.executor.execute(two["id"])
    ids_one = {row["id"] for row in h.steps_written(one["id"])}
    ids_two = {row["id"] for row in h.steps_written(two["id"])}
    assert len(ids_one) == len(ids_two) == 2
    assert not ids_one & ids_two


# Start-up recovery ------------------------------------------------------------------------


def test_start_up_settles_the_jobs_a_dead_worker_left_running(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    published: list[dict[str, Any]] = []

    def record(kind: str, action: str, **identifiers: Any) -> None:
        published.append({"kind": kind, "action": action, **identifiers})

    monkeypatch.setattr(h.executor.events, "publish", record)
    # On an embedded palace even a current lease is a dead worker's.
    crashed = h.insert_running(expires_in=60.0, recovery_attempts=1)
    cancelling = h.insert_running(cancel_requested=True, pause_requested=True)
    pausing = h.insert_running(pause_requested=True, recovery_attempts=3)
    exhausted = h.insert_running(recovery_attempts=3, max_attempts=3)
    waiting = h.insert(priority=int(Priority.CRITICAL))
    paused = h.insert(status="paused")

    h.executor.start_up()

    row = h.row(crashed["id"])
    assert row["status"] == "queued"
    assert row["recovery_attempts"] == 2
    assert row["attempt"] == 1
    assert row["checkpoint"] == {"next_step": 1}
    assert "lease_owner" not in row and "lease_expires_at" not in row

    row = h.row(cancelling["id"])
    assert row["status"] == "cancelled"
    assert row["completed_at"] is not None
    assert row["recovery_attempts"] == 0
    assert row["cancel_requested"] is False and row["pause_requested"] is False

    row = h.row(pausing["id"])
    assert row["status"] == "paused"
    assert row["recovery_attempts"] == 3, "a pause spends no budget"
    assert row["pause_requested"] is False

    row = h.row(exhausted["id"])
    assert row["status"] == "failed"
    assert row["error_code"] == "memcastle::jobs::recovery_exhausted"
    assert row["error"] == "the job was interrupted by a crash 3 times, its whole budget"
    assert row["recovery_attempts"] == 3
    assert row["completed_at"] is not None

    assert h.row(paused["id"])["status"] == "paused", "paused jobs are never auto-resumed"
    assert h.sent == [waiting["id"], crashed["id"]], "every queued job, most urgent first"
    assert {(e["id"], e["status"]) for e in published} == {
        (crashed["id"], "queued"),
        (cancelling["id"], "cancelled"),
        (pausing["id"], "paused"),
        (exhausted["id"], "failed"),
    }

    h.executor.execute(crashed["id"])  # the critical one
    h.executor.execute(crashed["id"])
    resumed = h.row(crashed["id"])
    assert resumed["status"] == "completed"
    assert resumed["attempt"] == 2
    assert resumed["result"]["runs"] == [{"attempt": 2, "from_step": 1}]


def test_start_up_recovers_a_job_without_any_budget_fields(h: Harness) -> None:
    job = h.insert_running(expires_in=None)
    h.set(job["id"], "recovery_attempts = NONE, max_attempts = NONE")

    h.executor.start_up()

    assert h.row(job["id"])["status"] == "queued"
    assert h.row(job["id"])["recovery_attempts"] == 1


def test_a_shared_store_recovers_only_expired_leases(shared: Harness) -> None:
    expired = shared.insert_running(expires_in=-1.0)
    no_expiry = shared.insert_running(expires_in=None)
    live = shared.insert_running(expires_in=60.0)

    shared.executor.start_up()

    assert shared.row(expired["id"])["status"] == "queued"
    assert shared.row(expired["id"])["recovery_attempts"] == 1
    assert shared.row(no_expiry["id"])["status"] == "queued"
    untouched = shared.row(live["id"])
    assert untouched == live, "a current lease is left alone"
    assert sorted(shared.sent) == sorted([expired["id"], no_expiry["id"]])

    # The reaper takes it back once its worker stops renewing it.
    shared.sent.clear()
    shared.executor.reap()
    assert shared.row(live["id"])["status"] == "running"
    assert shared.sent == []
    shared.clock.advance(61)
    shared.executor.reap()
    assert shared.row(live["id"])["status"] == "queued"
    # The two recovered earlier have waited a whole lease period by now: they are sent again.
    assert shared.sent == [live["id"], expired["id"], no_expiry["id"]]


def test_reaping_wakes_the_queued_jobs_that_waited_a_whole_lease(shared: Harness) -> None:
    base = shared.clock.now
    old = [
        shared.insert(priority=int(Priority.LOW), created_at=base, updated_at=base),
        shared.insert(priority=int(Priority.HIGH), created_at=base, updated_at=base),
    ]
    many = [
        shared.insert(created_at=base + dt.timedelta(milliseconds=n), updated_at=base)
        for n in range(CONFIG.max_concurrency)
    ]
    shared.clock.advance(CONFIG.lease_ttl_secs - 1)
    recent = shared.insert()

    shared.executor.reap()
    assert shared.sent == [], "nothing has waited a whole lease period yet"

    shared.clock.advance(2)
    shared.executor.reap()
    # Any message claims the most urgent job: a few messages are enough, most urgent first.
    assert shared.sent == [old[1]["id"], *[row["id"] for row in many[:3]]]
    assert recent["id"] not in shared.sent
    assert all(shared.row(row["id"])["status"] == "queued" for row in [*old, *many, recent])


def test_recovery_is_guarded_on_the_lease_read(
    shared: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = shared.insert_running(expires_in=-1.0)
    original = shared.repository.compare_and_set

    def renewed_meanwhile(seen: dict[str, Any], changes: dict[str, Any], **kw: Any) -> Any:
        # The holder renews its lease between the reaper's read and its write.
        shared.set(seen["id"], "lease_expires_at = $at", at=shared.clock.now + TTL)
        return original(seen, changes, **kw)

    monkeypatch.setattr(shared.repository, "compare_and_set", renewed_meanwhile)
    shared.executor.reap()

    row = shared.row(job["id"])
    assert row["status"] == "running"
    assert row["lease_owner"] == OTHER_WORKER
    assert shared.sent == []


def test_recovery_skips_the_jobs_running_here(h: Harness) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)

    assert h.executor._recover(expired_only=False) == []
    assert h.row(job["id"])["status"] == "running"

    gate.release.set()
    h.join()
    assert h.row(job["id"])["status"] == "completed"


# Leases -----------------------------------------------------------------------------------


def test_renewing_moves_the_lease_forward(h: Harness) -> None:
    job = h.submit(steps=2, step_ms=600_000)
    bystander = h.insert_running(expires_in=5.0)
    h.start(job["id"])
    wait_for(
        lambda: "runs" in h.row(job["id"])["checkpoint"],
        timeout=WAIT,
        what="the first save",
        interval=0.002,
    )
    claimed = h.row(job["id"])["lease_expires_at"]

    h.clock.advance(10)
    h.executor._renew()

    renewed = h.row(job["id"])["lease_expires_at"]
    assert renewed == h.clock.last + TTL
    assert renewed >= claimed + dt.timedelta(seconds=10)
    assert h.row(bystander["id"]) == bystander, "only this worker's leases are renewed"
    assert not h.executor._runs[job["id"]].stop_requested

    h.service.control("cancel", job["id"])
    h.join()
    assert h.row(job["id"])["status"] == "cancelled"


def test_renewing_passes_on_a_request_made_elsewhere(h: Harness) -> None:
    job = h.submit(steps=2, step_ms=600_000)
    h.start(job["id"])
    wait_for(
        lambda: "runs" in h.row(job["id"])["checkpoint"],
        timeout=WAIT,
        what="the first save",
        interval=0.002,
    )

    # Another daemon sharing the store set the request on the row; only the row tells us.
    h.set(job["id"], "pause_requested = true")
    h.executor._renew()

    h.join()
    row = h.row(job["id"])
    assert row["status"] == "paused"
    assert row["checkpoint"]["next_step"] == 0


def test_renewing_a_lease_taken_by_another_worker_aborts_the_run(h: Harness) -> None:
    job = h.submit(steps=2, step_ms=600_000)
    h.start(job["id"])
    wait_for(
        lambda: "runs" in h.row(job["id"])["checkpoint"],
        timeout=WAIT,
        what="the first save",
        interval=0.002,
    )
    run = h.executor._runs[job["id"]]
    h.set(job["id"], "lease_owner = $owner", owner=OTHER_WORKER)
    before = h.row(job["id"])

    h.executor._renew()

    assert run.aborted
    h.join()
    row = h.row(job["id"])
    assert row == before, "abandoned: the other worker's job is left as it was"
    assert h.executor._runs == {}


def test_renewing_with_nothing_running(h: Harness) -> None:
    h.executor._renew()
    assert h.repository.renew_leases(h.executor.worker_id, [], h.clock()) == []


# The drain --------------------------------------------------------------------------------


def test_the_drain_returns_a_running_job_to_the_queue(h: Harness, store: Store) -> None:
    job = h.submit(steps=1000, step_ms=20)
    h.start(job["id"])
    wait_for(
        lambda: h.row(job["id"])["progress"]["current"] >= 2,
        timeout=WAIT,
        what="two steps",
        interval=0.002,
    )

    h.executor.begin_drain()
    assert h.executor.finish_drain(CONFIG.drain_timeout_secs) == 0

    h.join()
    row = h.row(job["id"])
    assert row["status"] == "queued"
    assert row["recovery_attempts"] == 0, "an interrupt is not a crash"
    assert row["attempt"] == 1
    done = row["checkpoint"]["next_step"]
    assert done >= 2
    assert row["progress"]["current"] == done
    assert len(h.steps_written(job["id"])) == done
    assert "lease_owner" not in row and "lease_expires_at" not in row
    # Dispatched again at once: on a shared broker another worker takes it (this one stopped
    # consuming); in-process, the next start sends it again.
    assert h.sent == [job["id"], job["id"]]

    # A closing executor claims nothing.
    h.executor.execute(job["id"])
    assert h.row(job["id"]) == row

    # The next daemon resumes it from its checkpoint (made short here).
    h.set(job["id"], "kind.steps = $steps, kind.step_ms = 0", steps=done + 2)
    after = Harness(store)
    try:
        after.executor.execute(job["id"])
    finally:
        after.close()
    resumed = h.row(job["id"])
    assert resumed["status"] == "completed"
    assert resumed["result"]["written"] == done + 2
    assert resumed["result"]["runs"][-1] == {"attempt": 2, "from_step": done}


@pytest.mark.parametrize(("action", "status"), [("pause", "paused"), ("cancel", "cancelled")])
def test_a_user_request_wins_over_the_drain(h: Harness, action: str, status: str) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)

    h.service.control(action, job["id"])
    h.executor.begin_drain()
    run = h.executor._runs[job["id"]]
    assert run.interrupted and run.stop_requested
    gate.release.set()

    assert h.executor.finish_drain(CONFIG.drain_timeout_secs) == 0
    h.join()
    row = h.row(job["id"])
    assert row["status"] == status
    assert row["pause_requested"] is False and row["cancel_requested"] is False


def test_a_pause_accepted_while_the_interrupt_is_written_still_wins(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)
    original = h.repository.compare_and_set
    answers: list[dict[str, Any]] = []

    def user_pauses_first(seen: dict[str, Any], changes: dict[str, Any], **kw: Any) -> Any:
        # The user's pause lands after the runner read the row, before it writes the interrupt.
        if changes.get("status") == "queued" and not answers:
            answers.append(h.service.control("pause", seen["id"]))
        return original(seen, changes, **kw)

    monkeypatch.setattr(h.repository, "compare_and_set", user_pauses_first)
    h.executor.begin_drain()
    gate.release.set()
    assert h.executor.finish_drain(CONFIG.drain_timeout_secs) == 0
    h.join()

    assert answers[0]["pause_requested"] is True, "the pause was accepted"
    assert h.row(job["id"])["status"] == "paused"


def test_a_job_claimed_as_the_drain_begins_is_interrupted(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.submit(steps=3, step_ms=0)
    original = h.repository.claim_first

    def drain_meanwhile(changes: dict[str, Any]) -> Any:
        h.executor.begin_drain()
        return original(changes)

    monkeypatch.setattr(h.repository, "claim_first", drain_meanwhile)
    h.executor.execute(job["id"])

    row = h.row(job["id"])
    assert row["status"] == "queued", "stopped at its first unit and returned to the queue"
    assert row["recovery_attempts"] == 0


def test_a_drain_with_nothing_running(h: Harness) -> None:
    job = h.submit(steps=1, step_ms=0)
    h.executor.begin_drain()
    h.executor.execute(job["id"])
    assert h.row(job["id"])["status"] == "queued"
    assert h.row(job["id"])["attempt"] == 0
    assert h.executor.finish_drain(CONFIG.drain_timeout_secs) == 0


def test_a_job_that_outlives_the_drain_is_counted(h: Harness) -> None:
    name, gate = h.gated()
    job = h.insert(kind={"type": name})
    h.start(job["id"])
    assert gate.entered.wait(WAIT)
    run = h.executor._runs[job["id"]]

    h.executor.begin_drain()
    assert h.executor.finish_drain(0.05) == 1

    assert run.aborted
    assert h.row(job["id"])["status"] == "running", "recovered at the next start"


# Events -----------------------------------------------------------------------------------


def test_job_events_carry_only_id_kind_and_status(h: Harness, ctx: RequestContext) -> None:
    async def scenario() -> tuple[str, str, list[Any]]:
        subscription = h.executor.events.subscribe()
        job = h.submit(ctx, steps=2, step_ms=0)
        h.executor.execute(job["id"])
        other = h.submit(ctx, steps=1, step_ms=0)
        h.service.control("cancel", other["id"])
        events = []
        # Everything was published synchronously above; read until the buffer is empty.
        while (event := await subscription.next(0)) is not None:
            events.append(event)
        subscription.cancel()
        return job["id"], other["id"], events

    job_id, other_id, events = asyncio.run(scenario())

    assert {event.kind for event in events} == {"job"}
    assert all(
        set(event.data) == {"kind", "action", "id", "job_kind", "status"} for event in events
    )
    assert [(e.data["id"], e.data["action"], e.data["status"]) for e in events] == [
        (job_id, "created", "queued"),
        (job_id, "updated", "running"),  # claimed
        (job_id, "updated", "running"),  # started
        (job_id, "updated", "running"),  # step 1
        (job_id, "updated", "running"),  # step 2
        (job_id, "updated", "completed"),
        (other_id, "created", "queued"),
        (other_id, "updated", "cancelled"),
    ]
    assert {event.data["job_kind"] for event in events} == {"demo"}


# Listing ----------------------------------------------------------------------------------


def test_listing_filters_orders_and_pages(h: Harness, ctx: RequestContext) -> None:
    demos = [h.submit(ctx, steps=n + 1, step_ms=0)["id"] for n in range(5)]
    other = h.service.submit(ctx, {"type": h.register(lambda job: {})})["id"]
    for job_id in demos[1], demos[3]:
        h.service.control("cancel", job_id)
    newest_first = [other, *reversed(demos)]

    listed = h.service.list_jobs(ctx)
    assert [job["id"] for job in listed["jobs"]] == newest_first
    assert (listed["total"], listed["limit"], listed["offset"]) == (6, 50, 0)
    assert all(job["lease_owner"] is None for job in listed["jobs"]), "every field is present"

    cancelled = h.service.list_jobs(ctx, status="cancelled")
    assert [job["id"] for job in cancelled["jobs"]] == [demos[3], demos[1]]
    assert cancelled["total"] == 2

    only_demos = h.service.list_jobs(ctx, kind="demo")
    assert [job["id"] for job in only_demos["jobs"]] == newest_first[1:]
    assert only_demos["total"] == 5

    both = h.service.list_jobs(ctx, status="queued", kind="demo")
    assert [job["id"] for job in both["jobs"]] == [demos[4], demos[2], demos[0]]

    page = h.service.list_jobs(ctx, limit=2, offset=1)
    assert [job["id"] for job in page["jobs"]] == newest_first[1:3]
    assert (page["total"], page["limit"], page["offset"]) == (6, 2, 1)

    past_the_end = h.service.list_jobs(ctx, limit="2", offset="10")
    assert (past_the_end["jobs"], past_the_end["total"]) == ([], 6)

    none = h.service.list_jobs(ctx, status="failed")
    assert (none["jobs"], none["total"]) == ([], 0)

    assert h.service.counts() == {
        "queued": 4,
        "running": 0,
        "paused": 0,
        "completed": 0,
        "failed": 0,
        "cancelled": 2,
    }


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"status": "done"}, "status"),
        ({"kind": "nope"}, "kind"),
        ({"limit": -1}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
def test_listing_refuses_bad_filters(
    h: Harness, ctx: RequestContext, arguments: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        h.service.list_jobs(ctx, **arguments)
    assert caught.value.field == field


def test_an_empty_listing(h: Harness, ctx: RequestContext) -> None:
    assert h.service.list_jobs(ctx) == {"jobs": [], "total": 0, "limit": 50, "offset": 0}


# Memory modes -----------------------------------------------------------------------------


def test_reading_jobs_is_allowed_in_read_only_mode(h: Harness) -> None:
    job = h.submit()
    read_only = RequestContext.build(mode="read_only")
    assert h.service.list_jobs(read_only)["total"] == 1
    assert h.service.show(read_only, job["id"])["id"] == job["id"]


def test_reading_jobs_is_refused_in_disabled_mode(h: Harness) -> None:
    job = h.submit()
    disabled = RequestContext.build(mode="disabled")
    for operation, call in [
        ("job_list", lambda: h.service.list_jobs(disabled)),
        ("job_show", lambda: h.service.show(disabled, job["id"])),
    ]:
        with pytest.raises(ModeForbidden) as caught:
            call()
        assert caught.value.status == 403
        assert caught.value.code == "memcastle::mode::forbidden"
        assert caught.value.message == f"`{operation}` is not permitted in disabled mode"


@pytest.mark.parametrize("mode", ["full", "read_only", "disabled"])
def test_a_demo_is_never_gated(h: Harness, mode: str) -> None:
    job = h.submit(RequestContext.build(mode=mode), steps=1, step_ms=0)
    assert job["status"] == "queued"
    # Control is never gated either: it takes no context at all.
    assert h.service.control("cancel", job["id"])["status"] == "cancelled"


@pytest.mark.parametrize("mode", ["read_only", "disabled"])
def test_a_kind_that_writes_memory_is_gated(h: Harness, mode: str) -> None:
    name = h.register(lambda job: {}, writes_memory=True)
    with pytest.raises(ModeForbidden) as caught:
        h.service.submit(RequestContext.build(mode=mode), {"type": name})
    assert caught.value.message == f"`{name}` is not permitted in {mode} mode"
    assert h.service.counts()["queued"] == 0
    assert h.sent == []

    assert h.service.submit(RequestContext.build(), {"type": name})["status"] == "queued"


# Configuration ----------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose default config file (under XDG_CONFIG_HOME) does not exist."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}


def remote_config(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "remote.toml"
    path.write_text(
        f'[store]\nmode = "remote"\nurl = "ws://127.0.0.1:8000"\n{extra}', encoding="utf-8"
    )
    return str(path)


def test_job_settings_default(env: dict[str, str]) -> None:
    config = load_config(env=env)
    assert config.jobs == JobsConfig(
        max_concurrency=4, drain_timeout_secs=10, lease_ttl_secs=30, broker_url=None
    )
    assert config.events_keepalive_secs == 15.0


def test_job_settings_from_the_environment(env: dict[str, str]) -> None:
    config = load_config(
        env={
            **env,
            "MEMCASTLE_JOBS_MAX_CONCURRENCY": "8",
            "MEMCASTLE_JOBS_DRAIN_TIMEOUT_SECS": "25",
            "MEMCASTLE_JOBS_LEASE_TTL_SECS": "3",
            "MEMCASTLE_EVENTS_KEEPALIVE_SECS": "0.5",
        }
    )
    assert (
        config.jobs.max_concurrency,
        config.jobs.drain_timeout_secs,
        config.jobs.lease_ttl_secs,
    ) == (8, 25, 3)
    assert config.events_keepalive_secs == 0.5


def test_job_settings_from_the_file_and_the_environment_over_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(
        "[jobs]\nmax_concurrency = 2\ndrain_timeout_secs = 5\nlease_ttl_secs = 60\n"
        "[events]\nkeepalive_secs = 2\n",
        encoding="utf-8",
    )
    from_file = load_config(config_file=str(path), env=env)
    assert from_file.jobs.max_concurrency == 2
    assert from_file.jobs.drain_timeout_secs == 5
    assert from_file.jobs.lease_ttl_secs == 60
    assert from_file.events_keepalive_secs == 2.0

    overridden = load_config(
        config_file=str(path), env={**env, "MEMCASTLE_JOBS_MAX_CONCURRENCY": "16"}
    )
    assert overridden.jobs.max_concurrency == 16

    flagged = load_config(
        config_file=str(path),
        env={**env, "MEMCASTLE_JOBS_MAX_CONCURRENCY": "16"},
        overrides={"jobs.max_concurrency": "3"},
    )
    assert flagged.jobs.max_concurrency == 3


@pytest.mark.parametrize("url", ["redis://localhost:6379/0", "rediss://:pw@cache.example:6380"])
def test_a_redis_broker_with_a_remote_store(env: dict[str, str], tmp_path: Path, url: str) -> None:
    config = load_config(
        config_file=remote_config(tmp_path), env={**env, "MEMCASTLE_JOBS_BROKER_URL": url}
    )
    assert config.jobs.broker_url == url
    assert url not in repr(config.jobs), "a broker URL may carry a password"


def test_a_broker_is_refused_with_an_embedded_store(env: dict[str, str]) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(env={**env, "MEMCASTLE_JOBS_BROKER_URL": "redis://localhost:6379/0"})
    assert caught.value.code == "memcastle::config::invalid"
    assert "`jobs.broker_url`" in caught.value.message
    assert 'store.mode = "remote"' in caught.value.message


@pytest.mark.parametrize(
    "url", ["amqp://guest:hunter2@localhost//", "http://localhost:6379", "redis://", "localhost"]
)
def test_a_broker_that_is_not_redis_is_refused(
    env: dict[str, str], tmp_path: Path, url: str
) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(
            config_file=remote_config(tmp_path), env={**env, "MEMCASTLE_JOBS_BROKER_URL": url}
        )
    assert caught.value.message == (
        "invalid value for `jobs.broker_url` from MEMCASTLE_JOBS_BROKER_URL: "
        "expected a redis:// or rediss:// URL, got <secret>"
    )


@pytest.mark.parametrize(
    ("variable", "value", "key", "expected"),
    [
        ("MEMCASTLE_JOBS_MAX_CONCURRENCY", "0", "jobs.max_concurrency", "1 to 256"),
        ("MEMCASTLE_JOBS_MAX_CONCURRENCY", "257", "jobs.max_concurrency", "1 to 256"),
        ("MEMCASTLE_JOBS_MAX_CONCURRENCY", "four", "jobs.max_concurrency", "1 to 256"),
        ("MEMCASTLE_JOBS_MAX_CONCURRENCY", "", "jobs.max_concurrency", "1 to 256"),
        ("MEMCASTLE_JOBS_MAX_CONCURRENCY", "2.5", "jobs.max_concurrency", "1 to 256"),
        ("MEMCASTLE_JOBS_DRAIN_TIMEOUT_SECS", "0", "jobs.drain_timeout_secs", "1 to 86400"),
        ("MEMCASTLE_JOBS_DRAIN_TIMEOUT_SECS", "86401", "jobs.drain_timeout_secs", "1 to 86400"),
        ("MEMCASTLE_JOBS_LEASE_TTL_SECS", "2", "jobs.lease_ttl_secs", "3 to 86400"),
        ("MEMCASTLE_JOBS_LEASE_TTL_SECS", "-30", "jobs.lease_ttl_secs", "3 to 86400"),
        ("MEMCASTLE_EVENTS_KEEPALIVE_SECS", "0", "events.keepalive_secs", "0.01 to 3600"),
        ("MEMCASTLE_EVENTS_KEEPALIVE_SECS", "3601", "events.keepalive_secs", "0.01 to 3600"),
        ("MEMCASTLE_EVENTS_KEEPALIVE_SECS", "soon", "events.keepalive_secs", "0.01 to 3600"),
        ("MEMCASTLE_EVENTS_KEEPALIVE_SECS", "nan", "events.keepalive_secs", "0.01 to 3600"),
    ],
)
def test_out_of_range_job_settings_are_refused(
    env: dict[str, str], variable: str, value: str, key: str, expected: str
) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(env={**env, variable: value})
    assert caught.value.code == "memcastle::config::invalid"
    assert caught.value.message.startswith(f"invalid value for `{key}` from {variable}: expected")
    assert expected in caught.value.message
    assert caught.value.message.endswith(f"got {value!r}")


def test_a_bad_file_value_names_the_file(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text("[jobs]\nlease_ttl_secs = true\n", encoding="utf-8")
    with pytest.raises(ConfigInvalid) as caught:
        load_config(config_file=str(path), env=env)
    assert caught.value.message == (
        f"invalid value for `jobs.lease_ttl_secs` from {path}: "
        "expected a whole number from 3 to 86400, got True"
    )


def test_a_bad_concurrency_flag_names_the_flag(env: dict[str, str]) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load_config(env=env, overrides={"jobs.max_concurrency": "0"})
    assert "from the flag --concurrency" in caught.value.message


def test_a_message_whose_candidates_were_all_taken_reads_the_queue_again(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker A reads [X]; Y is submitted; worker B takes X with Y's message. A must then
    claim Y, or Y waits with no message left to run it."""
    original = h.repository.claim_first
    a_has_read, a_may_go = threading.Event(), threading.Event()

    def a_pauses_after_reading(changes: dict[str, Any]) -> Any:
        if threading.current_thread().name != "worker-a" or a_has_read.is_set():
            return original(changes)
        # A reads the queue; its write comes too late to claim X.
        rows = h.repository.claim_candidates()
        a_has_read.set()
        assert a_may_go.wait(WAIT)
        return None, rows

    monkeypatch.setattr(h.repository, "claim_first", a_pauses_after_reading)
    x = h.submit(steps=1, step_ms=0)
    a = threading.Thread(target=h.executor.execute, args=(x["id"],), name="worker-a")
    a.start()
    assert a_has_read.wait(WAIT)
    y = h.submit(steps=1, step_ms=0)
    h.executor.execute(y["id"])  # worker B, on this thread: claims X, the oldest
    assert h.row(x["id"])["status"] == "completed"
    a_may_go.set()
    a.join(WAIT)
    assert not a.is_alive()
    assert h.row(y["id"])["status"] == "completed"
