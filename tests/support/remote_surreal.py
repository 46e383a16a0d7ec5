"""A loopback SurrealDB server for tests of the remote store: the real engine behind real RPC.

No SurrealDB server binary can be installed here, but the SDK's embedded engine is the server's
own RPC layer: `AsyncEmbeddedDB.execute` takes one CBOR-encoded RPC request, exactly the frame
the SDK's `ws://` client sends, and returns the CBOR response a server would send back. This
module puts a WebSocket listener in front of it, so a `ws://` client talks to the engine over
the same protocol, subprotocol (`cbor`) and endpoint (`/rpc`) as to `surreal start`:

    python -m tests.support.remote_surreal --port 0 [--username root --password secret]

prints the port it bound on stdout (one line) once it accepts connections, logs to stderr, and
exits cleanly on SIGTERM or SIGINT. The datastore is `mem://`: it lives as long as the process.

What a real server does per connection, the wrapper does too. Each WebSocket connection gets its
own engine session (the RPC `attach`), so `use` and `signin` on one connection do not leak into
another; a frame without a `session` key is given the connection's session on the way in, and
the key is taken off the answer on the way out. Nothing else in a frame is decoded or re-encoded:
the top-level CBOR map is split into raw key/value byte ranges, so every value reaches the engine
and the client byte for byte. The one answer the wrapper writes itself is for a frame that is not
a request at all: the engine raises on it, a server answers it with an id-less JSON-RPC error
(-32700 or -32600), and so does the wrapper. The handshake refuses a client that does not offer
the `cbor` subprotocol (a server would fall back to JSON, which this wrapper does not speak).

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
import itertools
import json
import logging
import re
import secrets
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any

import cbor2
from surrealdb.data.cbor import decode, encode
from surrealdb_embedded import AsyncEmbeddedDB
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

logger = logging.getLogger("remote_surreal")

RPC_PATH = "/rpc"
SUBPROTOCOL = Subprotocol("cbor")
SESSION_KEY = cbor2.dumps("session")
METHOD_KEY = cbor2.dumps("method")
# The wrapper's stand-in for `--unauthenticated`: a root user only this process knows.
INTERNAL_USER = "remote_surreal_internal"
_USERNAME = re.compile(r"^[A-Za-z0-9_]+$")
_HEAD_SIZES = {24: 1, 25: 2, 26: 4, 27: 8}
_BREAK = 0xFF


class EngineError(Exception):
    """The engine answered one of the wrapper's own requests with an RPC error."""


# Raw CBOR: just enough to find the top-level map's entries without decoding their values.


def _head(frame: bytes, pos: int) -> tuple[int, int, int | None]:
    """The data item starting at `pos`: (major type, offset past its head, argument).

    The argument is None for an indefinite length (additional information 31).
    """
    initial = frame[pos]
    major, info = initial >> 5, initial & 0x1F
    pos += 1
    if info < 24:
        return major, pos, info
    if info == 31:
        return major, pos, None
    size = _HEAD_SIZES.get(info)
    if size is None or pos + size > len(frame):
        raise ValueError("malformed CBOR head")
    return major, pos + size, int.from_bytes(frame[pos : pos + size], "big")


def _skip(frame: bytes, pos: int) -> int:
    """The offset just past the complete data item starting at `pos`."""
    major, pos, argument = _head(frame, pos)
    if major in (0, 1, 7):
        if argument is None:
            raise ValueError("unexpected CBOR break or indefinite scalar")
        return pos
    if major == 6:
        if argument is None:
            raise ValueError("indefinite CBOR tag")
        return _skip(frame, pos)
    if argument is None:
        while frame[pos] != _BREAK:
            pos = _skip(frame, pos)
        return pos + 1
    if major in (2, 3):
        end = pos + argument
        if end > len(frame):
            raise ValueError("truncated CBOR string")
        return end
    for _ in range(argument * (2 if major == 5 else 1)):
        pos = _skip(frame, pos)
    return pos


def split_map(frame: bytes) -> list[tuple[bytes, bytes]]:
    """The raw (key, value) byte ranges of a frame that is one CBOR map; ValueError otherwise."""
    try:
        major, pos, count = _head(frame, 0)
        if major != 5:
            raise ValueError("the frame is not a CBOR map")
        pairs: list[tuple[bytes, bytes]] = []
        while (pos < len(frame) and frame[pos] != _BREAK) if count is None else len(pairs) < count:
            key_end = _skip(frame, pos)
            value_end = _skip(frame, key_end)
            pairs.append((frame[pos:key_end], frame[key_end:value_end]))
            pos = value_end
        if count is None:
            if pos >= len(frame):
                raise ValueError("unterminated CBOR map")
            pos += 1
    except IndexError:
        raise ValueError("truncated CBOR") from None
    if pos != len(frame):
        raise ValueError("trailing bytes after the CBOR map")
    return pairs


