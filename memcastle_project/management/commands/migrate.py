"""`memcastle migrate`: apply or inspect the palace's schema migrations without a daemon.

It opens the store itself, so it fails with `memcastle::store::backend_failed` while a daemon
holds an embedded palace.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import LocalCommand


class Command(LocalCommand):
    help = "Apply pending schema migrations (--status reports, --check fails when any pend)."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--status", action="store_true", help="report without applying")
        group.add_argument("--check", action="store_true", help="exit 1 when migrations pend")

    def handle(self, *args: Any, **options: Any) -> None:
        # Imported here, not at the top: `memcastle --help` loads every command module, and the
        # daemon's stack (Daphne, MCP, Celery, the store's SDK) takes most of a second to import.
        from memcastle_project.runtime import migrations

        reading = options["status"] or options["check"]
        state = migrations(self.config(options), apply=not reading)
        self.stdout.write(json.dumps(state.as_dict()))
        if options["check"] and state.pending:
            sys.exit(1)
