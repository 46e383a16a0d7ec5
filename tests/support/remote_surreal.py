"""A loopback SurrealDB server for tests of the remote store: the real engine behind real RPC.

No SurrealDB server binary can be installed here, but the SDK's embedded engine is the server's
own RPC layer: `AsyncEmbeddedDB.execute` takes one CBOR-encoded RPC request, exactly the frame
the SDK's `ws://` client sends, and returns the CBOR response a server would send back. This
module puts a WebSocket listener in front of it, so a `ws://` client talks to the engine over
the same protocol, subprotocol (`cbor`) and endpoint (`/rpc`) as to `surreal start`:

    python -m tests.support.remote_surreal --port 0 [--username root --password secret]

prints the port it bound on stdout (one line) once it accepts connections, logs to stderr, and
exits cleanly on SIGTERM or SIGINT. The datastore is `mem://`: it lives as long as the process.
The bridge is the product's (`kernel.rpc_bridge`, which the database console uses too); this
module adds only what a server does that the console does not: sign-ins checked by the engine
against its own users, and every method passed on.

Authentication behaves like the server's two modes. With `--username/--password` a root user is
defined and a new connection is anonymous, so every query is refused until it signs in (like
`surreal start --user ... --pass ...`). Without them every connection is signed in by the
wrapper with an internal root user nobody else knows (like `surreal start --unauthenticated`);
a client `signin` is still checked against the users that exist.

Limits, all the engine's: no live queries (it has no notification channel) and no
`query_stream` (engine 3.2 predates it; the SDK falls back to `query`, as it does against a
3.2 server). Requests on one connection are answered in order.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from surrealdb_embedded import AsyncEmbeddedDB

from kernel.rpc_bridge import Call, Connection, Engine, Listener

logger = logging.getLogger("remote_surreal")

# The wrapper's stand-in for `--unauthenticated`: a root user only this process knows.
INTERNAL_USER = "remote_surreal_internal"
_USERNAME = re.compile(r"^[A-Za-z0-9_]+$")


class ServerDoor:
    """A server's rules: sign-ins go to the engine, every method is passed on, and without
    users every session is signed in, as by `surreal start --unauthenticated`."""

    def __init__(self, auth_required: bool) -> None:
        self.auth_required = auth_required

    async def admitted(self, connection: Connection, session: str) -> None:
        if not self.auth_required:
            await connection.engine.sign_in_internally(session)

    async def answer(self, connection: Connection, call: Call) -> bytes | None:
        return None

    async def answered(self, connection: Connection, call: Call, reply: Mapping[str, Any]) -> None:
        return None


async def run(host: str, port: int, username: str | None, password: str | None) -> None:
    db = AsyncEmbeddedDB("mem://")
    await db.connect()
    engine = Engine(db.execute, internal_user=INTERNAL_USER)
    # The engine's own session is never lent to a client: it only defines the users.
    await engine.define_internal_user()
    if username is not None:
        await engine.define_user(username, password or "")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    listener = Listener(
        engine,
        ServerDoor(auth_required=username is not None),
        server_header="remote_surreal (SurrealDB embedded engine)",
    )
    bound = await listener.start(host, port)
    logger.info("serving SurrealDB RPC on ws://%s:%d/rpc", host, bound)
    print(bound, flush=True)
    await stop.wait()
    await listener.close()
    await db.close()
    logger.info("stopped")


def _username(raw: str) -> str:
    if not _USERNAME.match(raw) or raw == INTERNAL_USER:
        raise argparse.ArgumentTypeError("letters, digits and underscores only")
    return raw


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.remote_surreal", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 lets the OS pick (printed)")
    parser.add_argument("--username", type=_username, help="require sign-in as this root user")
    parser.add_argument("--password", help="the root user's password")
    args = parser.parse_args(argv)
    if (args.username is None) != (args.password is None):
        parser.error("--username and --password go together")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    asyncio.run(run(args.host, args.port, args.username, args.password))
    return 0


if __name__ == "__main__":
    sys.exit(main())
