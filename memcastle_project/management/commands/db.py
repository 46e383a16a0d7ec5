"""`memcastle db start|status|stop`: the database console, SurrealDB's protocol onto the palace.

`start` asks the daemon to open it (`POST /api/db`) and prints what to type into SurrealDB
Studio; the daemon, not this command, decides whether a bind is safe.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output, card


class Command(DaemonCommand):
    help = "Open, show or close the database console (SurrealDB's RPC onto the live palace)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        start = actions.add("start", "open the console (or show it, when it is open as asked)")
        start.add_argument("--bind", help="the IP address to listen on ([db] bind: 127.0.0.1)")
        start.add_argument(
            "--port", type=int, help="the port to listen on ([db] port: 8000; 0 for any)"
        )
        start.add_argument(
            "--allow-remote",
            action="store_true",
            default=None,
            help="allow a non-loopback bind (the daemon also requires auth.enabled)",
        )
        start.add_argument(
            "--allowed-origin",
            "--allow-origin",
            action="append",
            dest="allowed_origins",
            metavar="ORIGIN",
            help="a web origin allowed besides this machine's pages (exact; repeatable)",
        )
        actions.add("status", "show whether the console is open, and where")
        actions.add("stop", "close the console and every open connection")

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "start":
            body = {
                name: options[name]
                for name in ("bind", "port", "allow_remote", "allowed_origins")
                if options[name] is not None
            }
            answer = self.daemon.call("POST", "/api/db", body=body)
            if answer["already_running"]:
                self.out.note(f"already running on {answer['url']}")
        elif action == "status":
            answer = self.daemon.call("GET", "/api/db")
        else:
            answer = self.daemon.call("DELETE", "/api/db")
        self.out.show(answer, _console_card)


def _console_card(out: Output, answer: dict[str, Any]) -> str:
    if not answer["running"]:
        return card(out, "Database console", [("running", "no")])
    password = "the API token" if answer["auth_required"] else "anything (auth is off)"
    return card(
        out,
        "Database console",
        [
            ("running", f"yes, since {answer['started_at']}"),
            ("connect to", answer["url"]),
            ("RPC endpoint", f"{answer['url']}/rpc"),
            ("namespace", answer["namespace"]),
            ("database", answer["database"]),
            ("user", f"{answer['user']} (any name)"),
            ("password", password),
            ("reachable from", "other machines" if answer["remote"] else "this machine only"),
        ],
    )
