"""Calling a provider: its command (argv without a shell, JSON in and out, a deadline) or its
OpenAI-compatible HTTP endpoint (a JSON POST with a bearer key and a timeout).

Embedding and extraction providers both call a user's command or endpoint this way (search.md
section 6, graph.md section 5), so they fail the same way: a command that cannot start, overruns
its timeout (killed with everything it started), exits non-zero (the start of its stderr is
kept) or writes something that is not JSON; an endpoint that cannot be reached, does not answer
in time, answers with an error status or answers something other than what was asked for. Each
raises the caller's own error, with a message that starts with what was called.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kernel.errors import MemCastleError

STDERR_HEAD = 300
# What reading an answer that is not JSON, or not of the shape asked for, raises.
_SHAPE_ERRORS = (ValueError, KeyError, IndexError, TypeError, AttributeError)


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


def post_json[T](
    url: str,
    body: Mapping[str, Any],
    *,
    api_key: str | None,
    timeout: float,
    what: str,
    failure: type[MemCastleError],
    read: Callable[[Any], T],
    expected: str,
) -> T:
    """POST `body` as JSON to `url`, with `api_key` (if any) as a bearer token, and return what
    `read` makes of the JSON answer. Each failure raises `failure` with a message that starts
    with `what`; an answer `read` cannot read says it lacks `expected` (the OpenAI-style shape
    asked for)."""
    import httpx

    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise failure(f"{what} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise failure(f"{what} could not be reached ({type(exc).__name__})") from None
    if response.status_code != 200:
        # Only the status: an error body may quote the request or the key.
        raise failure(f"{what} answered HTTP {response.status_code} {response.reason_phrase}")
    try:
        return read(response.json())
    except _SHAPE_ERRORS:
        raise failure(f"{what} answered without an OpenAI-style {expected}") from None
