"""Health, status and shutdown: what a supervisor and an operator ask of the daemon itself."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

from jobs.services import JobService
from kernel import __version__
from kernel.config import Config
from kernel.context import RequestContext
from kernel.errors import MemCastleError
from kernel.store import Store
from memcastle_project.shapes import Health, Shutdown, StatusReport
from palace.embeddings.service import EmbeddingService
from palace.hierarchy import HierarchyService
from palace.search.indexes import SearchIndexes


def health() -> dict[str, Any]:
    """Cheap and always open: it touches nothing, so a supervisor never restarts a daemon
    that would recover on its own."""
    return Health.render({"status": "ok"})


class SystemService:
    """The daemon's report on itself, and the way to stop it."""

    def __init__(
        self,
        config: Config,
        store: Store,
        hierarchy: HierarchyService,
        jobs: JobService,
        indexes: SearchIndexes,
        embeddings: EmbeddingService,
        bind_addr: str,
    ) -> None:
        self.config = config
        self.store = store
        self.hierarchy = hierarchy
        self.jobs = jobs
        self.indexes = indexes
        self.embeddings = embeddings
        self.bind_addr = bind_addr
        self.started_at = dt.datetime.now(dt.UTC)
        self.pid = os.getpid()
        # Set by the server once it runs: stops it gracefully.
        self.request_shutdown: Callable[[], None] = lambda: None

    def status(self, ctx: RequestContext) -> dict[str, Any]:
        """The status report. It only reports the request's mode, so it is never refused by it;
        an unhealthy datastore is reported here, inside a 200."""
        healthy, error = self.store.healthy()
        migrations: dict[str, int] | None = None
        drawers: int | None = None
        jobs: dict[str, int] | None = None
        if healthy:
            try:
                migrations = self.store.migration_state().as_dict()
                drawers = self.hierarchy.drawer_total()
                jobs = self.jobs.counts()
            except MemCastleError as exc:
                healthy, error = False, exc.message
        now = dt.datetime.now(dt.UTC)
        datastore: dict[str, Any] = {"healthy": healthy}
        if error:
            datastore["error"] = error
        default = self.embeddings.default
        return StatusReport.render(
            {
                "version": __version__,
                "pid": self.pid,
                "started_at": self.started_at,
                "uptime_secs": int((now - self.started_at).total_seconds()),
                "bind_addr": self.bind_addr,
                "mcp_url": f"http://{self.bind_addr}/mcp",
                "palace": str(self.config.palace_path),
                "store": {"mode": self.store.mode},
                "datastore": datastore,
                "migrations": migrations,
                "drawers": drawers,
                "jobs": jobs,
                "search": self.indexes.status(),
                "embeddings": {
                    "default_profile": default.name if default else None,
                    "profiles": {
                        name: profile.provenance()
                        for name, profile in self.embeddings.profiles.items()
                    },
                },
                "auth_enabled": self.config.auth_enabled,
                "mode": ctx.mode.value,
            }
        )

    def shutdown(self) -> dict[str, Any]:
        """Never gated by a memory mode; the daemon drains and exits with status 0."""
        self.request_shutdown()
        return Shutdown.render({"shutting_down": True})
