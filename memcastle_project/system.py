"""Health, status and shutdown: what a supervisor and an operator ask of the daemon itself."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel import __version__
from kernel.context import RequestContext
from kernel.errors import MemCastleError
from memcastle_project.runtime import Runtime


def health() -> dict[str, str]:
    """Cheap and always open: it touches nothing, so a supervisor never restarts a daemon
    that would recover on its own."""
    return {"status": "ok"}


def status(daemon: Runtime, ctx: RequestContext) -> dict[str, Any]:
    """The status report. It only reports the request's mode, so it is never refused by it;
    an unhealthy datastore is reported here, inside a 200."""
    healthy, error = daemon.store.healthy()
    migrations: dict[str, int] | None = None
    drawers: int | None = None
    jobs: dict[str, int] | None = None
    if healthy:
        try:
            migrations = daemon.store.migration_state().as_dict()
            drawers = daemon.palace.repository.drawer_total()
            jobs = daemon.jobs.counts()
        except MemCastleError as exc:
            healthy, error = False, exc.message
    now = dt.datetime.now(dt.UTC)
    datastore: dict[str, Any] = {"healthy": healthy}
    if error:
        datastore["error"] = error
    return {
        "version": __version__,
        "pid": daemon.pid,
        "started_at": daemon.started_at,
        "uptime_secs": int((now - daemon.started_at).total_seconds()),
        "bind_addr": daemon.bind_addr,
        "mcp_url": f"http://{daemon.bind_addr}/mcp",
        "palace": str(daemon.config.palace_path),
        "store": {"mode": daemon.store.mode},
        "datastore": datastore,
        "migrations": migrations,
        "drawers": drawers,
        "jobs": jobs,
        "search": daemon.indexes.status(),
        "embeddings": {
            "default_profile": daemon.embeddings.default.name
            if daemon.embeddings.default
            else None,
            "profiles": {
                name: profile.provenance() for name, profile in daemon.embeddings.profiles.items()
            },
        },
        "auth_enabled": daemon.config.auth_enabled,
        "mode": ctx.mode.value,
    }


def shutdown(daemon: Runtime) -> dict[str, bool]:
    """Never gated by a memory mode; the daemon drains and exits with status 0."""
    daemon.request_shutdown()
    return {"shutting_down": True}
