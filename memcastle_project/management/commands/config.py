"""`memcastle config show`: the configuration the running daemon uses, secrets left out.

It asks the daemon (`GET /api/config`) rather than reading the file here, because what matters
is what the daemon merged at start-up from its own file, environment and flags.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output, table


class Command(DaemonCommand):
    help = (
        "Show the running daemon's effective configuration, section by section; a secret is "
        "never shown, only whether it is set."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        actions.add("show", "show the effective configuration of the running daemon")

    def run(self, options: dict[str, Any]) -> None:
        self.out.show(self.daemon.call("GET", "/api/config"), _settings_table)


def _settings_table(out: Output, answer: dict[str, Any]) -> str:
    """One row a setting, named as the file names it (`server.port`)."""
    rows = [
        [f"{section}.{key}", _shown(value)]
        for section, values in answer["settings"].items()
        for key, value in values.items()
    ]
    rows += [
        [key, out.dim("set (not shown)") if is_set else out.dim("not set")]
        for key, is_set in answer["secrets"].items()
    ]
    source = answer["config_file"] or "none (defaults, environment and flags)"
    return "\n".join(
        [
            f"{out.bold('config file')}: {source}",
            "",
            table(["SETTING", "VALUE"], rows),
        ]
    )


def _shown(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
