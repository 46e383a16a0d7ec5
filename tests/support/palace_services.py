"""The palace's services on one store, built as the composition root builds them, for the tests
that call them in this process."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from kernel.clock import utc_now
from kernel.config import DedupConfig
from kernel.events import EventBus
from kernel.store import Store
from palace.filing import FilingService
from palace.hierarchy import HierarchyService
from palace.repositories.filing import FilingRepository
from palace.repositories.hierarchy import HierarchyRepository
from palace.repositories.revisions import RevisionRepository
from palace.revisions import RevisionService


@dataclass(frozen=True)
class Palace:
    """The palace's three services and the store they share."""

    store: Store
    hierarchy: HierarchyService
    filing: FilingService
    revisions: RevisionService


def build(
    store: Store,
    *,
    clock: Callable[[], dt.datetime] = utc_now,
    dedup: DedupConfig | None = None,
    events: EventBus | None = None,
) -> Palace:
    """The three services sharing `store`, `clock` and `events` (none: no subscribers)."""
    events = events or EventBus()
    hierarchy = HierarchyService(HierarchyRepository(store), events, clock)
    filing = FilingService(FilingRepository(store), hierarchy, events, clock, dedup)
    revisions = RevisionService(RevisionRepository(store), hierarchy, filing, events, clock)
    return Palace(store, hierarchy, filing, revisions)
