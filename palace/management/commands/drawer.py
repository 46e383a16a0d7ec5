"""`memcastle drawer ...`: list, show, create, supersede, delete drawers, their history, likely
copies and entity mentions (alias `drawers`). A drawer is WING/ROOM/DRAWER, its name or UUID."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output, card, confirm, read_text, table
from palace.management.commands.wing import deleted, palace_path, url

PATH = "WING/ROOM/DRAWER"
PATH_HELP = "the drawer: its name (which may hold `/`) or UUID, within its wing and room"


class Command(DaemonCommand):
    help = "List, show, create, supersede or delete drawers; their history, copies, mentions."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        listing = actions.add("list", "a room's drawers (previews, never the content)")
        listing.add_argument("--room", required=True, metavar="WING/ROOM", help="the room")
        listing.add_argument("--limit", type=int, help="drawers at most (50, at most 200)")
        listing.add_argument("--offset", type=int, help="drawers to skip")
        actions.add("show", "one drawer, with its content").add_argument(
            "path", metavar=PATH, help=PATH_HELP
        )
        create = actions.add("create", "file a named drawer (its wing and room when missing)")
        create.add_argument("path", metavar="WING/ROOM/NAME", help="where, and the new name")
        self.add_content(create)
        supersede = actions.add("supersede", "replace a drawer's content, or invalidate it")
        supersede.add_argument("path", metavar=PATH, help=PATH_HELP)
        self.add_content(supersede).add_argument(
            "--invalidate", action="store_true", help="close it without a replacement"
        )
        for name, help in (
            ("history", "every version of the drawer, oldest first"),
            ("duplicates", "the drawers linked to it as likely copies"),
        ):
            actions.add(name, help).add_argument("path", metavar=PATH, help=PATH_HELP)
        mention = actions.add("mention", "link the drawer to the entity a name resolves to")
        mention.add_argument("path", metavar=PATH, help=PATH_HELP)
        mention.add_argument("--name", required=True, help="the name as the drawer writes it")
        mention.add_argument("--kind", required=True, help="person, project, tool, ...")
        delete = actions.add("delete", "delete one drawer (asks first)")
        delete.add_argument("path", metavar=PATH, help=PATH_HELP)
        delete.add_argument("-y", "--yes", action="store_true", help="do not ask")

    @staticmethod
    def add_content(parser: CommandParser) -> Any:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--content", help="the text, verbatim")
        group.add_argument("--file", metavar="PATH", help="read the text from a file (- stdin)")
        return group

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            room = palace_path(options["room"], 2)
            params = {"limit": options["limit"], "offset": options["offset"]}
            self.out.show(self.daemon.call("GET", url(*room) + "/drawers", params=params), _list)
            return
        parts = palace_path(options["path"], 3, new=action == "create")
        if action == "create":
            body = {"name": parts[2], "content": _content(options)}
            answer = self.daemon.call("POST", url(*parts[:2]) + "/drawers", body=body)
            self.out.show(answer, _drawer)
        elif action == "delete":
            confirm(f"Delete drawer {options['path']}?", yes=options["yes"])
            self.out.show(self.daemon.call("DELETE", url(*parts)), deleted)
        elif action == "show":
            self.out.show(self.daemon.call("GET", url(*parts)), _drawer)
        else:
            self.by_id(action, self.daemon.call("GET", url(*parts))["id"], options)

    def by_id(self, action: str, drawer_id: str, options: dict[str, Any]) -> None:
        """The routes that take the drawer's id. Supersede and mention always print JSON."""
        if action == "supersede":
            body = {} if options["invalidate"] else {"content": _content(options)}
            self.out.write_json(
                self.daemon.call("POST", f"/api/drawers/{drawer_id}/supersede", body=body)
            )
        elif action == "mention":
            body = {"name": options["name"], "kind": options["kind"]}
            self.out.write_json(
                self.daemon.call("POST", f"/api/drawers/{drawer_id}/mentions", body=body)
            )
        elif action == "history":
            self.out.show(self.daemon.call("GET", f"/api/drawers/{drawer_id}/history"), _history)
        else:
            self.out.show(
                self.daemon.call("GET", f"/api/drawers/{drawer_id}/duplicates"), _duplicates
            )


def _content(options: dict[str, Any]) -> str:
    """--content or --file: the parser requires exactly one of them."""
    if options["content"] is not None:
        return options["content"]
    return read_text(options["file"])


def _list(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [
            drawer.get("name") or out.dim(drawer["id"]),
            str(drawer["length"]),
            drawer["valid_from"],
            " ".join(drawer["preview"].split())[:60],
        ]
        for drawer in answer["drawers"]
    ]
    shown = table(["DRAWER", "CHARS", "VALID FROM", "PREVIEW"], rows, empty="(no drawers)")
    return f"{shown}\n{out.dim(f'{len(rows)} of {answer["total"]}')}"


def _drawer(out: Output, drawer: dict[str, Any]) -> str:
    created = "" if drawer.get("created", True) else " (already there)"
    header = card(
        out,
        f"{drawer.get('name') or drawer['id']}{created}",
        [
            ("id", drawer["id"]),
            ("tags", ", ".join(drawer.get("tags") or [])),
            ("source", drawer["source"].get("kind")),
            ("valid from", drawer["valid_from"]),
            ("valid to", drawer.get("valid_to")),
            ("superseded by", drawer.get("superseded_by")),
        ],
    )
    return f"{header}\n\n{drawer['content']}"


def _history(out: Output, answer: dict[str, Any]) -> str:
    return "\n".join(
        f"{out.dim(version['valid_from'] + ' → ' + (version.get('valid_to') or 'now'))}  "
        f"{version['content']}"
        for version in answer["versions"]
    )


def _duplicates(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [similar["drawer"]["id"], similar["side"], similar["kind"], f"{similar['similarity']:.2f}"]
        for similar in answer["similar"]
    ]
    return table(["DRAWER", "SIDE", "KIND", "SIMILARITY"], rows, empty="(no likely copies)")
