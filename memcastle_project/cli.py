"""The `memcastle` command line: what every app's management commands share.

Each app ships its own commands (`palace/management/commands/wing.py`, `jobs/.../job.py`...);
this module is their common ground: the diagnostics and exit codes, the rendering of an answer
(JSON for scripts, tables and cards for people), the global flags and the parser, the base
commands, the HTTP client of the daemon, the command tree behind `--help`, the completions and
the reference in docs/cli.md, and the console entry. It imports no app: the commands are found
through Django's command discovery.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

import django
import httpx
from django.core.management import execute_from_command_line, get_commands, load_command_class
from django.core.management.base import BaseCommand, CommandParser
from rich.color import ColorSystem
from rich.console import Console, RenderableType
from rich.highlighter import JSONHighlighter
from rich.panel import Panel
from rich.progress import Progress, ProgressColumn, Task
from rich.style import Style
from rich.table import Table
from rich.text import Text
from rich.theme import Theme

from kernel import __version__
from kernel.config import Config, load_config
from kernel.context import Mode
from kernel.errors import MemCastleError
from memcastle_project.registry import RegistryFile

PROG = "memcastle"

# Diagnostics --------------------------------------------------------------------------------------
# A failure is `error:`, `code:` and `help:` on stderr, and exit 1 (cli.md section 3).


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


class UsageInvalid(MemCastleError):
    code = "memcastle::cli::usage_invalid"


class RequestFailed(MemCastleError):
    code = "memcastle::client::request_failed"
    help = "check that the daemon is healthy (`memcastle status`) and try again"


class JobFailed(MemCastleError):
    """A job waited for ended without completing: the job's own error."""


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
        f"{paint('error:', 'bold red', colour)} {error.message}",
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


# Rendering ----------------------------------------------------------------------------------------
# JSON for scripts, rich tables and cards for people; colour by cli.md's rules (section 2).

