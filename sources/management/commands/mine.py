"""`memcastle mine SOURCE [PLACE] [KEY=VALUE]...` or `memcastle mine PATH`: queue a mining job.

The first word is a path when it has a `/`, starts with `.` or `~` or has a capital letter;
`directory` is the built-in source; a source name the daemon knows is that source (write `./name`
for a directory of the same name); an unknown name that is a local directory is that directory.
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid
from memcastle_project.cli import DaemonCommand, add_wait_flag
from palace.management.commands.note import project_settings

DIRECTORY = "directory"
SOURCE_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
OPTION = re.compile(r"^([a-z][a-z0-9_-]*)=(.*)$", re.DOTALL)


class Command(DaemonCommand):
    help = "Mine a source or a directory into the palace (queues a mine job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target", metavar="SOURCE|PATH", help="a source name, or a directory")
        parser.add_argument(
            "words",
            nargs="*",
            metavar="PLACE|KEY=VALUE",
            help="the place the source reads (one at most) and its options",
        )
        parser.add_argument("--wing", help="the wing to file into")
        parser.add_argument("--full", action="store_true", help="read everything again")
        add_wait_flag(parser)

    def run(self, options: dict[str, Any]) -> None:
        source, place = self._source(options["target"])
        extra, mine_options = _split(options["words"])
        if extra is not None and place is not None:
            raise InputInvalid("PLACE", f"is given twice ({place!r} and {extra!r})")
        place = place if place is not None else extra
        if mine_options:
            mine_options = self._absolute_paths(source, mine_options)
        body: dict[str, Any] = {"type": "mine", "wing": options["wing"], "full": options["full"]}
        if source == DIRECTORY:
            if place is None:
                raise InputInvalid("PATH", "is missing: say which directory to mine")
            body["path"] = _absolute(place)
            body["wing"] = body["wing"] or project_settings(Path(body["path"])).get("wing")
        else:
            body["source"] = source
            body["locator"] = _absolute(place) if place is not None else None
        if mine_options:
            body["options"] = mine_options
        self.submit_job(
            {key: value for key, value in body.items() if value not in (None, False)},
            wait=options["wait"],
        )

    @cached_property
    def adapters(self) -> dict[str, dict[str, Any]]:
        """The daemon's sources by name, asked for only when a word needs them."""
        answer = self.daemon.call("GET", "/api/sources")
        return {adapter["name"]: adapter for adapter in answer["adapters"]}

    def _source(self, word: str) -> tuple[str, str | None]:
        """(source, place) from the first word."""
        if "/" in word or word.startswith((".", "~")) or word != word.lower():
            return DIRECTORY, word
        if word == DIRECTORY:
            return DIRECTORY, None
        if SOURCE_NAME.match(word) and word in self.adapters:
            return word, None
        if Path(word).is_dir():
            return DIRECTORY, word
        known = ", ".join(sorted(self.adapters))
        raise InputInvalid(
            "SOURCE",
            f"{word!r} is neither a source nor a directory (sources: {known})",
            help="name one of the sources, or give a directory's path (./name)",
        )

    def _absolute_paths(self, source: str, values: dict[str, str]) -> dict[str, str]:
        declared = self.adapters.get(source, {}).get("options", [])
        paths = {option["name"] for option in declared if option.get("type") == "path"}
        return {key: _absolute(value) if key in paths else value for key, value in values.items()}


def _split(words: list[str]) -> tuple[str | None, dict[str, str]]:
    """The one bare PLACE and the KEY=VALUE options; a key given twice is refused."""
    place: str | None = None
    values: dict[str, str] = {}
    for word in words:
        match = OPTION.match(word)
        if match is None:
            if place is not None:
                raise InputInvalid("PLACE", f"is given twice ({place!r} and {word!r})")
            place = word
        elif match.group(1) in values:
            raise InputInvalid(match.group(1), "is given twice")
        else:
            values[match.group(1)] = match.group(2)
    return place, values


def _absolute(place: str) -> str:
    """A place relative to this shell made absolute: the daemon has another working directory.
    A URL is left as it is."""
    if "://" in place:
        return place
    return os.path.abspath(os.path.expanduser(place))
