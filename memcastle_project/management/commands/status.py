"""`memcastle status`: is the daemon running, and is it healthy? Exit 0, 1 or 3 (cli.md 3)."""

from __future__ import annotations

import sys
from typing import Any

from memcastle_project.cli import DaemonCommand, Endpoint, NotRunning, Output, card

NOT_RUNNING_EXIT = 3


class Command(DaemonCommand):
    help = (
        "Report whether the daemon runs and is healthy. It shows version, pid, uptime, "
        "endpoint, palace, datastore health, migrations, drawers, jobs, mode and auth; exit 0 "
        "healthy, 1 degraded or refused, 3 not running."
    )

    def run(self, options: dict[str, Any]) -> None:
        endpoint = self.daemon.endpoint
        located = {
            "endpoint": endpoint.url,
            "endpoint_source": endpoint.source,
            "registry": str(endpoint.registry),
            "registry_state": _registry_state(endpoint),
        }
        try:
            report = self.daemon.call("GET", "/api/status")
        except NotRunning:
            self.out.show({"running": False, **located}, _stopped)
            sys.exit(NOT_RUNNING_EXIT)
        report = {"running": True, **located, **report}
        self.out.show(report, _report)
        if not _healthy(report):
            sys.exit(1)


def _registry_state(endpoint: Endpoint) -> str:
    if endpoint.stale:
        return "stale"
    return "live" if endpoint.source == "registry" else "absent"


def _healthy(report: dict[str, Any]) -> bool:
    migrations = report.get("migrations") or {}
    return bool(report["datastore"].get("healthy")) and not migrations.get("pending")


def _stopped(out: Output, report: dict[str, Any]) -> str:
    lines = [f"MemCastle is {out.paint('not running', 'red')} (looked at {report['endpoint']})"]
    if report["registry_state"] == "stale":
        lines.append(f"registry file {report['registry']} is stale (its process is gone)")
    lines.append(out.dim("start it with `memcastle daemon start`"))
    return "\n".join(lines)


def _report(out: Output, report: dict[str, Any]) -> str:
    migrations = report.get("migrations") or {}
    datastore = report["datastore"]
    health = (
        out.paint("healthy", "green")
        if datastore.get("healthy")
        else out.paint(f"unhealthy: {datastore.get('error', '')}", "red")
    )
    jobs = report.get("jobs") or {}
    return card(
        out,
        f"MemCastle {report['version']} "
        + (out.paint("running", "green") if _healthy(report) else out.paint("degraded", "yellow")),
        [
            ("pid", report["pid"]),
            ("uptime", f"{report['uptime_secs']}s"),
            ("endpoint", f"{report['endpoint']} ({report['endpoint_source']})"),
            ("mcp", report.get("mcp_url")),
            ("palace", report["palace"]),
            ("datastore", health),
            (
                "migrations",
                f"{migrations['applied']}/{migrations['available']}" if migrations else None,
            ),
            ("drawers", report.get("drawers")),
            ("jobs", ", ".join(f"{out.status(k)} {v}" for k, v in jobs.items() if v) or "none"),
            ("mode", report["mode"]),
            ("auth", "enabled" if report["auth_enabled"] else "disabled"),
        ],
    )
