"""`memcastle wing list|show|create|delete` (alias `wings`), and what the room and drawer
commands share with it: palace paths and REST paths."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandParser

from kernel.validation import is_uuid
from memcastle_project.cli import DaemonCommand, Output, card, confirm, table
from palace.names import PathInvalid, check_drawer_name, check_room_name, check_wing_name


def palace_path(text: str, depth: int, *, new: bool = False) -> list[str]:
    """`wing`, `wing/room` or `wing/room/drawer` (a drawer name may hold `/`), checked before
    the daemon is asked. An existing wing, room or drawer may be named by its UUID; a new one
    (`new`) must have a valid name."""
    parts = text.split("/", depth - 1)
    if len(parts) != depth:
        shape = "/".join(("WING", "ROOM", "DRAWER")[:depth])
        raise PathInvalid(f"{text!r} is not a {shape} path")
    checks = (check_wing_name, check_room_name, check_drawer_name)
    for part, check in zip(parts, checks, strict=False):
        if not (is_uuid(part) and not new):
            check(part)
    return parts


def url(*parts: str) -> str:
    """The REST path of a wing, room or drawer (a drawer's name keeps its `/`)."""
    wing, *rest = parts
    path = f"/api/wings/{quote(wing, safe='')}"
    if rest:
        path += f"/rooms/{quote(rest[0], safe='')}"
    if len(rest) > 1:
        path += f"/drawers/{quote(rest[1], safe='/')}"
    return path


def deleted(out: Output, answer: dict[str, Any]) -> str:
    return f"Deleted {answer['wings']} wings, {answer['rooms']} rooms, {answer['drawers']} drawers"


def shown(out: Output, answer: dict[str, Any]) -> str:
    """A wing or room: its name, id, description and counts."""
    counts = ", ".join(f"{value} {key}" for key, value in answer["counts"].items())
    created = "" if answer.get("created", True) else " (already there)"
    return card(
        out,
        f"{answer['name']}{created}",
        [
            ("id", answer["id"]),
            ("description", answer.get("description")),
            ("counts", counts),
            ("created", answer["created_at"]),
        ],
    )


class Command(DaemonCommand):
    help = "List, show, create or delete wings."

    depth = 1
    noun = "wing"

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        self.add_list(actions.add("list", f"every {self.noun} with its counts"))
        shape = "/".join(("WING", "ROOM")[: self.depth])
        named = f"the {self.noun}'s name or UUID" + (", in its wing" if self.depth > 1 else "")
        actions.add("show", f"one {self.noun}").add_argument("path", metavar=shape, help=named)
        create = actions.add("create", f"create a {self.noun} (nothing happens if it exists)")
        create.add_argument("path", metavar=shape, help=f"the new {self.noun}'s name")
        create.add_argument("--description", help="what it holds")
        delete = actions.add("delete", f"delete a {self.noun} and all it holds (asks first)")
        delete.add_argument("path", metavar=shape, help=named)
        delete.add_argument("-y", "--yes", action="store_true", help="do not ask")

    def add_list(self, parser: CommandParser) -> None:
        """`wing list` takes no options."""

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            self.out.show(*self.listing(options))
            return
        parts = palace_path(options["path"], self.depth, new=action == "create")
        if action == "show":
            self.out.show(self.daemon.call("GET", url(*parts)), shown)
        elif action == "create":
            body = {"name": parts[-1], "description": options["description"]}
            path = url(*parts[:-1]) + "/rooms" if self.depth > 1 else "/api/wings"
            answer = self.daemon.call(
                "POST", path, body={k: v for k, v in body.items() if v is not None}
            )
            self.out.show(answer, shown)
        else:
            confirm(
                f"Delete {self.noun} {options['path']} with everything in it?", yes=options["yes"]
            )
            self.out.show(self.daemon.call("DELETE", url(*parts)), deleted)

    def listing(self, options: dict[str, Any]) -> tuple[Any, Any]:
        return self.daemon.call("GET", "/api/wings"), _wings


def _wings(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [
            wing["name"],
            str(wing["counts"]["rooms"]),
            str(wing["counts"]["drawers"]),
            wing.get("description") or "",
        ]
        for wing in answer["wings"]
    ]
    return table(["WING", "ROOMS", "DRAWERS", "DESCRIPTION"], rows, empty="(no wings)")
