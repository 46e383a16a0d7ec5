"""A remote palace's processes for tests: the configuration they share and `memcastle worker`.

The SurrealDB server is `tests.support.surreal_server.remote_surreal`, Redis a `redis-server`
of the test's own (`tests.support.redis_server`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import tomlkit

from tests.support.daemon import REPO, Daemon
from tests.support.waits import wait_for

LEASE_TTL_SECS = 3


def write_config(root: Path, store_url: str, broker_url: str, *, database: str = "palace") -> Path:
    """The configuration of a remote palace's processes; `database` names another palace on the
    same server."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "memcastle.toml"
    path.write_text(
        tomlkit.dumps(
            {
                "store": {"mode": "remote", "url": store_url, "database": database},
                "jobs": {
                    "broker_url": broker_url,
                    "max_concurrency": 1,
                    "lease_ttl_secs": LEASE_TTL_SECS,
                },
            }
        )
    )
    return path


class Worker:
    """`memcastle worker` in a subprocess, with the environment of a daemon's set-up."""

    def __init__(self, root: Path, config: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.setup = Daemon(root, env={"MEMCASTLE_CONFIG": str(config)})
        self.log_path = root / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    def start(self) -> Worker:
        """Start the worker and wait until it says it is ready (a restarted worker appends to
        the same log, so only what this start wrote counts)."""
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.setup.command("worker"),
                env=self.setup.env,
                cwd=REPO,
                stdout=log,
                stderr=log,
            )
        wait_for(self._ready, timeout=30, what="the worker to be ready")
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the worker exited with {self.process.returncode}:\n{self.log()}")
        return "worker ready" in self.log()[self._log_start :]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=15)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid
