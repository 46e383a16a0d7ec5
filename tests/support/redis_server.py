"""A throwaway Redis server for the tests of the remote job broker.

`redis-server` comes from the system (Debian's `redis-server` package; `.ci/run` installs it).
Without it the tests that need it are skipped, except where MEMCASTLE_TEST_REQUIRE_REDIS is
set (CI), where its absence fails them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.waits import wait_for

START_TIMEOUT = 15.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server(root: Path) -> Iterator[str]:
    """Run `redis-server` on a free loopback port for the block; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("MEMCASTLE_TEST_REQUIRE_REDIS"):
            pytest.fail("redis-server is not installed, and MEMCASTLE_TEST_REQUIRE_REDIS is set")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    with (root / "redis.log").open("ab") as log:
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", root],
            stdout=log,
            stderr=log,
        )

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with {process.returncode}; see {root}")
        return _answers(port)

    try:
        wait_for(ready, timeout=START_TIMEOUT, what="redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
