"""`memcastle room list|show|create|delete` (alias `rooms`)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import Output, table
from palace.management.commands import wing
from palace.management.commands.wing import palace_path


class Command(wing.Command):
    help = "List, show, create or delete rooms (a room is WING/ROOM)."

    depth = 2
    noun = "room"

    def add_list(self, parser: CommandParser) -> None:
        parser.add_argument("--wing", help="only this wing's rooms (every wing's when absent)")

    def listing(self, options: dict[str, Any]) -> tuple[Any, Any]:
        """One wing's rooms as the daemon gives them; without --wing, `{"wings": [...]}` holds
        every wing's."""
        if options["wing"]:
            palace_path(options["wing"], 1)
            return self.daemon.call("GET", wing.url(options["wing"]) + "/rooms"), _rooms
        wings = self.daemon.call("GET", "/api/wings")["wings"]
        each = [self.daemon.call("GET", wing.url(found["id"]) + "/rooms") for found in wings]
        return {"wings": each}, _rooms


def _rooms(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [
            group["wing"]["name"],
            room["name"],
            str(room["counts"]["drawers"]),
            room.get("description") or "",
        ]
        for group in answer.get("wings", [answer])
        for room in group["rooms"]
    ]
    return table(["WING", "ROOM", "DRAWERS", "DESCRIPTION"], rows, empty="(no rooms)")
