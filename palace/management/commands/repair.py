"""`memcastle repair`: plan, or with --apply carry out, the repairs an audit found."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, add_wait_flag, confirm


class Command(DaemonCommand):
    help = "Queue a repair job: a dry run by default; --apply removes orphan drawers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--apply", action="store_true", help="carry the repairs out")
        parser.add_argument("-y", "--yes", action="store_true", help="apply without asking")
        parser.add_argument(
            "--based-on-job", metavar="ID", help="the completed audit whose findings to repair"
        )
        add_wait_flag(parser)

    def run(self, options: dict[str, Any]) -> None:
        if options["apply"]:
            confirm("Apply the repairs (orphan drawers are deleted)?", yes=options["yes"])
        body: dict[str, Any] = {"type": "repair", "dry_run": not options["apply"]}
        if options["based_on_job"]:
            body["based_on_job"] = options["based_on_job"]
        self.submit_job(body, wait=options["wait"])
