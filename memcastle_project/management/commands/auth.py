"""`memcastle auth generate|revoke`: the daemon's generated API token.

The token is printed on stdout and nowhere else (never as JSON), the instructions on stderr.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, confirm


class Command(DaemonCommand):
    help = "Generate the API token (replacing the previous one), or revoke it."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        for name, help in (
            ("generate", "make a new token; it is shown once and replaces the previous one"),
            ("revoke", "revoke the generated token (a configured auth.token is unaffected)"),
        ):
            actions.add(name, help).add_argument(
                "-y", "--yes", action="store_true", help="do not ask"
            )

    def run(self, options: dict[str, Any]) -> None:
        if options["action"] == "generate":
            confirm("Generate a new API token? The previous one stops working.", yes=options["yes"])
            answer = self.daemon.call("POST", "/api/auth/token")
            self.out.line(answer["token"])
            self.out.note(
                "This token is shown once. Give it to clients as MEMCASTLE_AUTH_TOKEN "
                "(Authorization: Bearer); enable auth with auth.enabled = true."
            )
        else:
            confirm("Revoke the generated API token?", yes=options["yes"])
            self.out.write_json(self.daemon.call("DELETE", "/api/auth/token"))
