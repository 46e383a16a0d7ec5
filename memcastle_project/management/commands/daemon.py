"""`memcastle daemon start|stop|restart`: run the daemon in the background, or stop it."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from django.core.management.base import CommandParser

from kernel.config import Config
from kernel.errors import MemCastleError
from memcastle_project.cli import DaemonCommand, process_alive, read_registry

START_TIMEOUT_SECS = 60.0
STOP_TIMEOUT_SECS = 60.0
POLL_SECS = 0.05


class Command(DaemonCommand):
    help = "Start the daemon in the background, stop it, or restart it."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        for name, help in (
            ("start", "spawn `memcastle serve` detached and wait until it serves"),
            ("restart", "stop the daemon (when one runs), then start it again"),
        ):
            action = actions.add(name, help)
            action.add_argument("--bind", metavar="IP", help="address to listen on")
            action.add_argument("--port", metavar="N", help="port to listen on (0 picks one)")
        actions.add("stop", "ask the daemon to shut down gracefully and wait until it has")

    def config(self, options: dict[str, Any], **overrides: object) -> Config:
        return super().config(
            options,
            **{"server.bind": options.get("bind"), "server.port": options.get("port")},
            **overrides,
        )

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "stop":
            self.out.show(self.stop(), lambda out, answer: f"stopped: {answer['endpoint']}")
            return
        running = self.daemon.healthy()
        if running and action == "start":
            raise MemCastleError(
                f"a daemon already answers at {self.daemon.endpoint.url}",
                code="memcastle::client::already_running",
                help="stop it first with `memcastle daemon stop`, or use "
                "`memcastle daemon restart`",
            )
        if running:
            self.stop()
        record = self.start(options)
        # The same line on every stream: scripts read it as well as people.
        verb = "restarted" if running else "started"
        self.out.line(f"{verb}: pid {record['pid']} on http://{record['bind_addr']}")

    def stop(self) -> dict[str, Any]:
        answer = self.daemon.call("POST", "/api/shutdown")
        pid = self.daemon.endpoint.pid
        _wait(
            lambda: not self.daemon.healthy() and not process_alive(pid),
            STOP_TIMEOUT_SECS,
            "the daemon did not stop in time",
        )
        return {**answer, "endpoint": self.daemon.endpoint.url, "pid": pid}

    def start(self, options: dict[str, Any]) -> dict[str, Any]:
        """Spawn `serve` in its own session with its output discarded; its registry file says
        where it listens once it serves."""
        argv = [sys.executable, "-m", "memcastle_project.cli", "serve"]
        for flag in ("config", "palace", "bind", "port"):
            if options.get(flag) is not None:
                argv += [f"--{flag}", str(options[flag])]
        registry = self.daemon.endpoint.registry
        registry.unlink(missing_ok=True)
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

        def served() -> dict[str, Any] | None:
            if child.poll() is not None:
                raise MemCastleError(
                    f"the daemon exited with status {child.returncode} before serving",
                    code="memcastle::server::failed",
                    help="run `memcastle serve` in the foreground to see why",
                )
            record = read_registry(registry)
            return record if record and record.get("pid") == child.pid else None

        return _wait(served, START_TIMEOUT_SECS, "the daemon did not start serving in time")


def _wait(condition: Any, timeout: float, failure: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise MemCastleError(
                failure, code="memcastle::server::failed", help="read the daemon log"
            )
        time.sleep(POLL_SECS)
    return value
