"""`memcastle serve`: run the daemon in the foreground."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import LocalCommand


class Command(LocalCommand):
    help = "Run the MemCastle daemon in the foreground (logs go to stderr)."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--bind", help="IP address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", help="port to listen on (default 8420; 0 picks one)")

    def handle(self, *args: Any, **options: Any) -> None:
        # Imported here, not at the top: `memcastle --help` loads every command module, and the
        # daemon's stack (Daphne, MCP, Celery, the store's SDK) takes most of a second to import.
        from memcastle_project.serving import serve

        config = self.config(
            options, **{"server.bind": options["bind"], "server.port": options["port"]}
        )
        sys.exit(serve(config))
