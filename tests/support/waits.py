"""Waiting on a condition with a deadline.

Every wait in the tests and the benchmarks polls what it waits for and gives up at a deadline
with a message naming it; none sleeps on a guess of how long something takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    condition: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.02
) -> Any:
    """The first truthy value `condition` returns, polled every `interval` seconds.

    A wait on something in this process (a worker thread) polls more often than one on a daemon,
    so the interval is the caller's.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
