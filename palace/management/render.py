"""How the CLI shows an answer: JSON for scripts, a readable rendering for people (cli.md 2).

JSON is the stable interface and is printed when stdout is not a terminal or with `--json`;
people on a terminal get tables, cards and colours. Colour follows `NO_COLOR`, `FORCE_COLOR` and
`TERM=dumb`, decided for stdout and stderr separately, and JSON is highlighted only on a colour
terminal, never in a pipe.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO

from kernel.errors import MemCastleError

STATUS_COLOURS = {
    "queued": "33",
    "running": "36",
    "paused": "35",
    "completed": "32",
    "failed": "31",
    "cancelled": "2",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_JSON_TOKEN = re.compile(
    r'(?P<key>"(?:[^"\\]|\\.)*"(?=\s*:))|(?P<string>"(?:[^"\\]|\\.)*")'
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
)
_JSON_COLOURS = {"key": "34", "string": "32", "literal": "35", "number": "36"}


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


def paint(text: str, code: str, enabled: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if enabled else text


def visible_width(text: str) -> int:
    return len(_ANSI.sub("", text))


def highlight_json(text: str) -> str:
    def colour(match: re.Match[str]) -> str:
        kind = match.lastgroup or "string"
        return paint(match.group(), _JSON_COLOURS[kind], True)

    return _JSON_TOKEN.sub(colour, text)


class Output:
    """Where a command's answer goes, and in which form."""

    def __init__(
        self, *, json_flag: bool, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.json = json_flag or not is_terminal(self.stdout)
        self.colour = colour_enabled(self.stdout)
        self.stderr_colour = colour_enabled(self.stderr)

    def show(self, answer: Any, human: Callable[[Output, Any], str] | None = None) -> None:
        """The answer as JSON, or as `human` renders it on a terminal."""
        if self.json or human is None:
            self.write_json(answer)
        else:
            self.line(human(self, answer))

    def write_json(self, answer: Any) -> None:
        text = json.dumps(answer, indent=2, ensure_ascii=False)
        if self.colour and is_terminal(self.stdout):
            text = highlight_json(text)
        self.line(text)

    def line(self, text: str) -> None:
        self.stdout.write(text.rstrip("\n") + "\n")
        self.stdout.flush()

    def note(self, text: str) -> None:
        """A line for the person, never part of the answer: stderr."""
        self.stderr.write(text.rstrip("\n") + "\n")
        self.stderr.flush()

    def paint(self, text: str, code: str) -> str:
        return paint(text, code, self.colour)

    def bold(self, text: str) -> str:
        return self.paint(text, "1")

    def dim(self, text: str) -> str:
        return self.paint(text, "2")

    def status(self, status: str) -> str:
        return self.paint(status, STATUS_COLOURS.get(status, "0"))


def table(headers: list[str], rows: Iterable[list[str]], *, empty: str = "(none)") -> str:
    """Columns padded to their widest cell; colour codes do not count as width."""
    rows = list(rows)
    if not rows:
        return empty
    widths = [
        max(visible_width(cell) for cell in column) for column in zip(headers, *rows, strict=True)
    ]

    def format_row(cells: list[str]) -> str:
        padded = [
            cell + " " * (width - visible_width(cell))
            for cell, width in zip(cells, widths, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return "\n".join([format_row(headers), *(format_row(row) for row in rows)])


def card(out: Output, title: str, fields: Iterable[tuple[str, object]]) -> str:
    """A titled list of `label: value` lines; fields without a value are left out."""
    shown = [(label, value) for label, value in fields if value not in (None, "", [], {})]
    width = max((len(label) for label, _ in shown), default=0)
    lines = [out.bold(title)]
    lines += [f"  {label + ':':<{width + 1}} {value}" for label, value in shown]
    return "\n".join(lines)


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


class ProgressBar:
    """A job's progress on a terminal's stderr, redrawn in place; silent anywhere else."""

    WIDTH = 30

    def __init__(self, out: Output) -> None:
        self.out = out
        self.enabled = is_terminal(out.stderr)
        self.drawn = False

    def update(self, job: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        progress = job.get("progress") or {}
        current, total = int(progress.get("current") or 0), progress.get("total")
        filled = min(self.WIDTH, self.WIDTH * current // int(total)) if total else 0
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        status = paint(
            str(job["status"]), STATUS_COLOURS.get(str(job["status"]), "0"), self.out.stderr_colour
        )
        message = str(progress.get("message") or "")[:40]
        self.out.stderr.write(f"\r\x1b[2K[{bar}] {progress_text(progress)} {status} {message}")
        self.out.stderr.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.out.stderr.write("\n")
            self.out.stderr.flush()


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
