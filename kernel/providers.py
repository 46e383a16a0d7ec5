"""Running a provider's command: argv without a shell, JSON in and out, a deadline.

Embedding and extraction providers both run a user's command this way (search.md section 6,
graph.md section 5), so they fail the same way: a command that cannot start, overruns its
timeout (killed with everything it started), exits non-zero (the start of its stderr is kept)
or writes something that is not JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from kernel.errors import MemCastleError

STDERR_HEAD = 300


def child_environment() -> dict[str, str]:
    """The daemon's environment minus every MEMCASTLE_* variable (a token, a palace path)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("MEMCASTLE_")}


def run_json(
    argv: Sequence[str],
    request: bytes,
    *,
    timeout: float,
    what: str,
    failure: type[MemCastleError],
) -> Any:
    """Send `request` on stdin and return the command's stdout read as JSON; each failure
    raises `failure` with a message that starts with `what`."""
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(),
            # Its own process group, so a timeout kills whatever it started too.
            start_new_session=True,
        )
    except OSError as exc:
        raise failure(f"{what} could not be started: {exc.strerror}") from None
    try:
        stdout, stderr = process.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise failure(f"{what} did not answer within {timeout:g} s and was killed") from None
    except BaseException:
        _kill(process)
        raise
    if process.returncode != 0:
        head = stderr.decode("utf-8", "replace").strip()[:STDERR_HEAD]
        raise failure(
            f"{what} exited with status {process.returncode}" + (f": {head}" if head else "")
        )
    try:
        return json.loads(stdout)
    except ValueError as exc:
        raise failure(f"{what} wrote output that is not JSON ({exc})") from None


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    process.communicate()
