"""`memcastle embed`: embed the drawers that have no vector in the default profile yet."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, add_wait_flag


class Command(DaemonCommand):
    help = "Queue an embed job: vectors for drawers that lack one in the default profile."

    job_type = "embed"
    wing_field = "wing"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wing", help="only this wing's drawers")
        add_wait_flag(parser)

    def run(self, options: dict[str, Any]) -> None:
        body: dict[str, Any] = {"type": self.job_type}
        if options["wing"]:
            body[self.wing_field] = options["wing"]
        self.submit_job(body, wait=options["wait"])
