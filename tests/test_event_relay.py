"""`kernel.event_relay`: the events of a remote palace's processes, shared through Redis.

Each test runs its own `redis-server` (stopped by its pid) and relays in this process, each on
its own `EventBus`, as two daemons and a worker would hold them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from kernel.event_relay import EventRelay
from kernel.events import Event, EventBus, Subscription
from tests.support.redis_server import redis_server

CHANNEL = "memcastle:events:test"
WAIT = 10.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as url:
        yield url


@pytest.fixture
def relays() -> Iterator[list[EventRelay]]:
    started: list[EventRelay] = []
    yield started
    for relay in started:
        relay.stop()


def relay(
    relays: list[EventRelay], url: str, *, receive: bool = True
) -> tuple[EventBus, EventRelay]:
    bus = EventBus()
    started = EventRelay(bus, url, CHANNEL, receive=receive)
    started.start()
    relays.append(started)
    return bus, started


async def read(subscription: Subscription, count: int) -> list[Event]:
    events = []
    for _ in range(count):
        event = await subscription.next(WAIT)
        assert event is not None, f"only {len(events)} of {count} events came: {events}"
        events.append(event)
    return events


def ids(events: list[Event]) -> list[object]:
    return [event.data.get("id", event.kind) for event in events]


def test_every_daemon_sees_every_process_in_one_order(
    broker: str, relays: list[EventRelay]
) -> None:
    first, _ = relay(relays, broker)
    second, _ = relay(relays, broker)
    worker, _ = relay(relays, broker, receive=False)

    async def scenario() -> tuple[list[Event], list[Event]]:
        streams = [first.subscribe(), second.subscribe()]
        for number in range(30):
            (first, second, worker)[number % 3].publish("job", "updated", id=number)
        return await read(streams[0], 30), await read(streams[1], 30)

    seen_first, seen_second = asyncio.run(scenario())
    assert ids(seen_first) == ids(seen_second)
    assert sorted(ids(seen_first)) == list(range(30))  # type: ignore[type-var]


def test_another_processes_events_skip_the_sweeps_own_writes_reach_them(
    broker: str, relays: list[EventRelay]
) -> None:
    daemon, _ = relay(relays, broker)
    other, _ = relay(relays, broker)

    async def scenario() -> list[Event]:
        sweep = daemon.subscribe(foreign=False)
        other.publish("drawer", "created", id="theirs")
        daemon.publish("drawer", "created", id="ours")
        return await read(sweep, 1)

    assert ids(asyncio.run(scenario())) == ["ours"]


def test_a_missing_message_makes_the_streams_read_again(
    broker: str, relays: list[EventRelay]
) -> None:
    daemon, _ = relay(relays, broker)
    client = redis.Redis.from_url(broker)

    def send(seq: int) -> None:
        message = {"origin": "elsewhere", "seq": seq, "kind": "job"}
        message["data"] = {"kind": "job", "action": "updated", "id": seq}
        client.publish(CHANNEL, json.dumps(message))

    async def scenario() -> list[Event]:
        stream = daemon.subscribe()
        send(1)
        send(2)
        send(4)  # 3 was lost
        return await read(stream, 4)

    try:
        assert ids(asyncio.run(scenario())) == [1, 2, "resync", 4]
    finally:
        client.close()


def test_without_the_broker_a_daemons_own_events_still_reach_its_streams(
    tmp_path: Path, relays: list[EventRelay]
) -> None:
    with redis_server(tmp_path / "redis") as url:
        daemon, _ = relay(relays, url)
    # The broker is gone: the first publish times out, and every event goes to the streams
    # directly.

    async def scenario() -> list[Event]:
        stream = daemon.subscribe()
        for number in range(3):
            daemon.publish("job", "updated", id=number)
        return await read(stream, 3)

    assert ids(asyncio.run(scenario())) == [0, 1, 2]
