"""How the CLI tests run `memcastle` against a daemon: piped, or on a pseudo-terminal, with the
daemon's environment so that the CLI finds it through its registry file."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.support.daemon import REPO, Daemon

MEMCASTLE = Path(sys.executable).parent / "memcastle"
TIMEOUT = 90.0
_COLOUR_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "TERM", "MEMCASTLE_MODE", "MEMCASTLE_AUTH_TOKEN")


def environment(daemon: Daemon, env: dict[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment (so the CLI finds it through its registry file), without the
    caller's colour settings."""
    base = {k: v for k, v in daemon.env.items() if k not in _COLOUR_VARIABLES}
    return {**base, **(env or {})}


def cli(
    daemon: Daemon,
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess[str]:
    """`memcastle ARGS` with stdout and stderr piped."""
    return subprocess.run(
        [str(MEMCASTLE), *args],
        env=environment(daemon, env),
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def cli_json(daemon: Daemon, *args: str, **kwargs: Any) -> Any:
    """A command that must succeed, and its JSON answer."""
    result = cli(daemon, *args, **kwargs)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refused(result: subprocess.CompletedProcess[str], code: str) -> str:
    """A command that failed with exit 1 and this code in its diagnostic; the diagnostic."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert f"code: {code}" in result.stderr, result.stderr
    assert "help: " in result.stderr
    return result.stderr


def in_terminal(
    daemon: Daemon, *args: str, answer: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """`memcastle ARGS` with stdin, stdout and stderr on a pseudo-terminal; `answer` is typed
    when a `[y/N]` question appears. Returns the exit status and everything shown."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [str(MEMCASTLE), *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment(daemon, {"TERM": "xterm-256color", **(env or {})}),
        cwd=REPO,
        start_new_session=True,
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and b"[y/N] " in shown:
                os.write(controller, answer.encode() + b"\n")
                answer = None
        status = process.wait(timeout=TIMEOUT)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
    return status, shown.decode(errors="replace").replace("\r\n", "\n")


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Independent CLI runs at once, each its own process: a test waits for the slowest of
    them instead of their sum (starting Python and Django is most of a run's time)."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]
