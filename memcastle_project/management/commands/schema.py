"""`memcastle schema`: the OpenAPI document of the running daemon's REST API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import MemCastleError
from memcastle_project.cli import DaemonCommand


class Command(DaemonCommand):
    help = "Write the OpenAPI document the daemon serves (to stdout, or to --output)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", metavar="FILE", help="write it to this file")

    def run(self, options: dict[str, Any]) -> None:
        document = self.daemon.call("GET", "/api/schema/", params={"format": "json"})
        if options["output"]:
            try:
                Path(options["output"]).write_text(json.dumps(document, indent=2) + "\n")
            except OSError as exc:
                raise MemCastleError(
                    f"cannot write {options['output']}: {exc.strerror}",
                    code="memcastle::io::failed",
                    help="choose a path in a directory you can write to",
                ) from exc
            self.out.note(f"wrote {options['output']}")
        else:
            self.out.write_json(document)
