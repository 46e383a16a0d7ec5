"""The loopback SurrealDB server (`tests.support.remote_surreal`) run in a subprocess for the
duration of a block, found through the port it prints once it accepts connections, and stopped
by its pid."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from tests.support.daemon import REPO, Daemon
from tests.support.waits import wait_for

SERVER_START_TIMEOUT = 30.0
SERVER_STOP_TIMEOUT = 15.0


@dataclass
class RemoteSurreal:
    """A `tests.support.remote_surreal` process: a SurrealDB RPC endpoint on a loopback port."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def stop(self) -> int:
        return _stop(self.process)


def _stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM by pid, then the exit status; killed if it does not stop in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=SERVER_STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()
    return process.returncode


def _read_port(process: subprocess.Popen[bytes], log_path: Path) -> int:
    """The port the server prints once it accepts connections, read with a deadline.

    The selector makes each poll non-blocking, so `wait_for` owns the deadline; a server that
    dies before printing fails the test with its log instead of a timeout.
    """
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)

    def printed() -> int | None:
        if selector.select(timeout=0):
            line = process.stdout.readline() if process.stdout else b""
            if line.strip():
                return int(line)
        if process.poll() is not None:
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            raise RuntimeError(f"the SurrealDB server exited with {process.returncode}:\n{log}")
        return None

    try:
        port: int = wait_for(printed, timeout=SERVER_START_TIMEOUT, what="the SurrealDB server")
    finally:
        selector.close()
    return port


@contextmanager
def remote_surreal(root: Path, *args: str) -> Iterator[RemoteSurreal]:
    """Run `python -m tests.support.remote_surreal --port 0 ARGS` for the duration of the block."""
    root.mkdir(parents=True, exist_ok=True)
    log_path = root / "remote_surreal.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.remote_surreal", "--port", "0", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        yield RemoteSurreal(process, _read_port(process, log_path), log_path)
    finally:
        _stop(process)


def remote_config(root: Path, url: str, **store: str) -> Path:
    """A config file selecting the remote store: store.* settings are read from files only."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "memcastle.toml"
    path.write_text(tomlkit.dumps({"store": {"mode": "remote", "url": url, **store}}))
    return path


def remote_daemon(root: Path, url: str, **store: str) -> Daemon:
    """A daemon (own palace dir, state dir and port) whose store is the server at `url`."""
    return Daemon(root, env={"MEMCASTLE_CONFIG": str(remote_config(root, url, **store))})
