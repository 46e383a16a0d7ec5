"""`GET /api/events`, the server-sent events stream (api.md "The event stream", and section B
of dbadmin-web-auth.md): the EventBus on its own, then the stream end to end against real daemons.

Every wait is on a condition with a deadline. The shared daemon carries other tests' activity,
so frames are always picked out by the ids a test created.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kernel.events import RESYNC, Event, EventBus
from memcastle_project.serving import SHUTDOWN_GRACE_SECS
from tests.support.auth import AUTH_ENV, SECRET
from tests.support.daemon import Daemon
from tests.support.events import Comment, EventStream, Frame, expect_open
from tests.support.http import assert_error

WAIT = 15.0
JOB_KEYS = {"kind", "action", "id", "job_kind", "status"}


@pytest.fixture
def open_stream() -> Iterator[Callable[..., EventStream]]:
    """Opens event streams (200 required) and closes every one of them at teardown."""
    opened: list[EventStream] = []

    def opener(daemon: Daemon, **headers: str) -> EventStream:
        stream = EventStream(daemon, headers)
        opened.append(stream)
        assert stream.response.status_code == 200, stream.response.read()
        return stream

    yield opener
    for stream in opened:
        stream.close()


def is_open_frame(item: Frame | Comment) -> bool:
    return isinstance(item, Frame) and item.event == "open"


# The EventBus on its own.


def job_event(number: int) -> dict[str, Any]:
    return {"kind": "job", "action": "updated", "id": f"job-{number}"}


def test_bus_delivers_in_order() -> None:
    async def scenario() -> None:
        bus = EventBus()
        subscription = bus.subscribe()
        assert bus.subscriber_count == 1
        bus.publish("wing", "created", id="w")
        bus.publish("room", "created", id="r", wing="w")
        bus.publish("drawer", "deleted", id="d", wing="w", room="r")
        received = [await subscription.next(1) for _ in range(3)]
        assert received == [
            Event("wing", {"kind": "wing", "action": "created", "id": "w"}),
            Event("room", {"kind": "room", "action": "created", "id": "r", "wing": "w"}),
            Event(
                "drawer",
                {"kind": "drawer", "action": "deleted", "id": "d", "wing": "w", "room": "r"},
            ),
        ]
        assert await subscription.next(0.01) is None
        subscription.cancel()
        assert bus.subscriber_count == 0

    asyncio.run(scenario())


def test_bus_next_returns_none_on_timeout() -> None:
    async def scenario() -> None:
        subscription = EventBus().subscribe()
        started = time.monotonic()
        assert await subscription.next(0.05) is None
        assert time.monotonic() - started >= 0.04
        assert not subscription.closed

    asyncio.run(scenario())


def test_bus_a_full_buffer_is_not_an_overflow() -> None:
    async def scenario() -> None:
        bus = EventBus(buffer_size=4)
        subscription = bus.subscribe()
        for number in range(4):
            bus.publish("job", "updated", id=f"job-{number}")
        received = [await subscription.next(1) for _ in range(4)]
        assert [event.data for event in received] == [job_event(n) for n in range(4)]
        assert await subscription.next(0.01) is None

    asyncio.run(scenario())


def test_bus_overflow_gives_one_resync_then_later_events() -> None:
    async def scenario() -> None:
        bus = EventBus(buffer_size=4)
        subscription = bus.subscribe()
        for number in range(10):
            bus.publish("job", "updated", id=f"job-{number}")
        resync = await subscription.next(1)
        assert resync == Event("resync", {"kind": "resync"})
        assert resync is RESYNC
        # What overflowed is dropped (the reader reads everything again), and only one resync.
        assert await subscription.next(0.01) is None
        bus.publish("job", "updated", id="job-10")
        bus.publish("job", "updated", id="job-11")
        assert (await subscription.next(1)).data == job_event(10)
        assert (await subscription.next(1)).data == job_event(11)
        assert await subscription.next(0.01) is None
        # Falling behind again is announced again.
        for number in range(12, 18):
            bus.publish("job", "updated", id=f"job-{number}")
        assert await subscription.next(1) is RESYNC
        assert await subscription.next(0.01) is None

    asyncio.run(scenario())


def test_bus_a_slow_subscriber_does_not_affect_another() -> None:
    async def scenario() -> None:
        bus = EventBus(buffer_size=4)
        slow, prompt = bus.subscribe(), bus.subscribe()
        for batch in (range(3), range(3, 6)):
            for number in batch:
                bus.publish("job", "updated", id=f"job-{number}")
            for number in batch:
                assert (await prompt.next(1)).data == job_event(number)
        assert await slow.next(1) is RESYNC
        assert await slow.next(0.01) is None
        assert await prompt.next(0.01) is None

    asyncio.run(scenario())


def test_bus_publish_from_another_thread_wakes_a_waiting_next() -> None:
    async def scenario() -> None:
        bus = EventBus()
        subscription = bus.subscribe()
        waiter = asyncio.create_task(subscription.next(60))
        await asyncio.sleep(0)
        assert not waiter.done()
        publisher = threading.Thread(
            target=bus.publish, args=("drawer", "created"), kwargs={"id": "d"}
        )
        publisher.start()
        # Woken by the publish, long before the 60 s timeout.
        event = await asyncio.wait_for(waiter, WAIT)
        publisher.join(WAIT)
        assert event == Event("drawer", {"kind": "drawer", "action": "created", "id": "d"})

    asyncio.run(scenario())


def test_bus_close_ends_every_subscription() -> None:
    async def scenario() -> None:
        bus = EventBus()
        first, second = bus.subscribe(), bus.subscribe()
        waiters = [asyncio.create_task(s.next(60)) for s in (first, second)]
        await asyncio.sleep(0)
        assert not any(waiter.done() for waiter in waiters)
        closer = threading.Thread(target=bus.close)
        closer.start()
        assert await asyncio.wait_for(asyncio.gather(*waiters), WAIT) == [None, None]
        closer.join(WAIT)
        assert bus.closed
        assert first.closed and second.closed
        assert bus.subscriber_count == 0
        # Closed for good: a later next() returns at once, a later subscriber starts closed.
        started = time.monotonic()
        assert await first.next(60) is None
        late = bus.subscribe()
        assert late.closed
        assert await late.next(60) is None
        assert time.monotonic() - started < WAIT
        assert bus.subscriber_count == 0
        bus.publish("wing", "deleted", id="w")
        assert await late.next(0.01) is None

    asyncio.run(scenario())


def test_bus_publish_after_the_subscribers_loop_closed() -> None:
    """A publisher thread never fails because a subscriber's event loop is gone."""
    bus = EventBus()

    async def subscribe() -> None:
        bus.subscribe()

    asyncio.run(subscribe())
    bus.publish("trigger", "updated", id="t")


