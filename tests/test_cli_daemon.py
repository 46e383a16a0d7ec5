"""The daemon's lifecycle through the CLI, `status` and its exit codes, no daemon at all, the
token, the OpenAPI document, `python manage.py`, the completions and the reference docs."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memcastle_project.cli import BEGIN, DOCS, END, reference
from tests.support.cli import cli, cli_json, environment, in_terminal, refused, together
from tests.support.daemon import REPO, Daemon

TOKEN = "a-configured-secret-of-32-chars!"


@pytest.fixture
def stopped(tmp_path: Path) -> Iterator[Daemon]:
    """A palace with no daemon yet; whatever the test starts is stopped afterwards."""
    palace = Daemon(tmp_path)
    yield palace
    record = palace.registry()
    if record is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record["pid"], signal.SIGKILL)


def test_nothing_running(stopped: Daemon) -> None:
    result = cli(stopped, "status")
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["running"] is False and report["endpoint_source"] == "config"

    diagnostic = refused(cli(stopped, "wing", "list"), "memcastle::client::not_running")
    assert "memcastle daemon start" in diagnostic

    # A command line the parser refuses fails like any other: exit 1 and a diagnostic.
    for words in (("search", "x", "--ranking", "fancy"), ("wing", "frobnicate"), ("job",)):
        usage = refused(cli(stopped, *words), "memcastle::cli::usage_invalid")
        assert usage.startswith("usage: memcastle ")

    # A registry file whose process is gone is stale, and not trusted.
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    registry = Path(report["registry"])
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"pid": int(gone.stdout), "bind_addr": "127.0.0.1:9"}))
    status, shown = in_terminal(stopped, "status")
    assert status == 3
    assert "not running" in shown and "stale" in shown


@pytest.mark.slow
def test_start_status_restart_stop_with_auth(stopped: Daemon) -> None:
    secured = {"MEMCASTLE_AUTH_ENABLED": "true", "MEMCASTLE_AUTH_TOKEN": TOKEN}
    started = cli(stopped, "daemon", "start", env=secured)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("started: pid ")
    refused(cli(stopped, "daemon", "start", env=secured), "memcastle::client::already_running")

    status, shown = in_terminal(stopped, "status", env=secured)
    assert status == 0, shown
    assert "running" in shown and "registry" in shown and "auth:       enabled" in shown

    # Without the token the daemon refuses: status is 1, a command fails with the 401.
    assert cli(stopped, "status").returncode == 1
    refused(
        cli(stopped, "wing", "list"),
        "memcastle::client::remote_rejected (401, memcastle::auth::unauthorized)",
    )
    generated = cli(stopped, "auth", "generate", env=secured)
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout.startswith("mc_") and len(generated.stdout.splitlines()) == 1
    assert "shown once" in generated.stderr
    with_generated = {"MEMCASTLE_AUTH_TOKEN": generated.stdout.strip()}
    assert cli_json(stopped, "auth", "revoke", "--json", env=with_generated) == {"revoked": True}

    restarted = cli(stopped, "--json", "daemon", "restart", env=secured)
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.startswith("restarted: pid ")
    pid = stopped.registry()["pid"]

    # The other spelling runs the same command.
    stop = subprocess.run(
        [sys.executable, "manage.py", "daemon", "stop"],
        env=environment(stopped, secured),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["shutting_down"] is True
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert cli(stopped, "status").returncode == 3


def test_the_openapi_document(daemon: Daemon, tmp_path: Path) -> None:
    document = cli_json(daemon, "schema")
    assert document["openapi"].startswith("3.") and "/api/wings" in document["paths"]
    written = tmp_path / "openapi.json"
    result = cli(daemon, "-v", "schema", "--output", str(written))
    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(written.read_text()) == document


def test_help_lists_the_commands(daemon: Daemon) -> None:
    result = cli(daemon, "--help")
    assert result.returncode == 0
    for name in ("status", "wake-up", "drawer", "completions", "serve"):
        assert f"\n  {name} " in result.stdout
    assert "runserver" not in result.stdout


def test_help_is_memcastles_own(stopped: Daemon) -> None:
    """`memcastle help` is `memcastle --help`, and `memcastle help COMMAND ACTION` the action's
    own help; `python manage.py help` stays Django's listing of every command."""
    asked, overview, action, wing_list, django = together(
        lambda: cli(stopped, "help"),
        lambda: cli(stopped, "--help"),
        lambda: cli(stopped, "help", "wings", "list"),
        lambda: cli(stopped, "wing", "list", "--help"),
        lambda: subprocess.run(
            [sys.executable, "manage.py", "help"],
            env=environment(stopped),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=90,
        ),
    )
    assert asked.returncode == 0 and asked.stderr == ""
    assert asked.stdout == overview.stdout and "flush" not in asked.stdout
    assert action.returncode == 0 and action.stdout == wing_list.stdout
    assert action.stdout.startswith("usage: memcastle wing list")
    assert django.returncode == 0, django.stderr
    for name in ("flush", "makemigrations", "sendtestemail", "runserver", "wing", "worker"):
        assert f"    {name}\n" in django.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completions(daemon: Daemon, shell: str, tmp_path: Path) -> None:
    result = cli(daemon, "completions", shell, "--json")
    assert result.returncode == 0, result.stderr
    script = tmp_path / f"memcastle.{shell}"
    script.write_text(result.stdout)
    for word in ("wing", "wake-up", "supersede", "--agent-identity", "read_only"):
        assert word in result.stdout
    if shutil.which(shell) is None:
        return
    check = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}
    assert subprocess.run([*check[shell], str(script)], capture_output=True).returncode == 0
    if shell == "bash":
        completed = subprocess.run(
            [
                "bash",
                "-c",
                f"source {script}; COMP_WORDS=(memcastle drawer s); COMP_CWORD=2; "
                '_memcastle; echo "${COMPREPLY[*]}"; COMP_WORDS=(memcastle --mode r); '
                'COMP_CWORD=2; _memcastle; echo "${COMPREPLY[*]}"',
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert completed.stdout.splitlines() == ["show supersede", "read_only"]


def test_the_reference_docs_match_the_parsers() -> None:
    text = DOCS.read_text(encoding="utf-8")
    generated = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert generated.strip() == reference().strip(), (
        "docs/cli.md is out of date: run `python manage.py cli_reference`"
    )
