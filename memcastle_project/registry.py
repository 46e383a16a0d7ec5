"""Where a running daemon says it listens, so the CLI finds it without the server's imports."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os

from kernel import __version__
from kernel.config import Config, state_dir

logger = logging.getLogger(__name__)


class RegistryFile:
    """`<state>/run/<hash>/daemon.json`: how clients find the daemon of a palace.

    Written once the daemon is ready to serve, removed at clean shutdown.
    """

    def __init__(self, config: Config) -> None:
        identity = (
            config.store.url if config.store.mode == "remote" else str(config.palace_path.resolve())
        )
        digest = hashlib.sha256((identity or "").encode()).hexdigest()[:16]
        self.path = state_dir(os.environ) / "run" / digest / "daemon.json"

    def write(self, bind_addr: str, started_at: dt.datetime) -> None:
        record = {
            "pid": os.getpid(),
            "bind_addr": bind_addr,
            "started_at": started_at.isoformat().replace("+00:00", "Z"),
            "version": __version__,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(record), encoding="utf-8")
            temporary.replace(self.path)
        except OSError as exc:
            logger.warning("could not write the registry file %s: %s", self.path, exc)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
