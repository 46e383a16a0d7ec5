"""The `memcastle` console script: the project's management commands under one name."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["memcastle", *sys.argv[1:]])
