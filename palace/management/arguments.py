"""What several commands read from their words before calling the daemon: palace paths, text
from a file or stdin, and the project file of the working directory."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from kernel.errors import MemCastleError
from kernel.validation import is_uuid
from palace.names import PathInvalid, check_drawer_name, check_room_name, check_wing_name

PROJECT_FILE = Path(".config") / "memcastle.toml"


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


def read_text(source: str) -> str:
    """The content of a file, or of stdin for `-`."""
    try:
        if source == "-":
            return sys.stdin.read()
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MemCastleError(
            f"cannot read {source}: {exc}",
            code="memcastle::io::failed",
            help="check the path and that the file is UTF-8 text",
        ) from exc


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
