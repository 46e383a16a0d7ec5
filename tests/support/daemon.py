"""A real daemon in a subprocess, for end-to-end tests.

It listens on a port the OS picks (`MEMCASTLE_PORT=0`) and is found through the registry file it
writes once it is ready to serve, the way the CLI finds it. Every wait polls a condition with a
deadline; nothing sleeps on a guess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.support.waits import wait_for

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0


# Where the daemons of a test run keep compiled components: in the virtual environment, which
# `make clean` removes, and out of the user's own cache.
COMPILED_CACHE = REPO / ".venv" / ".cache" / "test-xdg-cache"

# The log of every daemon the test session starts: `tests/conftest.py` reads them all at the end
# of the session for credentials that must never be logged.
LOGS: list[Path] = []


class Daemon:
    """`memcastle serve` on a temporary palace."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.palace = root / "palace"
        self.state = root / "state"
        self.log_path = root / "daemon.log"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEMCASTLE_")},
            "MEMCASTLE_PALACE_PATH": str(self.palace),
            "MEMCASTLE_PORT": "0",
            "XDG_STATE_HOME": str(self.state),
            "XDG_CONFIG_HOME": str(root / "config"),
            # Installed sources are the test's own; compiled components are shared by every
            # daemon of the run, as by every daemon of one user (compiling one takes seconds).
            "MEMCASTLE_MINING_SOURCES_DIR": str(root / "sources"),
            "XDG_CACHE_HOME": str(COMPILED_CACHE),
            # No embed job is queued by itself: the local model would cost every test daemon
            # CPU. A test that wants one sets this variable (it overrides a config file's
            # embeddings.default_profile).
            "MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": "",
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(REPO / "manage.py"), *args]

    def start(self, *, wait: bool = True) -> Daemon:
        self._clear_registry()
        LOGS.append(self.log_path)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command("serve"), env=self.env, cwd=REPO, stdout=log, stderr=log
        )
        log.close()
        if wait:
            record = wait_for(self._ready, timeout=START_TIMEOUT, what="the daemon to serve")
            self.base_url = f"http://{record['bind_addr']}"
        return self

    def start_refused(self, timeout: float = START_TIMEOUT) -> str:
        """Start a daemon that must refuse to start; returns its log.

        A refused start exits non-zero and is never advertised in a registry file.
        """
        self.start(wait=False)
        assert self.process is not None
        status = self.process.wait(timeout=timeout)
        log = self.log()
        assert status != 0, log
        assert self.registry() is None, "a daemon that refuses to start is never advertised"
        return log

    def _registry_files(self) -> list[Path]:
        return list((self.state / "memcastle" / "run").glob("*/daemon.json"))

    def _clear_registry(self) -> None:
        for path in self._registry_files():
            path.unlink()

    def registry(self) -> dict[str, Any] | None:
        files = self._registry_files()
        return json.loads(files[0].read_text()) if files else None

    def _ready(self) -> dict[str, Any] | None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {self.process.returncode}:\n{self.log()}")
        try:
            return self.registry()
        except (json.JSONDecodeError, FileNotFoundError):
            return None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def search_ready(self) -> bool:
        """Whether search answers: the indexes are neither being rebuilt nor catching up."""
        status = httpx.get(f"{self.base_url}/api/status", timeout=60).json()
        return status["search"]["state"] == "ready"

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout: float = 15) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self) -> int:
        """SIGTERM, then wait for the exit status."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.signal(signal.SIGTERM)
        return self.wait()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=15)

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run another management command against the same palace and environment."""
        return subprocess.run(
            self.command(*args),
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
