"""`memcastle note [TEXT]...`: file a note in the project's wing, from words, a file, stdin or
an editor."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid, MemCastleError
from palace.management.arguments import note_scope, read_text
from palace.management.client import DaemonCommand
from palace.management.render import is_terminal


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
