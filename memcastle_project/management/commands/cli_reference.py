"""`python manage.py cli_reference`: rewrite the reference in docs/cli.md from the commands'
parsers. A developer's tool, not a `memcastle` command: a test fails when the file is stale."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memcastle_project.cli import DOCS, rewrite_docs


class Command(BaseCommand):
    help = "Rewrite the generated reference in docs/cli.md from the commands' parsers."

    requires_system_checks: list = []

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"{'rewrote' if rewrite_docs() else 'unchanged'}: {DOCS}")
