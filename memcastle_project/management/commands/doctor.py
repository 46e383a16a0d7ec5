"""`memcastle doctor`: check the configuration, the directories it names and, when one answers,
the daemon; exit 1 only when a finding is an error (cli.md 3). The checks are
`memcastle_project.doctor`'s."""

from __future__ import annotations

import os
import sys
from typing import Any

from memcastle_project.cli import MemCastleCommand, Output, table
from memcastle_project.doctor import STATUSES, failed, findings

STATUS_STYLES = {"ok": "green", "warning": "yellow", "error": "red", "skipped": "dim"}


class Command(MemCastleCommand):
    help = (
        "Check the configuration and the daemon without changing anything. It reads the config "
        "file (TOML, settings, unknown keys, [[miners]], [[triggers]]), the palace and sources "
        "directories, auth and exposure, then the daemon's health and status when one answers; "
        "exit 1 if any finding is an error."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        found = findings(options.get("config"), os.environ, palace=options.get("palace"))
        Output(json_flag=options["json"]).show([finding.as_dict() for finding in found], _report)
        if failed(found):
            sys.exit(1)


def _report(out: Output, found: list[dict[str, str]]) -> str:
    """The findings as a table, what to do about each warning and error, and a tally."""
    rows = [
        [out.paint(f["status"], STATUS_STYLES[f["status"]]), f["area"], f["check"], f["summary"]]
        for f in found
    ]
    lines = [table(["status", "area", "check", "summary"], rows)]
    todo = [f for f in found if "remediation" in f and f["status"] in ("warning", "error")]
    if todo:
        lines += ["", out.bold("what to do:")]
        lines += [f"  {f['area']} {f['check']}: {f['remediation']}" for f in todo]
    counts = [(status, sum(1 for f in found if f["status"] == status)) for status in STATUSES]
    lines += ["", ", ".join(out.paint(f"{n} {s}", STATUS_STYLES[s]) for s, n in counts if n)]
    return "\n".join(lines)
