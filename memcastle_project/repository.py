"""SurrealQL for the daemon's own records: the generated API token's digest. The only module of
the project package that talks to the store."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.store import Store


class TokenRepository:
    """The one `auth_state:token` record: a digest of the generated token, never the token."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def stored(self) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY auth_state:token")

    def replace(self, digest: str, algorithm: str, version: int, created_at: dt.datetime) -> None:
        self.store.query(
            "UPSERT auth_state:token CONTENT "
            "{digest: $digest, algorithm: $algorithm, version: $version, created_at: $at}",
            {"digest": digest, "algorithm": algorithm, "version": version, "at": created_at},
        )

    def delete(self) -> None:
        self.store.query("DELETE auth_state:token")
