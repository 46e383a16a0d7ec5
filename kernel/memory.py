"""The embedded engine's memory, given back whenever the daemon has grown by a gibibyte.

The embedded SurrealDB engine keeps every block it reads, and nothing this SDK offers bounds it
(`Store.release_memory`). The daemon gives back what opening a large palace read; what it reads
later stays: an audit reads every drawer (0.22 GiB more at 100,000 drawers; one scan of the
drawer table alone leaves 1.49 GiB at a million), the drawers that searches return add up to as
much again, and the daemon would hold them for its life (docs/benchmarks.md, "A million
drawers"). So once a minute the daemon reads
its resident memory, and when that has grown by `GROWTH` over the least it has been since the
engine last gave its memory back, the engine gives it back again. Queries wait while it runs
(0.14-0.21 s at a million drawers), and a database console session ends with it; a palace small
enough that its engine never grows that much never pauses for it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from kernel.events import EventBus, every
from kernel.logs import fields
from kernel.store import Store

logger = logging.getLogger(__name__)

GROWTH = 1 << 30
EVERY_SECS = 60.0


def resident_bytes() -> int | None:
    """This process's resident memory, or None where the system does not say (not Linux)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


class EngineMemory:
    """Releases the embedded engine's memory when the process has grown by `growth` bytes."""

    def __init__(
        self,
        store: Store,
        events: EventBus,
        *,
        growth: int = GROWTH,
        every_secs: float = EVERY_SECS,
        resident: Callable[[], int | None] = resident_bytes,
    ) -> None:
        self.store = store
        self.events = events
        self.growth = growth
        self.every_secs = every_secs
        self.resident = resident
        self._least: int | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Check once a minute until the event bus closes (at shutdown), for an embedded
        engine on disk on a system that says how much memory the process holds."""
        if not self.store.releases_memory or self.resident() is None or self._thread is not None:
            return
        self._thread = every(
            self.events, self.every_secs, self._check_logged, "memcastle-engine-memory"
        )

    def check(self) -> bool:
        """Release when the process has grown by `growth` over the least it held since the last
        release; True when it released."""
        now = self.resident()
        if now is None:
            return False
        if self._least is None or now < self._least:
            self._least = now
            return False
        if now - self._least < self.growth:
            return False
        self.store.release_memory()
        after = self.resident()
        self._least = after if after is not None else now
        logger.info(
            "the database engine gave back memory it had read",
            extra=fields(before_mib=now >> 20, after_mib=self._least >> 20),
        )
        return True

    def _check_logged(self) -> None:
        try:
            self.check()
        except Exception:
            logger.exception("the database engine's memory could not be given back")
