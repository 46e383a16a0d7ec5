"""The parts of the CLI that need no daemon: argv normalisation, colour rules, rendering, prompts
without a terminal."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from kernel import __version__
from kernel.errors import MemCastleError
from memcastle_project.cli import (
    Output,
    ProgressBar,
    card,
    colour_enabled,
    confirm,
    highlight_json,
    normalize,
    print_diagnostic,
    table,
)
from tests.support.daemon import REPO


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--json", "wings", "list"], ["wing", "--json", "list"]),
        (["--mode", "read_only", "-vv", "wake-up"], ["wake_up", "--mode", "read_only", "-vv"]),
        (["--palace=/p", "jobs", "list", "--json"], ["job", "--palace=/p", "list", "--json"]),
        (["status"], ["status"]),
        (["--json"], ["--json"]),
    ],
)
def test_global_flags_before_the_command_move_after_its_name(
    argv: list[str], expected: list[str]
) -> None:
    assert normalize(argv) == expected


@pytest.mark.parametrize(
    ("env", "terminal", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": ""}, True, False),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": "0"}, True, False),
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
    ],
)
def test_colour_rules(env: dict[str, str], terminal: bool, expected: bool) -> None:
    stream = io.StringIO()
    stream.isatty = lambda: terminal  # type: ignore[method-assign]
    assert colour_enabled(stream, env) is expected


def test_piped_json_has_no_escape_codes_even_when_colour_is_forced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    piped = io.StringIO()
    Output(json_flag=True, stdout=piped).show({"status": "running", "n": 1})
    assert "\x1b" not in piped.getvalue()
    assert json.loads(piped.getvalue()) == {"status": "running", "n": 1}
    assert "\x1b[34m" in highlight_json('{"key": true}')


def test_tables_pad_by_visible_width() -> None:
    shown = table(["A", "B"], [["\x1b[32mok\x1b[0m", "x"], ["long", "y"]])
    lines = shown.splitlines()
    assert lines[0] == "A     B"
    assert lines[1].endswith("ok\x1b[0m    x")
    assert table(["A"], [], empty="(none)") == "(none)"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No colour settings from the caller's environment, and an 80-column terminal."""
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    return monkeypatch


@pytest.mark.parametrize(
    ("env", "stdout_colour", "stderr_colour"),
    [
        ({}, True, False),
        ({"NO_COLOR": ""}, False, False),
        ({"FORCE_COLOR": "1"}, True, True),
        ({"FORCE_COLOR": "0"}, False, False),
        ({"TERM": "dumb"}, False, False),
    ],
)
def test_stdout_and_stderr_are_coloured_each_by_the_rules(
    plain_environment: pytest.MonkeyPatch,
    env: dict[str, str],
    stdout_colour: bool,
    stderr_colour: bool,
) -> None:
    for name, value in env.items():
        plain_environment.setenv(name, value)
    # stdout is a terminal, stderr a pipe.
    piped = io.StringIO()
    out = Output(json_flag=False, stdout=Terminal(), stderr=piped)
    assert (out.colour, out.stderr_colour) == (stdout_colour, stderr_colour)
    assert out.status("completed") == ("\x1b[32mcompleted\x1b[0m" if stdout_colour else "completed")
    print_diagnostic(
        MemCastleError("it broke", code="memcastle::x::y", help="fix it"), stream=piped
    )
    error = "\x1b[1;31merror:\x1b[0m" if stderr_colour else "error:"
    assert piped.getvalue() == f"{error} it broke\n  code: memcastle::x::y\n  help: fix it\n"


# Text rich would read as markup, emoji or highlighting if it were given the chance.
TRICKY = {
    "name": "[bold]x[/bold] :smile: 漢字 é \u2028",
    "n": [-1.5e3, 0, 7],
    "flags": {"t": True, "f": False, "z": None},
    "quoted": 'say "hi": 3 \\ \t \u0007',
}


def test_json_in_a_pipe_is_exactly_what_json_dumps_writes(
    plain_environment: pytest.MonkeyPatch,
) -> None:
    plain_environment.setenv("FORCE_COLOR", "1")
    for json_flag in (False, True):
        piped = io.StringIO()
        Output(json_flag=json_flag, stdout=piped).show(TRICKY, lambda out, answer: "human")
        assert piped.getvalue() == json.dumps(TRICKY, indent=2, ensure_ascii=False) + "\n"