# The stream end to end on the shared daemon.


def test_stream_headers_and_job_events(daemon: Daemon, open_stream) -> None:
    stream = open_stream(daemon)
    assert stream.response.headers["content-type"].startswith("text/event-stream")
    assert stream.response.headers["cache-control"] == "no-cache"
    assert expect_open(stream).data["keepalive_secs"] == 15

    with daemon.client() as client:
        response = client.post("/api/jobs", json={"type": "demo", "steps": 2, "step_ms": 0})
        assert response.status_code in (200, 201, 202), response.text
        job_id = response.json()["id"]
        stream.wait(
            lambda item: (
                isinstance(item, Frame)
                and item.event == "job"
                and item.data.get("id") == job_id
                and item.data.get("status") == "completed"
            ),
            what=f"job {job_id} to be announced completed",
        )
        assert client.get(f"/api/jobs/{job_id}").json()["status"] == "completed"

    frames = [frame for frame in stream.frames() if frame.data.get("id") == job_id]
    for frame in frames:
        assert frame.event == "job", frame
        assert set(frame.data) == JOB_KEYS, frame.data
        assert frame.data["kind"] == "job"
        assert frame.data["job_kind"] == "demo"
    actions = [frame.data["action"] for frame in frames]
    statuses = [frame.data["status"] for frame in frames]
    assert actions[0] == "created" and statuses[0] == "queued", frames
    assert set(actions[1:]) == {"updated"}, frames
    # Claimed, then at least a checkpoint per step, then done: never back to an earlier state.
    assert statuses[-1] == "completed", statuses
    assert set(statuses[1:-1]) == {"running"}, statuses
    assert statuses.count("running") >= 1 + 2, statuses


