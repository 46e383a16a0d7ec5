"""The `memcastle` console script: the project's management commands under one name.

`python manage.py` calls this too, so both spellings take the same words. Django dispatches on
the first word, so the global flags given before the command name are moved after it, and the
aliases (`wake-up`, `jobs`, `wings`, `rooms`, `drawers`) become the command's own name.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

ALIASES = {
    "wake-up": "wake_up",
    "jobs": "job",
    "wings": "wing",
    "rooms": "room",
    "drawers": "drawer",
}
_SWITCHES = re.compile(r"^(--json|--verbose|-v+)$")
_VALUED = ("--mode", "--config", "--palace")


def normalize(argv: list[str]) -> list[str]:
    """`--json wings list` becomes `wing --json list`."""
    leading: list[str] = []
    rest = list(argv)
    while rest:
        word = rest[0]
        if _SWITCHES.match(word) or ("=" in word and word.split("=", 1)[0] in _VALUED):
            leading.append(rest.pop(0))
        elif word in _VALUED and len(rest) > 1:
            leading += rest[:2]
            del rest[:2]
        else:
            break
    if not rest:
        return leading
    command, *tail = rest
    return [ALIASES.get(command, command), *leading, *tail]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
    argv = normalize(sys.argv[1:])
    if argv[:1] == ["--version"]:
        from kernel import __version__

        sys.stdout.write(f"memcastle {__version__}\n")
        return
    if not argv or argv[0].startswith("-"):
        _overview(sys.stdout if not argv or argv[0] in ("-h", "--help") else sys.stderr)
        sys.exit(0 if not argv or argv[0] in ("-h", "--help") else 2)
    from django.core.management import execute_from_command_line

    execute_from_command_line(["memcastle", *argv])


def _overview(stream: TextIO) -> None:
    """`memcastle --help`: MemCastle's commands only, not the whole of Django's."""
    import django

    from palace.management.reference import overview

    django.setup()
    stream.write(overview())


if __name__ == "__main__":
    main()