def test_json_on_a_colour_terminal_is_highlighted_without_a_character_changed(
    plain_environment: pytest.MonkeyPatch,
) -> None:
    terminal = Terminal()
    Output(json_flag=True, stdout=terminal).show(TRICKY)
    shown = terminal.getvalue()
    assert '\x1b[34m"name"\x1b[0m' in shown and "\x1b[35mtrue\x1b[0m" in shown
    plain = json.dumps(TRICKY, indent=2, ensure_ascii=False) + "\n"
    assert re.sub(r"\x1b\[[0-9;]*m", "", shown) == plain

    plain_environment.setenv("NO_COLOR", "1")
    terminal = Terminal()
    Output(json_flag=True, stdout=terminal).show(TRICKY)
    assert terminal.getvalue() == plain


def test_a_table_aligns_wide_characters_and_keeps_the_cells_colours() -> None:
    shown = table(
        ["NAME", "STATUS"],
        [["漢字", "\x1b[32mcompleted\x1b[0m"], ["a-long-name", "\x1b[31mfailed\x1b[0m"]],
    )
    assert shown.splitlines() == [
        "NAME         STATUS",
        "漢字         \x1b[32mcompleted\x1b[0m",
        "a-long-name  \x1b[31mfailed\x1b[0m",
    ]


def test_a_card(plain_environment: pytest.MonkeyPatch) -> None:
    fields = [("id", "w-1"), ("description", None), ("counts", "2 rooms"), ("tags", "")]
    plain = card(Output(json_flag=False, stdout=io.StringIO()), "work", fields)
    assert plain.splitlines() == [
        "╭─ work ──────────╮",
        "│ id:     w-1     │",
        "│ counts: 2 rooms │",
        "╰─────────────────╯",
    ]
    coloured = card(Output(json_flag=False, stdout=Terminal()), "work", fields)
    assert "\x1b[1mwork\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_a_card_folds_a_long_value_to_the_terminal(plain_environment: pytest.MonkeyPatch) -> None:
    shown = card(Output(json_flag=False, stdout=io.StringIO()), "job", [("result", "x" * 150)])
    lines = shown.splitlines()
    assert max(len(line) for line in lines) == 80
    assert "".join(line.strip("│ ").removeprefix("result:").strip() for line in lines[1:-1]) == (
        "x" * 150
    )


def test_the_progress_bar_is_drawn_on_a_terminal_only(
    plain_environment: pytest.MonkeyPatch,
) -> None:
    job = {"id": "j", "status": "running", "progress": {"current": 1, "total": 2}}
    done = {**job, "status": "completed", "progress": {"current": 2, "total": 2, "message": "ok"}}
    terminal = Terminal()
    bar = ProgressBar(Output(json_flag=False, stderr=terminal))
    bar.update(job)
    bar.update(done)
    bar.finish()
    drawn = terminal.getvalue()
    assert "[###############---------------] 1/2 \x1b[36mrunning\x1b[0m" in drawn
    assert "[##############################] 2/2 \x1b[32mcompleted\x1b[0m ok" in drawn
    assert drawn.endswith("\x1b[?25h")  # the cursor is shown again

    piped = io.StringIO()
    bar = ProgressBar(Output(json_flag=False, stderr=piped))
    bar.update(done)
    bar.finish()
    assert piped.getvalue() == ""


def test_a_prompt_without_a_terminal_proceeds() -> None:
    confirm("Delete?", yes=False, stdin=io.StringIO("n\n"), stderr=io.StringIO())


def test_version_is_answered_without_the_command_lines_plumbing() -> None:
    """`memcastle --version` prints the version and imports neither Django nor the CLI module
    (the console script is `memcastle_project.entry:main`)."""
    probe = (
        "import sys; sys.argv = ['memcastle', '--version']; "
        "from memcastle_project.entry import main; main(); "
        "print(sorted(m for m in ('django', 'memcastle_project.cli') if m in sys.modules))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [f"memcastle {__version__}", "[]"]