STATUS_STYLES = {
    "queued": "yellow",
    "running": "cyan",
    "paused": "magenta",
    "completed": "green",
    "failed": "red",
    "cancelled": "dim",
}
# Highlighted JSON: keys blue, strings green, numbers cyan, true, false and null magenta.
JSON_THEME = Theme(
    {
        "json.key": "blue",
        "json.str": "green",
        "json.number": "cyan",
        "json.bool_true": "magenta",
        "json.bool_false": "magenta",
        "json.null": "magenta",
        "json.brace": "none",
    }
)
# A table is as wide as its rows: a row stays on one line, and an id is never cut.
UNBOUNDED = sys.maxsize


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def colour_enabled(stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """`NO_COLOR` wins, `FORCE_COLOR=0` disables and any other value forces colour,
    `TERM=dumb` turns off detection; otherwise colour exactly on a terminal."""
    env = os.environ if env is None else env
    if "NO_COLOR" in env:
        return False
    forced = env.get("FORCE_COLOR")
    if forced is not None and forced != "":
        return forced != "0"
    if env.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def console(stream: TextIO | None, *, colour: bool, width: int | None = None) -> Console:
    """A rich console that colours exactly when `colour` says: the rules above decide it, not
    rich's own reading of the environment (which differs: an empty `NO_COLOR` counts there)."""
    return Console(
        file=stream,
        width=width,
        color_system="standard" if colour else None,
        force_terminal=colour or (stream is not None and is_terminal(stream)),
        no_color=False,
        theme=JSON_THEME,
        markup=False,
        emoji=False,
        highlight=False,
    )


def render(renderable: RenderableType, on: Console, *, soft_wrap: bool = False) -> str:
    """What the console would print, as text: a rendering is composed before it is written.
    `soft_wrap` leaves long lines whole (to the terminal to wrap)."""
    with on.capture() as captured:
        on.print(renderable, end="", soft_wrap=soft_wrap)
    return captured.get().rstrip("\n")


def paint(text: str, style: str, enabled: bool) -> str:
    """`text` in a rich style (`"bold red"`), as escape codes when colour is enabled."""
    return Style.parse(style).render(text, color_system=ColorSystem.STANDARD) if enabled else text


def highlight_json(text: str) -> str:
    """JSON text with colour codes added, and not a character changed."""
    return render(JSONHighlighter()(text), console(None, colour=True), soft_wrap=True)


class Output:
    """Where a command's answer goes, and in which form (cli.md section 2): JSON, the stable
    interface, when stdout is not a terminal or with `--json`; otherwise a rendering for people.
    Colour is decided for stdout and stderr separately."""

    def __init__(
        self, *, json_flag: bool, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.json = json_flag or not is_terminal(self.stdout)
        self.colour = colour_enabled(self.stdout)
        self.stderr_colour = colour_enabled(self.stderr)
        self.console = console(self.stdout, colour=self.colour)

    def show(self, answer: Any, human: Callable[[Output, Any], str] | None = None) -> None:
        """The answer as JSON, or as `human` renders it on a terminal."""
        if self.json or human is None:
            self.write_json(answer)
        else:
            self.line(human(self, answer))

    def write_json(self, answer: Any) -> None:
        """Indented JSON; highlighted on a colour terminal only, never in a pipe."""
        text = json.dumps(answer, indent=2, ensure_ascii=False)
        if self.colour and is_terminal(self.stdout):
            text = highlight_json(text)
        self.line(text)

    def line(self, text: str) -> None:
        _write_line(self.stdout, text)

    def note(self, text: str) -> None:
        """A line for the person, never part of the answer: stderr."""
        _write_line(self.stderr, text)

    def paint(self, text: str, style: str) -> str:
        return paint(text, style, self.colour)

    def bold(self, text: str) -> str:
        return self.paint(text, "bold")

    def dim(self, text: str) -> str:
        return self.paint(text, "dim")

    def status(self, status: str) -> str:
        return self.paint(status, STATUS_STYLES.get(status, "none"))


def _write_line(stream: TextIO, text: str) -> None:
    stream.write(text.rstrip("\n") + "\n")
    stream.flush()


def table(headers: list[str], rows: Iterable[list[str]], *, empty: str = "(none)") -> str:
    """Columns as wide as their widest cell. The cells come painted for their stream and the
    table adds no colour of its own, so their colour codes are kept and do not count as width."""
    rows = list(rows)
    if not rows:
        return empty
    grid = Table(*headers, box=None, pad_edge=False, header_style="none")
    for row in rows:
        grid.add_row(*(Text.from_ansi(cell) for cell in row))
    shown = render(grid, console(None, colour=True, width=UNBOUNDED))
    return "\n".join(line.rstrip() for line in shown.splitlines())


def card(out: Output, title: str, fields: Iterable[tuple[str, object]]) -> str:
    """A titled panel of `label: value` lines, as wide as the terminal allows (a long value is
    folded, never cut); fields without a value are left out."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in fields:
        if value not in (None, "", [], {}):
            grid.add_row(f"{label}:", Text.from_ansi(str(value)))
    heading = Text.from_ansi(title)
    heading.stylize("bold")
    return render(Panel(grid, title=heading, title_align="left", expand=False), out.console)


def progress_text(progress: Mapping[str, Any]) -> str:
    current, total = progress.get("current", 0), progress.get("total")
    return f"{current}/{total}" if total else str(current)


def job_detail(job: Mapping[str, Any]) -> str:
    """The error of a failed job, else its latest progress message."""
    return str(job.get("error") or (job.get("progress") or {}).get("message") or "")


def job_card(out: Output, job: Mapping[str, Any]) -> str:
    kind = dict(job.get("kind") or {})
    lines = card(
        out,
        f"job {job['id']}",
        [
            ("kind", kind.pop("type", None)),
            ("status", out.status(str(job["status"]))),
            ("source", kind.get("source") or kind.get("path")),
            ("wing", kind.get("wing") or kind.get("scope")),
            ("progress", progress_text(job.get("progress") or {})),
            ("detail", job_detail(job)),
            ("error code", job.get("error_code")),
            ("result", json.dumps(job["result"]) if job.get("result") else None),
            ("created", job.get("created_at")),
        ],
    )
    if str(job["status"]) in ("queued", "running", "paused"):
        lines += "\n" + out.dim(f"follow with `memcastle job show {job['id']}`")
    return lines


class JobColumn(ProgressColumn):
    """A job's line in the progress display: `[######------] 2/5 running message`, the bar
    drawn in `#` and `-` so it reads the same in any font."""

    WIDTH = 30

    def render(self, task: Task) -> Text:
        job = task.fields["job"]
        progress = job.get("progress") or {}
        filled = (
            min(self.WIDTH, int(self.WIDTH * task.completed // task.total)) if task.total else 0
        )
        status = str(job["status"])
        return Text.assemble(
            f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {progress_text(progress)} ",
            (status, STATUS_STYLES.get(status, "none")),
            f" {progress.get('message') or ''}",
            no_wrap=True,
            overflow="ellipsis",
        )


class ProgressBar:
    """A job's progress on a terminal's stderr, redrawn in place by rich until `finish`; silent
    anywhere else."""

    def __init__(self, out: Output) -> None:
        self.display: Progress | None = None
        if is_terminal(out.stderr):
            self.display = Progress(
                JobColumn(),
                console=console(out.stderr, colour=out.stderr_colour),
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.task = self.display.add_task("job", total=None, job={})

    def update(self, job: Mapping[str, Any]) -> None:
        if self.display is None:
            return
        progress = job.get("progress") or {}
        self.display.update(
            self.task,
            completed=int(progress.get("current") or 0),
            total=progress.get("total") or None,
            job=job,
            refresh=True,
        )
        # The first update starts the display, which draws it; the next ones redraw it.
        self.display.start()

    def finish(self) -> None:
        """Leave the last line drawn, and give the terminal its cursor back."""
        if self.display is not None:
            self.display.stop()


def confirm(
    question: str, *, yes: bool, stdin: TextIO | None = None, stderr: TextIO | None = None
) -> None:
    """Ask on stderr, default No. `--yes`, or no terminal on stdin or stderr, proceeds without
    asking; declining raises `memcastle::cli::aborted` before anything is changed."""
    stdin, stderr = stdin or sys.stdin, stderr or sys.stderr
    if yes or not (is_terminal(stdin) and is_terminal(stderr)):
        return
    try:
        stderr.write(f"{question} [y/N] ")
        stderr.flush()
        answer = stdin.readline()
    except OSError as exc:
        raise MemCastleError(
            f"could not ask for confirmation: {exc}",
            code="memcastle::cli::prompt_failed",
            help="run it again with --yes to skip the question",
        ) from exc
    if answer.strip().lower() not in ("y", "yes"):
        raise MemCastleError(
            "aborted: nothing was changed",
            code="memcastle::cli::aborted",
            help="answer y to go ahead, or pass --yes",
        )


# Arguments ----------------------------------------------------------------------------------------
# The global flags, the parser, and the words several commands read the same way.

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
GLOBAL_FLAG_NAMES = (*(name for names, _ in GLOBAL_FLAGS for name in names), "-h", "--help")


def add_global_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The global flags; below the top level they default to nothing, so a flag given before
    the subcommand is not reset by the subcommand's parser."""
    group = parser.add_argument_group("global options")
    for names, settings in GLOBAL_FLAGS:
        group.add_argument(
            *names, **{**settings, **({} if top else {"default": argparse.SUPPRESS})}
        )


def add_wait_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the job until it ends (a progress bar on a terminal); exit 1 unless it "
        "completes",
    )


def read_text(source: str) -> str:
    """The content of a file, or of stdin for `-`."""
    try:
        if source == "-":
            return sys.stdin.read()
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MemCastleError(
            f"cannot read {source}: {exc}",
            code="memcastle::io::failed",
            help="check the path and that the file is UTF-8 text",
        ) from exc


class MemCastleParser(CommandParser):
    """A command line the parser refuses is a failure like any other (cli.md section 3): the
    usage, then a diagnostic, and exit 1 (argparse's own is exit 2, with no code)."""

    def error(self, message: str) -> NoReturn:
        if not self.called_from_command_line:
            super().error(message)
        self.print_usage(sys.stderr)
        print_diagnostic(UsageInvalid(message, help=f"see `{self.prog} --help`"), stream=sys.stderr)
        sys.exit(1)


# Commands -----------------------------------------------------------------------------------------
# The base classes of every app's management commands.

# The options Django's `run_from_argv` and `execute` read, which the replaced base arguments set.
_DJANGO_DEFAULTS = {
    "settings": None,
    "pythonpath": None,
    "traceback": False,
    "no_color": False,
    "force_color": False,
    "skip_checks": True,
}


class MemCastleCommand(BaseCommand):
    """A `memcastle` command: global flags, and a failure printed as a diagnostic with exit 1.

    Django's own base arguments (`--verbosity`, `--no-color`...) are replaced by MemCastle's
    global flags, which every command and every subcommand accepts, so a flag may come before
    or after the subcommand.
    """

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


class DaemonCommand(MemCastleCommand):
    """A command that is a client of the running daemon: parse, `self.daemon.call`, render."""

    out: Output
    daemon: DaemonClient

    def handle(self, *args: Any, **options: Any) -> None:
        config = self.config(options)
        self.out = Output(json_flag=options["json"])
        self.daemon = DaemonClient(
            locate(config),
            token=config.auth_token,
            mode=options["mode"] or os.environ.get("MEMCASTLE_MODE"),
            verbose=options["verbose"],
        )
        self.run(options)

    def run(self, options: dict[str, Any]) -> None:
        raise NotImplementedError

    def submit_job(self, body: dict[str, Any], *, wait: bool) -> None:
        """Queue a job and print it; with `wait`, follow it to its end (a progress bar on a
        terminal) and fail when it does not complete."""
        job = self.daemon.call("POST", "/api/jobs", body=body)
        if wait:
            job = self.daemon.wait_for_job(job, ProgressBar(self.out))
        self.out.show(job, job_card)
        if wait and job["status"] != "completed":
            raise JobFailed(
                job.get("error") or f"job {job['id']} was {job['status']}",
                code=job.get("error_code") or f"memcastle::jobs::{job['status']}",
                help=f"see `memcastle job show {job['id']}`",
            )


# The daemon client --------------------------------------------------------------------------------
# Found through its registry file, else at the configured address; one request at a time.

REQUESTED_BY = "cli"
REQUEST_TIMEOUT_SECS = 60.0
JOB_POLL_SECS = 0.2
TERMINAL_STATUSES = ("completed", "failed", "cancelled")
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}


