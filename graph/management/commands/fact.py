"""`memcastle fact history ID`: every assertion linked to a fact, each with its lifecycle."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from graph.management.commands.entity import relationships
from memcastle_project.cli import DaemonCommand


class Command(DaemonCommand):
    help = "A fact's history: the assertions linked to a relationship, with their lifecycle."

    def add_arguments(self, parser: CommandParser) -> None:
        history = self.subcommands(parser).add("history", "every assertion of the fact")
        history.add_argument("id", metavar="RELATIONSHIP_ID", help="any assertion's UUID")
        history.add_argument("--as-of", metavar="WHEN", help="the lifecycle at that instant")

    def run(self, options: dict[str, Any]) -> None:
        answer = self.daemon.call(
            "GET",
            f"/api/relationships/{options['id']}/history",
            params={"as_of": options["as_of"]},
        )
        self.out.show(answer, relationships)