def join_map(pairs: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A definite-length CBOR map of raw (key, value) byte ranges."""
    count = len(pairs)
    if count < 24:
        head = bytes([0xA0 | count])
    else:
        info, size = next((i, s) for i, s in _HEAD_SIZES.items() if count < 1 << (8 * s))
        head = bytes([0xA0 | info]) + count.to_bytes(size, "big")
    return head + b"".join(key + value for key, value in pairs)


def _surql_string(text: str) -> str:
    """A SurrealQL string literal (`DEFINE USER ... PASSWORD` takes no parameter)."""
    return json.dumps(text, ensure_ascii=False)


class Engine:
    """The embedded engine, a `mem://` datastore, and the wrapper's own RPC calls to it."""

    def __init__(self, username: str | None, password: str | None) -> None:
        self.db = AsyncEmbeddedDB("mem://")
        self.auth_required = username is not None
        self._internal_password = secrets.token_urlsafe(24)
        self._users = {INTERNAL_USER: self._internal_password}
        if username is not None:
            self._users[username] = password or ""
        self._ids = itertools.count(1)

    async def start(self) -> None:
        await self.db.connect()
        # The engine's own session is never lent to a client: it only defines the users.
        for name, password in self._users.items():
            await self.call(
                "query",
                [f"DEFINE USER {name} ON ROOT PASSWORD {_surql_string(password)} ROLES OWNER", {}],
            )

    async def execute(self, frame: bytes) -> bytes:
        """The engine's answer to one client frame.

        A frame the engine cannot read as a request makes `execute` raise; a server answers it
        with a JSON-RPC error that carries no `id`, since there is none to correlate, and so
        does this.
        """
        try:
            return await self.db.execute(frame)
        except ValueError as exc:
            text = str(exc)
            code, message = (
                (-32700, "Parse error") if "decode" in text else (-32600, "Invalid request")
            )
            return encode({"error": {"code": code, "message": f"{message}: {text}"}})

    async def call(self, method: str, params: list[Any], session: str | None = None) -> Any:
        request: dict[str, Any] = {"id": f"wrapper-{next(self._ids)}", "method": method}
        if params:
            request["params"] = params
        if session is not None:
            request["session"] = session
        response = decode(await self.db.execute(encode(request)))
        if not isinstance(response, dict):
            raise EngineError(f"{method}: unexpected answer {response!r}")
        if response.get("error") is not None:
            raise EngineError(f"{method}: {response['error']}")
        return response.get("result")

    async def open_session(self, session: str) -> None:
        """A new session, anonymous like a fresh server connection unless auth is off."""
        await self.call("attach", [], session)
        if not self.auth_required:
            await self.sign_in_internally(session)

    async def sign_in_internally(self, session: str) -> None:
        await self.call(
            "signin", [{"user": INTERNAL_USER, "pass": self._internal_password}], session
        )

    async def close_session(self, session: str) -> None:
        try:
            await self.call("detach", [], session)
        except EngineError as exc:
            logger.debug("session %s was already gone: %s", session, exc)


class Connection:
    """One client WebSocket: its own session, plus the sessions it attached itself."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.session = str(uuid.uuid4())
        self.attached: set[str] = set()

    async def forward(self, frame: bytes) -> bytes:
        """The engine's answer to one request frame, as a server would send it."""
        try:
            pairs = split_map(frame)
        except ValueError:
            # Not a map, so not a request: passed on whole, to be refused as a server would.
            return await self.engine.execute(frame)
        entries = dict(pairs)
        if SESSION_KEY in entries:
            reply = await self.engine.execute(frame)
            await self._track(entries, reply)
            return reply
        session_value = cbor2.dumps(self.session)
        reply = await self.engine.execute(join_map([*pairs, (SESSION_KEY, session_value)]))
        try:
            answer = split_map(reply)
        except ValueError:
            return reply
        return join_map([(key, value) for key, value in answer if key != SESSION_KEY])

    async def _track(self, entries: dict[bytes, bytes], reply: bytes) -> None:
        """Remember sessions the client attaches, so they are detached when it goes away."""
        method = cbor2.loads(entries[METHOD_KEY]) if METHOD_KEY in entries else None
        if method not in ("attach", "detach"):
            return
        answer = decode(reply)
        if not isinstance(answer, dict) or answer.get("error") is not None:
            return
        session = str(decode(entries[SESSION_KEY]))
        if method == "attach":
            self.attached.add(session)
            if not self.engine.auth_required:
                await self.engine.sign_in_internally(session)
        else:
            self.attached.discard(session)

    async def close(self) -> None:
        for session in (self.session, *self.attached):
            await self.engine.close_session(session)


def _only_rpc(connection: ServerConnection, request: Request) -> Response | None:
    """The server answers WebSocket upgrades on `/rpc` only."""
    if request.path.split("?", 1)[0] != RPC_PATH:
        return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
    return None


def _handler(engine: Engine) -> Callable[[ServerConnection], Awaitable[None]]:
    async def handle(websocket: ServerConnection) -> None:
        connection = Connection(engine)
        await engine.open_session(connection.session)
        try:
            async for frame in websocket:
                if isinstance(frame, str):
                    await websocket.close(CloseCode.UNSUPPORTED_DATA, "binary CBOR frames only")
                    return
                await websocket.send(await connection.forward(frame))
        except ConnectionClosed:
            pass
        finally:
            await connection.close()

    return handle


async def run(host: str, port: int, username: str | None, password: str | None) -> None:
    engine = Engine(username, password)
    await engine.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with serve(
        _handler(engine),
        host,
        port,
        subprotocols=[SUBPROTOCOL],
        process_request=_only_rpc,
        max_size=None,
        server_header="remote_surreal (SurrealDB embedded engine)",
    ) as server:
        bound = server.sockets[0].getsockname()[1]
        logger.info("serving SurrealDB RPC on ws://%s:%d%s", host, bound, RPC_PATH)
        print(bound, flush=True)
        await stop.wait()
    await engine.db.close()
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
