"""`memcastle checkpoint`: file an already-classified batch of memories (a checkpoint job)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid
from memcastle_project.cli import DaemonCommand, add_wait_flag, read_text


class Command(DaemonCommand):
    help = 'File a checkpoint payload ({"items": [...]}) from a file or stdin.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--payload", metavar="FILE", default="-", help="the payload's JSON file (stdin: -)"
        )
        parser.add_argument("--emergency", action="store_true", help="run it before anything else")
        add_wait_flag(parser)

    def run(self, options: dict[str, Any]) -> None:
        try:
            payload = json.loads(read_text(options["payload"]))
        except ValueError as exc:
            raise InputInvalid("payload", f"is not valid JSON: {exc}") from exc
        body = {"type": "checkpoint", "payload": payload}
        if options["emergency"]:
            body["emergency"] = True
        self.submit_job(body, wait=options["wait"])
