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


def write_config(root: Path, store_url: str, broker_url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "memcastle.toml"
    path.write_text(
        tomlkit.dumps(
            {
                "store": {"mode": "remote", "url": store_url},
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

    def start(self) -> Worker:
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
        return "worker ready" in self.log()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid
