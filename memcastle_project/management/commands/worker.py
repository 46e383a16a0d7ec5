"""`memcastle worker`: run jobs of a remote palace, beside its daemons."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import LocalCommand


class Command(LocalCommand):
    help = (
        "Run a job worker for a remote palace (store.mode = remote) against the Redis broker "
        "of jobs.broker_url, until SIGTERM or SIGINT. Logs go to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--concurrency", help="jobs run at once (jobs.max_concurrency)")

    def handle(self, *args: Any, **options: Any) -> None:
        # Imported here, not at the top: `memcastle --help` loads every command module, and the
        # daemon's stack (Daphne, MCP, Celery, the store's SDK) takes most of a second to import.
        from memcastle_project.serving import work

        config = self.config(options, **{"jobs.max_concurrency": options["concurrency"]})
        sys.exit(work(config))
