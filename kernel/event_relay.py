"""Events shared by every process of one remote palace, through the jobs' Redis broker.

Each daemon and `memcastle worker` publishes its events to one Redis channel of the palace, and
each daemon reads the channel into its own streams, its own events included: Redis hands every
subscriber the messages in the one order it took them, so every stream sees the events of a job
in the same order. A process publishes an event before it returns from the write that caused it;
a job's `created` is therefore on the channel before the job's message reaches the broker, and no
process can announce the job running first. (A daemon that offered its own events to its streams
directly could show a job running before another daemon's `created` of it came through.)

Pub/sub keeps nothing for a subscriber that is not connected. Every message carries its process's
sequence number; a daemon that finds one missing (Redis went away, a publish failed) offers its
streams a `resync`, as a stream that falls behind gets one, so that they read the palace again.
While the channel cannot be used, a process's events still reach its own streams directly.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import secrets
import threading
import time
from typing import Any

import redis

from kernel.config import Config
from kernel.events import Event, EventBus

logger = logging.getLogger(__name__)

# Seconds a connection attempt or a command may take: an unreachable broker costs a write at most
# this long, after which publishing pauses (`QUIET_SECS`, or until the subscriber reconnects).
SOCKET_TIMEOUT_SECS = 2.0
QUIET_SECS = 5.0
RECONNECT_FIRST_SECS = 0.5
RECONNECT_MAX_SECS = 10.0
# How long a read of the subscription blocks, which bounds how long `stop()` waits for it.
LISTEN_SECS = 1.0
# How long `start()` waits for the subscription before the daemon serves without it.
SUBSCRIBE_TIMEOUT_SECS = 10.0


def palace_channel(config: Config) -> str:
    """The channel of one palace: every process with the same store shares it, other palaces
    on the same Redis do not, and the name gives nothing of the store's address away."""
    store = config.store
    identity = "\0".join((store.url or "", store.namespace, store.database))
    return "memcastle:events:" + hashlib.sha256(identity.encode()).hexdigest()[:32]


class EventRelay:
    """Carries this process's events to the palace's channel and, with `receive` (a daemon),
    the channel's events to this process's streams."""

    def __init__(self, bus: EventBus, url: str, channel: str, *, receive: bool) -> None:
        self._bus = bus
        self._channel = channel
        self._receive = receive
        self._origin = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._sequence = itertools.count(1)
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT_SECS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECS,
        )
        self._publish_lock = threading.Lock()
        # After a failed publish, writes do not wait for the broker again until this monotonic
        # time, or until the subscriber is connected again: one time-out, not one per write.
        self._quiet_until = 0.0
        self._subscribed = threading.Event()
        self._stopping = threading.Event()
        self._listener: threading.Thread | None = None

    @classmethod
    def for_config(cls, bus: EventBus, config: Config, *, receive: bool) -> EventRelay | None:
        """The relay of a remote palace with a broker; None when the process is alone."""
        broker = config.jobs.broker_url
        if config.store.mode != "remote" or not broker:
            return None
        return cls(bus, broker, palace_channel(config), receive=receive)

    def start(self) -> None:
        if self._receive:
            self._listener = threading.Thread(target=self._listen, name="event-relay", daemon=True)
            self._listener.start()
            if not self._subscribed.wait(SUBSCRIBE_TIMEOUT_SECS):
                logger.warning("the events of the other processes are not reaching this daemon")
        self._bus.forward_to(self._publish)

    def stop(self) -> None:
        self._bus.forward_to(None)
        self._stopping.set()
        if self._listener is not None:
            self._listener.join(timeout=LISTEN_SECS + SOCKET_TIMEOUT_SECS + 1)
        self._client.close()

    # Publishing ---------------------------------------------------------------------------

    def _publish(self, event: Event) -> bool:
        """Send `event` to the channel; True when it comes back to this process's streams
        that way."""
        with self._publish_lock:
            # Numbered even when not sent, so that the others see the gap and resync.
            number = next(self._sequence)
            if time.monotonic() < self._quiet_until:
                return False
            message = {"origin": self._origin, "seq": number, "kind": event.kind}
            message["data"] = dict(event.data)
            try:
                self._client.publish(self._channel, json.dumps(message, default=str))
            except redis.RedisError as exc:
                self._quiet_until = time.monotonic() + QUIET_SECS
                logger.warning(
                    "events are not reaching the other processes of the palace: %s; "
                    "retrying once the broker answers",
                    type(exc).__name__,
                )
                return False
            return self._subscribed.is_set()

    # Receiving ----------------------------------------------------------------------------

    def _listen(self) -> None:
        wait = RECONNECT_FIRST_SECS
        connected_before = False
        while not self._stopping.is_set():
            pubsub = self._client.pubsub()
            try:
                pubsub.subscribe(self._channel)
                if not self._confirmed(pubsub):
                    return
                self._subscribed.set()
                self._quiet_until = 0.0
                if connected_before:
                    # Whatever was published while we were away is gone.
                    self._bus.resync()
                    logger.info("the palace's events reach this daemon again")
                connected_before = True
                wait = RECONNECT_FIRST_SECS
                self._read(pubsub)
            except redis.RedisError as exc:
                self._subscribed.clear()
                logger.warning(
                    "lost the events of the other processes of the palace: %s; reconnecting",
                    type(exc).__name__,
                )
                self._stopping.wait(wait)
                wait = min(wait * 2, RECONNECT_MAX_SECS)
            finally:
                pubsub.close()

    def _confirmed(self, pubsub: Any) -> bool:
        """Wait for Redis to confirm the subscription (nothing is sent to us before it);
        False when the relay stopped first."""
        while not self._stopping.is_set():
            message = pubsub.get_message(timeout=LISTEN_SECS)
            if message is not None and message.get("type") == "subscribe":
                return True
        return False

    def _read(self, pubsub: Any) -> None:
        last: dict[str, int] = {}
        while not self._stopping.is_set():
            message = pubsub.get_message(timeout=LISTEN_SECS)
            if message is None or message.get("type") != "message":
                continue
            payload = json.loads(message["data"])
            origin = payload["origin"]
            number = payload["seq"]
            previous = last.get(origin)
            last[origin] = number
            own = origin == self._origin
            # Our own missing numbers went to our streams directly.
            if not own and previous is not None and number != previous + 1:
                self._bus.resync()
            self._bus.receive(Event(payload["kind"], payload["data"]), foreign=not own)
