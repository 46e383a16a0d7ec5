"""`memcastle note [TEXT]...`: file a note in the project's wing, from words, a file, stdin or
an editor; and the project file (`.config/memcastle.toml`), which `mine` reads too."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid, MemCastleError
from memcastle_project.cli import DaemonCommand, is_terminal, read_text
from palace.names import PathInvalid, check_room_name, check_wing_name

PROJECT_FILE = Path(".config") / "memcastle.toml"


class Command(DaemonCommand):
    help = (
        "File a note. The text is the words given, else --file, else --edit, else piped "
        "stdin, else an editor on a terminal. Wing: --wing > MEMCASTLE_WING > the project "
        "file > the directory's name; room: --room > MEMCASTLE_ROOM > the project file > notes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "text", nargs="*", metavar="TEXT", help="the note, kept exactly (`--` before a dash)"
        )
        parser.add_argument("--file", metavar="PATH", help="read the note from a file (- stdin)")
        parser.add_argument("--edit", action="store_true", help="write it in $VISUAL / $EDITOR")
        parser.add_argument("--wing", help="the wing to file it in")
        parser.add_argument("--room", help="the room to file it in")

    def run(self, options: dict[str, Any]) -> None:
        cwd = Path.cwd()
        wing, room = note_scope(options, cwd)
        content = _content(options)
        if not content.strip():
            raise InputInvalid("content", "is empty: the note was not filed")
        drawer = self.daemon.call(
            "POST",
            "/api/notes",
            body={"wing": wing, "room": room, "content": content, "uri": str(cwd)},
        )
        self.out.show(drawer, lambda out, answer: f"Saved note {answer['id']} in {wing}/{room}")


def _content(options: dict[str, Any]) -> str:
    """Words are kept exactly; text from a file, stdin or an editor loses trailing whitespace."""
    if options["text"]:
        return " ".join(options["text"])
    if options["file"]:
        return read_text(options["file"]).rstrip()
    if not options["edit"] and not is_terminal(sys.stdin):
        return sys.stdin.read().rstrip()
    return _edit().rstrip()


def _edit() -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "NOTE.md"
        path.write_text("", encoding="utf-8")
        try:
            subprocess.run([*shlex.split(editor), str(path)], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise MemCastleError(
                f"the editor `{editor}` failed: {exc}",
                code="memcastle::io::failed",
                help="set VISUAL or EDITOR to an editor that works, or give the text as words",
            ) from exc
        return path.read_text(encoding="utf-8")


class ProjectInvalid(MemCastleError):
    code = "memcastle::project::invalid"
    help = "fix .config/memcastle.toml or MEMCASTLE_WING / MEMCASTLE_ROOM"


def find_project(start: Path) -> Path | None:
    """The nearest directory from `start` upwards that has `.config/memcastle.toml`."""
    for directory in (start, *start.parents):
        if (directory / PROJECT_FILE).is_file():
            return directory
    return None


def project_settings(start: Path) -> dict[str, Any]:
    """`wing` and `room` of the project file (`[memcastle] wing/room`, else `[project] name`
    for the wing); empty without a project file."""
    root = find_project(start)
    if root is None:
        return {}
    path = root / PROJECT_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectInvalid(f"{path} cannot be read: {exc}") from exc
    section, project = data.get("memcastle", {}), data.get("project", {})
    settings = {"wing": section.get("wing") or project.get("name"), "room": section.get("room")}
    found = {key: value for key, value in settings.items() if value is not None}
    for key, value in found.items():
        _check_scope(value, key, str(path))
    return found


def note_scope(options: dict[str, Any], cwd: Path) -> tuple[str, str]:
    """Where a note goes: flag > MEMCASTLE_WING/ROOM > project file > the directory's name
    (wing) or `notes` (room)."""
    project = project_settings(cwd)
    wing = options.get("wing") or os.environ.get("MEMCASTLE_WING") or project.get("wing")
    room = options.get("room") or os.environ.get("MEMCASTLE_ROOM") or project.get("room")
    if options.get("wing") is None and os.environ.get("MEMCASTLE_WING"):
        _check_scope(wing, "wing", "MEMCASTLE_WING")
    if options.get("room") is None and os.environ.get("MEMCASTLE_ROOM"):
        _check_scope(room, "room", "MEMCASTLE_ROOM")
    return wing or cwd.name, room or "notes"


def _check_scope(value: object, key: str, origin: str) -> None:
    check = check_wing_name if key == "wing" else check_room_name
    try:
        check(value)
    except PathInvalid as exc:
        raise ProjectInvalid(f"the {key} from {origin} is not valid: {exc.message}") from exc