def test_stream_palace_events_carry_ids_only(daemon: Daemon, open_stream, wing_name: str) -> None:
    stream = open_stream(daemon)
    expect_open(stream)
    content = f"the secret ingredient is {uuid.uuid4().hex}"
    drawers = f"/api/wings/{wing_name}/rooms/kitchen/drawers"
    with daemon.client() as client:
        response = client.post(drawers, json={"content": content})
        assert response.status_code == 201, response.text
        drawer = response.json()
        ids = {"id": drawer["id"], "wing": drawer["wing"], "room": drawer["room"]}
        created = stream.wait(
            lambda item: isinstance(item, Frame) and item.data.get("id") == ids["id"],
            what="the drawer created frame",
        )
        response = client.delete(f"{drawers}/{ids['id']}")
        assert response.status_code == 200, response.text
        deleted = stream.wait(
            lambda item: (
                isinstance(item, Frame)
                and item.data.get("id") == ids["id"]
                and item.data.get("action") == "deleted"
            ),
            what="the drawer deleted frame",
        )

    mine = [
        frame
        for frame in stream.frames()
        if frame.data.get("id") in ids.values() or frame.data.get("wing") == ids["wing"]
    ]
    assert [(frame.event, frame.data) for frame in mine] == [
        ("wing", {"kind": "wing", "action": "created", "id": ids["wing"]}),
        ("room", {"kind": "room", "action": "created", "id": ids["room"], "wing": ids["wing"]}),
        ("drawer", {"kind": "drawer", "action": "created", **ids}),
        ("drawer", {"kind": "drawer", "action": "deleted", **ids}),
    ]
    assert mine[2] is created and mine[3] is deleted
    for frame in mine:
        assert content not in frame.raw
        assert wing_name not in frame.raw and "kitchen" not in frame.raw, frame.raw


def test_stream_modes_and_methods(daemon: Daemon, open_stream) -> None:
    with daemon.client() as client:
        refused = client.get("/api/events", headers={"X-MemCastle-Mode": "disabled"})
        assert_error(refused, 403, "memcastle::mode::forbidden")
        unknown = client.get("/api/events", headers={"X-MemCastle-Mode": "sideways"})
        assert_error(unknown, 400, "memcastle::input::invalid")
        for method in ("POST", "PUT", "DELETE"):
            response = client.request(method, "/api/events")
            assert_error(response, 405, "memcastle::http::method_not_allowed")
            assert response.headers["allow"] == "GET"

    for mode in ("read_only", "full"):
        stream = open_stream(daemon, **{"X-MemCastle-Mode": mode})
        assert stream.response.headers["content-type"].startswith("text/event-stream")
        expect_open(stream)


# Daemons of their own.


def test_keepalive_comments_when_quiet(fresh_daemon: Daemon, open_stream) -> None:
    fresh_daemon.env["MEMCASTLE_EVENTS_KEEPALIVE_SECS"] = "0.2"
    fresh_daemon.start()
    stream = open_stream(fresh_daemon)
    assert expect_open(stream).data["keepalive_secs"] == 0.2
    for _ in range(3):
        item = stream.next(WAIT)
        assert item == Comment("keep-alive"), item
    # A keep-alive does not hold events back.
    with fresh_daemon.client() as client:
        response = client.post("/api/wings", json={"name": "quiet"})
        assert response.status_code == 201, response.text
        wing_id = response.json()["id"]
    stream.wait(
        lambda item: isinstance(item, Frame) and item.data.get("id") == wing_id,
        what="the wing created frame",
    )
    stream.wait(lambda item: isinstance(item, Comment), what="a keep-alive after the event")


def test_stream_needs_the_token_when_auth_is_on(fresh_daemon: Daemon, open_stream) -> None:
    fresh_daemon.env.update(AUTH_ENV)
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        for headers in ({}, {"Authorization": "Bearer not-the-token-0123456789"}):
            response = client.get("/api/events", headers=headers)
            assert_error(response, 401, "memcastle::auth::unauthorized")
            assert response.headers.get("www-authenticate") == "Bearer"
        # The token is checked before the mode.
        response = client.get("/api/events", headers={"X-MemCastle-Mode": "disabled"})
        assert_error(response, 401, "memcastle::auth::unauthorized")
    stream = open_stream(fresh_daemon, Authorization=f"Bearer {SECRET}")
    expect_open(stream)


def test_streams_end_at_shutdown(fresh_daemon: Daemon, open_stream) -> None:
    fresh_daemon.start()
    streams = [
        open_stream(fresh_daemon),
        open_stream(fresh_daemon, **{"X-MemCastle-Mode": "read_only"}),
    ]
    for stream in streams:
        expect_open(stream)
    started = time.monotonic()
    assert fresh_daemon.stop() == 0, fresh_daemon.log()
    stopped = time.monotonic() - started
    for stream in streams:
        assert stream.ended.wait(WAIT), "the stream did not end at shutdown"
        # Ended by the daemon with a complete response, not cut off at the grace deadline.
        assert stream.error is None, repr(stream.error)
        assert stream.ended_at is not None
        assert stream.ended_at - started < SHUTDOWN_GRACE_SECS, stream.ended_at - started
        with pytest.raises(TimeoutError):
            stream.wait(lambda item: isinstance(item, Frame), what="anything", timeout=0.01)
    # The daemon never waited for the streams (the drain would give up only after the grace).
    assert stopped < SHUTDOWN_GRACE_SECS, (stopped, fresh_daemon.log())
