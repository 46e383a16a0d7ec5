"""Finished jobs are kept for `jobs.retention_days`, then removed with their records.

The daemon prunes once when it starts and then once a day, on a thread of its own that ends when
the event bus closes (at shutdown). `memcastle job prune` and `DELETE /api/jobs` do the same on
demand. What a job filed (drawers, facts, documents) is memory and stays; only the job's own
record goes, with the rows it wrote for itself.
"""

from __future__ import annotations

import logging
import threading

from jobs.services import JobService
from kernel.context import RequestContext
from kernel.errors import MemCastleError
from kernel.events import EventBus, every
from kernel.logs import fields

logger = logging.getLogger(__name__)

EVERY_SECS = 24 * 3600


class JobRetention:
    def __init__(self, jobs: JobService, events: EventBus, retention_days: int) -> None:
        self.jobs = jobs
        self.events = events
        self.retention_days = retention_days
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Prune now and once a day, unless jobs are kept forever (`retention_days` 0)."""
        if self.retention_days == 0 or self._thread is not None:
            return
        self._thread = every(self.events, EVERY_SECS, self.prune, "memcastle-job-retention")

    def prune(self) -> None:
        try:
            self.jobs.prune(
                RequestContext.build(requested_by="auto"), {"older_than_days": self.retention_days}
            )
        except MemCastleError as exc:
            logger.warning(
                "could not remove old jobs; tries again tomorrow", extra=fields(error=exc.code)
            )
