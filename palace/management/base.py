"""What the local commands (`serve`, `migrate`) share: the config flags and the diagnostic."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memcastle_project.config import Config, load_config
from memcastle_project.errors import MemCastleError


def print_diagnostic(error: MemCastleError) -> None:
    sys.stderr.write(f"error: {error.message}\n  code: {error.code}\n  help: {error.help}\n")


class LocalCommand(BaseCommand):
    """A command that runs in this process against the configured palace."""

    requires_system_checks: list = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--config", help="config file (default ~/.config/memcastle/config.toml)"
        )
        parser.add_argument("--palace", help="absolute path of the palace directory")

    def config(self, options: dict[str, Any], **overrides: object) -> Config:
        return load_config(
            config_file=options.get("config"),
            overrides={"palace.path": options.get("palace"), **overrides},
        )

    def execute(self, *args: Any, **options: Any) -> None:
        try:
            super().execute(*args, **options)
        except MemCastleError as error:
            print_diagnostic(error)
            sys.exit(1)
