"""`jobs.sweeper.Sweeper`, the automatic queueing the embed and extract jobs share, against the
real SurrealDB engine and a real job service (nothing runs the jobs: the executor only records
what it would dispatch). A sweeper of the `demo` kind records the bursts it is asked about.

Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from jobs import sweeper
from jobs.executor import Executor
from jobs.repository import JobRepository
from jobs.services import JobService
from kernel.config import JobsConfig
from kernel.context import RequestContext
from kernel.events import Event, EventBus
from kernel.store import Store
from tests.support.waits import wait_for

CONFIG = JobsConfig(max_concurrency=1, drain_timeout_secs=10, lease_ttl_secs=30, broker_url=None)
WAIT = 10.0


class DemoSweeper(sweeper.Sweeper):
    """Queues a `demo` job after `drawer created` events; says yes to a burst when `answer`."""

    kind = "demo"
    retried_by = "the next drawer"

    def __init__(self, jobs: JobService, events: EventBus, *, enabled: bool = True) -> None:
        super().__init__(jobs, events)
        self._enabled = enabled
        self.answer = True
        self.bursts: list[list[Event]] = []
        self._bursts_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._enabled

    def triggers(self, event: Event) -> bool:
        return event.kind == "drawer" and event.data.get("action") == "created"

    def calls_for(self, burst: list[Event]) -> bool:
        with self._bursts_lock:
            self.bursts.append(burst)
        return self.answer


@pytest.fixture
def events() -> Iterator[EventBus]:
    bus = EventBus()
    yield bus
    bus.close()


@pytest.fixture
def jobs(store: Store, events: EventBus) -> JobService:
    repository = JobRepository(store)
    executor = Executor(repository, events, CONFIG, exclusive_store=True)
    executor.dispatch = lambda job_id: None
    return JobService(repository, executor)


def queued(jobs: JobService, status: str = "queued") -> list[dict[str, Any]]:
    return jobs.list_jobs(RequestContext.build(), status=status, kind="demo")["jobs"]


def test_at_most_one_job_waits(
    jobs: JobService, events: EventBus, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    sweeps = DemoSweeper(jobs, events)
    first = sweeps.queue()
    assert first is not None
    assert (first["kind"], first["requested_by"]) == (
        {"type": "demo", "steps": 5, "step_ms": 500},
        "auto",
    )
    with caplog.at_level("DEBUG", logger=__name__):
        assert sweeps.queue() is None
    # Logged under the subclass's module, where each job kind's sweeps are configured.
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        (__name__, "demo sweep: a job is already queued")
    ]
    assert [job["id"] for job in queued(jobs)] == [first["id"]]
    # A running one does not count: what is written while it runs is for the next one...
    store.query("UPDATE type::record('job', $id) SET status = 'running'", {"id": first["id"]})
    second = sweeps.queue()
    assert second is not None
    jobs.control("cancel", second["id"])
    # ...except at start-up, when nothing has been written since it was claimed.
    assert sweeps.queue(at_start_up=True) is None
    assert queued(jobs) == []


def test_a_disabled_sweeper_queues_nothing_and_follows_nothing(
    jobs: JobService, events: EventBus
) -> None:
    sweeps = DemoSweeper(jobs, events, enabled=False)
    sweeps.start()
    assert sweeps._thread is None
    assert events.subscriber_count == 0
    assert queued(jobs) == []


def test_a_burst_is_looked_at_once_and_queues_one_job(jobs: JobService, events: EventBus) -> None:
    sweeps = DemoSweeper(jobs, events)
    sweeps.start()
    (at_start,) = wait_for(lambda: queued(jobs), timeout=WAIT, what="the start-up job")
    jobs.control("cancel", at_start["id"])
    wait_for(lambda: events.subscriber_count == 1, timeout=WAIT, what="the sweeper to follow")

    # An event that does not trigger starts no burst; one that does gathers what follows.
    events.publish("wing", "created", id="w")
    for n in range(3):
        events.publish("drawer", "created", id=f"d{n}")
    (job,) = wait_for(lambda: queued(jobs), timeout=WAIT, what="a job after the burst")
    assert job["requested_by"] == "auto"
    first = sweeps.bursts[0]
    assert first[0].data == {"kind": "drawer", "action": "created", "id": "d0"}
    seen = [event.data["id"] for burst in sweeps.bursts for event in burst]
    assert seen == ["d0", "d1", "d2"]
    jobs.control("cancel", job["id"])

    # A burst the sweeper says no to queues nothing; the next one it says yes to does.
    looked = len(sweeps.bursts)
    sweeps.answer = False
    events.publish("drawer", "created", id="no")
    wait_for(lambda: len(sweeps.bursts) > looked, timeout=WAIT, what="the burst to be looked at")
    sweeps.answer = True
    events.publish("drawer", "created", id="yes")
    (after,) = wait_for(lambda: queued(jobs), timeout=WAIT, what="a job after the second burst")
    assert [event.data["id"] for event in sweeps.bursts[-1]] == ["yes"]
    assert after["id"] != job["id"]

    events.close()
    assert sweeps._thread is not None
    sweeps._thread.join(WAIT)
    assert not sweeps._thread.is_alive()
