"""What every `memcastle` command shares: the global flags, the config and the diagnostic.

Django's own base arguments (`--verbosity`, `--no-color`...) are replaced by MemCastle's global
flags (cli.md section 4), which every command and every subcommand accepts, so a flag may come
before or after the subcommand.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn, TextIO

from django.core.management.base import BaseCommand, CommandParser

from kernel.config import Config, load_config
from kernel.context import Mode
from kernel.errors import MemCastleError
from palace.management.render import colour_enabled, paint

# The options Django's `run_from_argv` and `execute` read, which the replaced base arguments set.
_DJANGO_DEFAULTS = {
    "settings": None,
    "pythonpath": None,
    "traceback": False,
    "no_color": False,
    "force_color": False,
    "skip_checks": True,
}


class RemoteRejected(MemCastleError):
    """The daemon refused a request: its `{error, code, help}`, wrapped with the HTTP status."""

    code = "memcastle::client::remote_rejected"

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(
            str(body.get("error") or f"the daemon answered {status}"),
            help=str(body.get("help") or "read the daemon log"),
        )
        self.remote_status = status
        self.remote_code = str(body.get("code") or "unknown")


def print_diagnostic(
    error: MemCastleError, *, verbose: int = 0, stream: TextIO | None = None
) -> None:
    """A failure on stderr: what failed, its code (a daemon refusal shows the daemon's status and
    code beside the wrapper's) and what to do; `-v` adds the cause chain."""
    stream = stream or sys.stderr
    code = error.code
    if isinstance(error, RemoteRejected):
        code = f"{code} ({error.remote_status}, {error.remote_code})"
    colour = colour_enabled(stream)
    lines = [
        f"{paint('error:', '1;31', colour)} {error.message}",
        f"  code: {code}",
        f"  help: {error.help}",
    ]
    cause, shown = error.__cause__, {error.message}
    while verbose and cause is not None:
        # Wrapped transport errors often repeat their cause's text word for word.
        if str(cause) not in shown:
            lines.append(f"  caused by: {cause}")
            shown.add(str(cause))
        cause = cause.__cause__
    stream.write("\n".join(lines) + "\n")


# The global flags (cli.md 4): their names and their settings at the top level.
GLOBAL_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (
        ("--json",),
        {
            "action": "store_true",
            "default": False,
            "help": "print JSON even on a terminal (it is the default when stdout is not one)",
        },
    ),
    (
        ("--mode",),
        {
            "choices": [mode.value for mode in Mode],
            "default": None,
            "help": "memory mode sent with each request (MEMCASTLE_MODE; full when unset)",
        },
    ),
    (
        ("--config",),
        {
            "metavar": "FILE",
            "default": None,
            "help": "config file (MEMCASTLE_CONFIG; default ~/.config/memcastle/config.toml)",
        },
    ),
    (
        ("--palace",),
        {
            "metavar": "PATH",
            "default": None,
            "help": "absolute path of the palace directory (MEMCASTLE_PALACE_PATH)",
        },
    ),
    (
        ("-v", "--verbose"),
        {
            "action": "count",
            "default": 0,
            "help": "-v adds the cause of a failure; -vv also logs each request on stderr",
        },
    ),
)


def add_global_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The global flags; below the top level they default to nothing, so a flag given before
    the subcommand is not reset by the subcommand's parser."""
    group = parser.add_argument_group("global options")
    for names, settings in GLOBAL_FLAGS:
        group.add_argument(
            *names, **{**settings, **({} if top else {"default": argparse.SUPPRESS})}
        )


class UsageInvalid(MemCastleError):
    code = "memcastle::cli::usage_invalid"


class MemCastleParser(CommandParser):
    """A command line the parser refuses is a failure like any other (cli.md section 3): the
    usage, then a diagnostic, and exit 1 (argparse's own is exit 2, with no code)."""

    def error(self, message: str) -> NoReturn:
        if not self.called_from_command_line:
            super().error(message)
        self.print_usage(sys.stderr)
        print_diagnostic(UsageInvalid(message, help=f"see `{self.prog} --help`"), stream=sys.stderr)
        sys.exit(1)


class MemCastleCommand(BaseCommand):
    """A `memcastle` command: global flags, and a failure printed as a diagnostic with exit 1."""

    requires_system_checks: list = []

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = MemCastleParser(
            # `wake_up` is spelt `wake-up` (a module name cannot hold a dash).
            prog=f"{os.path.basename(prog_name)} {subcommand.replace('_', '-')}",
            description=self.help or None,
            called_from_command_line=getattr(self, "_called_from_command_line", None),
            **kwargs,
        )
        add_global_flags(parser, top=True)
        parser.set_defaults(**_DJANGO_DEFAULTS)
        self.add_arguments(parser)
        return parser

    def subcommands(self, parser: CommandParser) -> Subcommands:
        return Subcommands(parser)

    def config(self, options: dict[str, Any], **overrides: object) -> Config:
        return load_config(
            config_file=options.get("config"),
            overrides={"palace.path": options.get("palace"), **overrides},
        )

    def execute(self, *args: Any, **options: Any) -> None:
        try:
            super().execute(*args, **options)
        except MemCastleError as error:
            print_diagnostic(error, verbose=options.get("verbose") or 0)
            sys.exit(1)


class Subcommands:
    """The `ACTION` of a noun command (`wing list`); each action takes the global flags too."""

    def __init__(self, parser: CommandParser) -> None:
        self._actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def add(self, name: str, help: str) -> CommandParser:
        parser = self._actions.add_parser(name, help=help, description=help)
        add_global_flags(parser, top=False)
        return parser


class LocalCommand(MemCastleCommand):
    """A command that opens the configured palace in this process instead of calling the daemon
    (`serve`, `migrate`, `worker`)."""
