"""A small reader of `GET /api/events`, the server-sent event stream: each event a `Frame`,
each comment line a `Comment`, read on a thread so that a test waits for what it expects with a
deadline instead of blocking on the socket."""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.daemon import Daemon

WAIT = 15.0


@dataclass(frozen=True)
class Frame:
    """One dispatched event: its name, its data parsed as JSON, and the data text as sent."""

    event: str
    data: Any
    raw: str


@dataclass(frozen=True)
class Comment:
    """A comment line (`: text`), without the colon and the one space after it."""

    text: str


class EventStream:
    """An open `GET /api/events`, read line by line on a background thread into a queue.

    Everything read is also kept in `history`, in arrival order. `ended` is set when the
    response body ends; `error` then holds what ended it, if it did not end cleanly.
    """

    def __init__(self, daemon: Daemon, headers: dict[str, str] | None = None) -> None:
        self.client = daemon.client(**(headers or {}))
        self._context = self.client.stream("GET", "/api/events")
        self.response = self._context.__enter__()
        self.items: queue.Queue[Frame | Comment] = queue.Queue()
        self.history: list[Frame | Comment] = []
        self.ended = threading.Event()
        self.ended_at: float | None = None
        self.error: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._read, name="sse-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        event: str | None = None
        data: list[str] = []
        try:
            for line in self.response.iter_lines():
                if line == "":
                    if data:
                        text = "\n".join(data)
                        self.items.put(Frame(event or "message", json.loads(text), text))
                    event, data = None, []
                elif line.startswith(":"):
                    self.items.put(Comment(line[1:].removeprefix(" ")))
                else:
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)
        except BaseException as error:  # reported to the test, never swallowed
            if not self._closing:
                self.error = error
        finally:
            self.ended_at = time.monotonic()
            self.ended.set()

    def next(self, timeout: float = WAIT) -> Frame | Comment:
        try:
            item = self.items.get(timeout=timeout)
        except queue.Empty:
            detail = f" (the stream ended: {self.error!r})" if self.ended.is_set() else ""
            raise TimeoutError(f"no frame within {timeout}s{detail}") from None
        self.history.append(item)
        return item

    def wait(
        self, match: Callable[[Frame | Comment], bool], *, what: str, timeout: float = WAIT
    ) -> Frame | Comment:
        """Read until an item matches; the items passed over stay in `history`."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            try:
                item = self.next(remaining)
            except TimeoutError as error:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}") from error
            if match(item):
                return item

    def frames(self, event: str | None = None, **data: Any) -> list[Frame]:
        """The frames read so far, optionally only those named `event` whose data has `data`."""
        return [
            item
            for item in self.history
            if isinstance(item, Frame)
            and (event is None or item.event == event)
            and all(item.data.get(key) == value for key, value in data.items())
        ]

    def close(self) -> None:
        """Stop reading: shut the socket down (which wakes a blocked read), then close."""
        self._closing = True
        network = self.response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the SSE reader thread did not stop"
        try:
            self._context.__exit__(None, None, None)
        finally:
            self.client.close()


def expect_open(stream: EventStream) -> Frame:
    """The first frame, which must be `open`."""
    first = stream.next()
    assert isinstance(first, Frame), first
    assert first.event == "open", first
    assert set(first.data) == {"kind", "keepalive_secs"}, first.data
    assert first.data["kind"] == "open"
    return first