@dataclass(frozen=True)
class Endpoint:
    """Where the daemon should be, and how that was learnt (`registry` or `config`)."""

    url: str
    source: str
    registry: Path
    pid: int | None = None
    # A registry file whose process is gone: the daemon did not shut down cleanly.
    stale: bool = False


def process_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_registry(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def configured_url(config: Config) -> str:
    host = _UNSPECIFIED.get(config.bind, config.bind)
    return f"http://[{host}]:{config.port}" if ":" in host else f"http://{host}:{config.port}"


def locate(config: Config) -> Endpoint:
    """The registry file's address while its process lives, else the configured one."""
    path = RegistryFile(config).path
    record = read_registry(path)
    if record is not None and process_alive(record.get("pid")) and record.get("bind_addr"):
        return Endpoint(f"http://{record['bind_addr']}", "registry", path, pid=record["pid"])
    return Endpoint(configured_url(config), "config", path, stale=record is not None)


class NotRunning(MemCastleError):
    code = "memcastle::client::not_running"
    help = "start one with `memcastle daemon start` (or `memcastle serve` in the foreground)"

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(
            f"no MemCastle daemon answered at {endpoint.url} (from the {endpoint.source})"
        )


class DaemonClient:
    """HTTP to one daemon, with the token, the memory mode and `requested_by=cli`."""

    def __init__(
        self, endpoint: Endpoint, *, token: str | None, mode: str | None, verbose: int = 0
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if mode:
            headers["X-MemCastle-Mode"] = mode
        self.endpoint = endpoint
        self.verbose = verbose
        self.http = httpx.Client(
            base_url=endpoint.url, headers=headers, timeout=REQUEST_TIMEOUT_SECS
        )

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        """One request and its JSON answer. A POST or a PUT always says it came from the CLI; a
        refusal raises `RemoteRejected`, no answer `NotRunning`, a broken one `RequestFailed`."""
        with_body = method in ("POST", "PUT")
        payload = {**(body or {}), "requested_by": REQUESTED_BY} if with_body else None
        return self._send(method, path, params, json=payload)

    def upload(
        self, path: str, data: bytes, content_type: str, *, params: Mapping[str, Any]
    ) -> Any:
        """A POST whose body is a file (a source package), not JSON."""
        return self._send(
            "POST", path, params, content=data, headers={"Content-Type": content_type}
        )

    def _send(
        self, method: str, path: str, params: Mapping[str, Any] | None, **request: Any
    ) -> Any:
        query: dict[str, Any] = {
            key: _param(value) for key, value in (params or {}).items() if value is not None
        }
        if self.verbose >= 2:
            sys.stderr.write(f"{method} {self.endpoint.url}{path} {query or ''}\n")
        try:
            response = self.http.request(method, path, params=query, **request)
        except httpx.ConnectError as exc:
            raise NotRunning(self.endpoint) from exc
        except httpx.HTTPError as exc:
            raise RequestFailed(f"{method} {path} failed: {exc}") from exc
        try:
            answer = response.json()
        except ValueError as exc:
            if response.is_success:
                raise RequestFailed(f"{method} {path} answered something that is not JSON") from exc
            answer = {}
        if not response.is_success:
            raise RemoteRejected(response.status_code, answer if isinstance(answer, dict) else {})
        return answer

    def healthy(self) -> bool:
        """Whether anything answers the health check (which needs no token)."""
        try:
            return self.http.get("/api/health", timeout=2).is_success
        except httpx.HTTPError:
            return False

    def wait_for_job(self, job: dict[str, Any], bar: ProgressBar) -> dict[str, Any]:
        """Poll the job until it completes, fails or is cancelled, drawing its progress; the
        bar is finished however the wait ends (a failed request, Ctrl-C)."""
        try:
            while str(job["status"]) not in TERMINAL_STATUSES:
                bar.update(job)
                time.sleep(JOB_POLL_SECS)
                job = self.call("GET", f"/api/jobs/{job['id']}")
            bar.update(job)
        finally:
            bar.finish()
        return job


def _param(value: object) -> object:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


# The command tree ---------------------------------------------------------------------------------
# Read from the commands' own parsers: `--help`, the completions and the reference in docs/cli.md
# come from it, so none of them can drift.

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BEGIN = "<!-- BEGIN GENERATED: python manage.py cli_reference -->"
END = "<!-- END GENERATED -->"


@dataclass(frozen=True)
class Argument:
    names: tuple[str, ...]
    help: str
    metavar: str | None
    choices: tuple[str, ...]
    positional: bool
    required: bool

    @property
    def synopsis(self) -> str:
        if self.positional:
            return self.metavar or ""
        shown = self.names[-1] + (f" {self.metavar}" if self.metavar else "")
        return shown if self.required else f"[{shown}]"


@dataclass(frozen=True)
class Node:
    """A command or one of its actions."""

    path: tuple[str, ...]
    help: str
    arguments: tuple[Argument, ...] = ()
    children: tuple[Node, ...] = field(default=())

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def usage(self) -> str:
        parts = [PROG, *self.path]
        if self.children:
            parts.append("{" + "|".join(child.path[-1] for child in self.children) + "}")
        parts += [argument.synopsis for argument in self.arguments if argument.synopsis]
        return " ".join(parts)

    def walk(self) -> list[Node]:
        return [self, *(node for child in self.children for node in child.walk())]


def _argument(action: argparse.Action) -> Argument:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    if metavar is None and action.choices and action.nargs != 0:
        metavar = "{" + "|".join(str(choice) for choice in action.choices) + "}"
    if action.option_strings and action.nargs != 0 and metavar is None:
        metavar = action.dest.upper()
    if not action.option_strings and metavar is None:
        metavar = action.dest.upper()
        if action.nargs in ("*", "+"):
            metavar += "..."
        if action.nargs in ("?", "*"):
            metavar = f"[{metavar}]"
    return Argument(
        names=tuple(action.option_strings),
        help="" if action.help in (None, argparse.SUPPRESS) else str(action.help),
        metavar=metavar,
        choices=tuple(str(choice) for choice in action.choices or ()),
        positional=not action.option_strings,
        required=bool(action.required),
    )


def _node(path: tuple[str, ...], help: str, parser: argparse.ArgumentParser) -> Node:
    arguments: list[Argument] = []
    children: list[Node] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            children += [
                _node((*path, name), helps.get(name, ""), sub)
                for name, sub in action.choices.items()
            ]
        elif not set(action.option_strings) & set(GLOBAL_FLAG_NAMES):
            arguments.append(_argument(action))
    return Node(path, help, tuple(arguments), tuple(children))


def memcastle_commands() -> dict[str, MemCastleCommand]:
    """MemCastle's commands by name, as Django's discovery finds them in every installed app:
    those built on `MemCastleCommand` (Django's own, `flush` or `runserver`, mean nothing
    here)."""
    found: dict[str, MemCastleCommand] = {}
    for name, app in sorted(get_commands().items()):
        command = load_command_class(app, name)
        if isinstance(command, MemCastleCommand):
            found[name] = command
    return found


def tree() -> list[Node]:
    """Every MemCastle command with its actions and arguments."""
    nodes = []
    for name, command in memcastle_commands().items():
        parser = command.create_parser(PROG, name)
        nodes.append(_node((parser.prog.split()[-1],), command.help, parser))
    return nodes


def overview() -> str:
    """`memcastle --help`: MemCastle's commands only, not the whole of Django's."""
    nodes = tree()
    width = max(len(node.name) for node in nodes)
    lines = [
        f"usage: {PROG} [--json] [--mode MODE] [--config FILE] [--palace PATH] [-v] COMMAND ...",
        "",
        "MemCastle, a memory daemon for AI agents. Every command but serve, migrate, worker,",
        "completions, integration and source init|build|test|package talks to the running",
        "daemon. `memcastle COMMAND --help` tells more.",
        "",
        "commands:",
        *(f"  {node.name:<{width}}  {node.help.split('. ')[0].rstrip('.')}" for node in nodes),
        "",
        "aliases: wake_up = wake-up, jobs = job, wings = wing, rooms = room, drawers = drawer",
        "",
    ]
    return "\n".join(lines)


def reference() -> str:
    """The generated part of docs/cli.md: one section per command and action."""
    lines: list[str] = []
    for command in tree():
        for node in command.walk():
            heading = "###" if len(node.path) == 1 else "####"
            summary = node.help[:1].upper() + node.help[1:]
            lines += [f"{heading} `{node.name}`", "", summary, "", "```", node.usage, "```", ""]
            if node.arguments:
                lines += [
                    f"- `{' / '.join(argument.names) or argument.metavar}`: {argument.help}"
                    for argument in node.arguments
                ]
                lines.append("")
    return "\n".join(lines)


def rewrite_docs(path: Path = DOCS) -> bool:
    """Replace the generated part of the docs; whether anything changed."""
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    updated = f"{head}{BEGIN}\n\n{reference()}{END}{tail}"
    if updated == text:
        return False
    path.write_text(updated, encoding="utf-8")
    return True


# The console entry --------------------------------------------------------------------------------
# `memcastle` and `python manage.py`: the same words, normalised, then Django's dispatch.

ALIASES = {
    "wake-up": "wake_up",
    "jobs": "job",
    "wings": "wing",
    "rooms": "room",
    "drawers": "drawer",
}
_SWITCHES = re.compile(r"^(--json|--verbose|-v+)$")
_VALUED = ("--mode", "--config", "--palace")


def normalize(argv: list[str]) -> list[str]:
    """`--json wings list` becomes `wing --json list`: Django dispatches on the first word, so
    the global flags given before the command name move after it, and an alias becomes the
    command's own name."""
    leading: list[str] = []
    rest = list(argv)
    while rest:
        word = rest[0]
        if _SWITCHES.match(word) or ("=" in word and word.split("=", 1)[0] in _VALUED):
            leading.append(rest.pop(0))
        elif word in _VALUED and len(rest) > 1:
            leading += rest[:2]
            del rest[:2]
        else:
            break
    if not rest:
        return leading
    command, *tail = rest
    return [ALIASES.get(command, command), *leading, *tail]


def main() -> None:
    """The `memcastle` command line, reached through `memcastle_project.entry`. `help` is
    MemCastle's: `memcastle help` is `memcastle --help` (MemCastle's commands, not Django's), and
    `memcastle help wing list` is `memcastle wing list --help`."""
    argv = normalize(sys.argv[1:])
    if argv[:1] == ["help"]:
        named = normalize(argv[1:])
        argv = [*named, "--help"] if named[:1] and not named[0].startswith("-") else ["--help"]
    run(argv)


def manage() -> None:
    """`python manage.py`: the same commands with the same words, but `help` is Django's own,
    the listing of every command Django has (`flush`, `runserver`...)."""
    run(normalize(sys.argv[1:]))


def run(argv: list[str]) -> None:
    """Run normalised words: `--version`, the overview for no command (on stderr with exit 2
    when only unknown flags came), else the command through Django."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
    if argv[:1] == ["--version"]:
        sys.stdout.write(f"{PROG} {__version__}\n")
        return
    if not argv or argv[0].startswith("-"):
        asked = not argv or argv[0] in ("-h", "--help")
        django.setup()
        (sys.stdout if asked else sys.stderr).write(overview())
        sys.exit(0 if asked else 2)
    execute_from_command_line([PROG, *argv])


if __name__ == "__main__":
    main()
