"""Change notices for `GET /api/events`: what changed, never what it holds.

Services publish after their write is saved, from whatever thread they run on (a request's,
a job worker's). Each subscriber has a bounded buffer filled at publish time; a subscriber that
falls behind loses its buffer and gets one `resync` instead, so a slow reader costs a bounded
amount of memory and learns that it must read everything again.

On a remote palace shared by several processes, `kernel.event_relay` forwards what is published
here to the others and hands their events to `receive`.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BUFFER_SIZE = 1024
KINDS = ("job", "drawer", "wing", "room", "entity", "trigger")
ACTIONS = ("created", "updated", "deleted")


@dataclass(frozen=True)
class Event:
    """One frame: `kind` names the SSE event, `data` is its JSON object."""

    kind: str
    data: Mapping[str, Any]


RESYNC = Event("resync", {"kind": "resync"})


class Subscription:
    """One stream's buffer. `next()` is awaited on the event loop that created it."""

    def __init__(
        self, bus: EventBus, loop: asyncio.AbstractEventLoop, size: int, *, foreign: bool
    ) -> None:
        self._bus = bus
        self.foreign = foreign
        self._loop = loop
        self._size = size
        self._buffer: collections.deque[Event] = collections.deque()
        self._lock = threading.Lock()
        self._ready = asyncio.Event()
        self._lagged = False
        self.closed = False

    def _offer(self, event: Event) -> None:
        with self._lock:
            if self._lagged:
                return
            if len(self._buffer) >= self._size:
                self._buffer.clear()
                self._buffer.append(RESYNC)
                # Everything up to the reader's next look is dropped: after a resync it reads
                # the palace again, which already includes those changes.
                self._lagged = True
            else:
                self._buffer.append(event)
        self._wake()

    def _close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._ready.set)

    async def next(self, timeout: float) -> Event | None:
        """The next event; None when `timeout` passed first or the bus closed."""
        while True:
            with self._lock:
                if self._buffer:
                    event = self._buffer.popleft()
                    if event is RESYNC:
                        self._lagged = False
                    return event
                self._ready.clear()
            if self.closed:
                return None
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None

    def cancel(self) -> None:
        self._bus.unsubscribe(self)


class EventBus:
    """Fan-out of change notices to the open event streams of this daemon."""

    def __init__(self, buffer_size: int = BUFFER_SIZE) -> None:
        self._buffer_size = buffer_size
        self._subscribers: set[Subscription] = set()
        self._lock = threading.Lock()
        self._forward: Callable[[Event], bool] | None = None
        self.closed = False

    def subscribe(self, *, foreign: bool = True) -> Subscription:
        """A stream of this bus's events; with `foreign`, also of the other processes' events
        that the relay receives (the sweeps of this process want only its own writes)."""
        subscription = Subscription(
            self, asyncio.get_running_loop(), self._buffer_size, foreign=foreign
        )
        with self._lock:
            if self.closed:
                subscription._close()
            else:
                self._subscribers.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    def publish(self, kind: str, action: str, **identifiers: Any) -> None:
        """Announce a change. Pass identifiers only: ids, a job's kind and status."""
        assert kind in KINDS and action in ACTIONS, (kind, action)
        event = Event(kind, {"kind": kind, "action": action, **identifiers})
        forward = self._forward
        if forward is not None and forward(event):
            return
        self._offer(event, foreign=False)

    def forward_to(self, forward: Callable[[Event], bool] | None) -> None:
        """Hand every event published here to `forward` instead. When it answers True the
        event comes back through `receive`, in the order of every process's events; when it
        answers False this process's streams are offered it at once."""
        self._forward = forward

    def receive(self, event: Event, *, foreign: bool) -> None:
        """Offer an event that came back through the relay: this process's own to every
        stream, another process's to the streams that take them."""
        self._offer(event, foreign=foreign)

    def resync(self) -> None:
        """Events were lost on the way: every stream must read the palace again."""
        self._offer(RESYNC, foreign=False)

    def _offer(self, event: Event, *, foreign: bool) -> None:
        with self._lock:
            subscribers = [each for each in self._subscribers if each.foreign or not foreign]
        for subscription in subscribers:
            subscription._offer(event)

    def close(self) -> None:
        """End every stream (daemon shutdown); later subscribers are closed at once."""
        with self._lock:
            self.closed = True
            subscribers = list(self._subscribers)
            self._subscribers.clear()
        for subscription in subscribers:
            subscription._close()

    @property
    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscribers)


def every(bus: EventBus, seconds: float, work: Callable[[], None], name: str) -> threading.Thread:
    """A thread that runs `work` now and then every `seconds` seconds until `bus` closes (at
    shutdown), reading the bus only to learn that it closed; started."""

    async def follow() -> None:
        subscription = bus.subscribe(foreign=False)
        loop = asyncio.get_running_loop()
        try:
            while True:
                await asyncio.to_thread(work)
                due = loop.time() + seconds
                while (left := due - loop.time()) > 0:
                    await subscription.next(left)
                    if subscription.closed:
                        return
        finally:
            subscription.cancel()

    thread = threading.Thread(target=lambda: asyncio.run(follow()), name=name, daemon=True)
    thread.start()
    return thread
