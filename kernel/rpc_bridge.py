"""SurrealDB's own RPC over WebSocket, onto an engine running in this process.

The SDK's embedded engine is the server's RPC layer: `execute` takes one CBOR-encoded request,
exactly the frame a `ws://` client sends, and returns the answer a server would send back. This
module puts a WebSocket listener in front of it, so SurrealDB's tools (Studio, the SDKs) talk
to the engine over the same endpoint (`/rpc`) and encodings (`cbor`, `json`) as to a server.
The daemon's database console (`memcastle_project.console`) and the tests' loopback server
(`tests.support.remote_surreal`) are this one bridge with a different `Doorkeeper`: who may
sign in, and which methods a client may call.

What a server does per connection, the bridge does too. Each connection gets its own engine
session (the RPC `attach`), so `use`, `let` and `signin` on one never reach another, nor the
engine's default session (the daemon's own). A frame without a `session` key is given the
connection's session on the way in, and the key is taken off the answer on the way out; a frame
naming a session the connection did not attach is refused. Nothing else in a CBOR frame is
decoded or re-encoded: the top-level map is split into raw key/value byte ranges, so every value
reaches the engine and the client byte for byte. A frame that is not a request at all gets an
id-less JSON-RPC error (-32700 or -32600), as from a server.

An engine session starts anonymous and the engine refuses an anonymous query, so a session a
doorkeeper admits is signed in by the bridge as an internal root user that only this process
knows (`Engine.define_internal_user`, a random password defined for as long as the bridge runs).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import itertools
import json
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Protocol

import cbor2
from surrealdb import RecordID
from surrealdb.data.cbor import decode, encode
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, NegotiationError
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

logger = logging.getLogger("memcastle.rpc")

RPC_PATH = "/rpc"
SUBPROTOCOLS = [Subprotocol("cbor"), Subprotocol("json")]
SESSION_KEY = cbor2.dumps("session")
METHOD_KEY = cbor2.dumps("method")
ID_KEY = cbor2.dumps("id")
PARAMS_KEY = cbor2.dumps("params")
# CBOR tag 37 (a UUID) on a byte string of 16.
_UUID_TAG = b"\xd8\x25\x50"
# A request shorter than this earns no pause (`Listener._answer`): a lookup by id is not what
# starves the process.
BUSY_SECS = 0.002
# The methods whose answers the bridge reads: they change which sessions a connection has, or
# what they may do.
SESSION_METHODS = frozenset({"attach", "detach", "sessions", "invalidate", "reset"})
_HEAD_SIZES = {24: 1, 25: 2, 26: 4, 27: 8}
_BREAK = 0xFF

Execute = Callable[[bytes], Awaitable[bytes]]


class EngineError(Exception):
    """The engine answered one of the bridge's own requests with an RPC error."""


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


# The JSON encoding: SurrealDB's JSON form of the engine's CBOR values.


def json_ready(value: Any) -> Any:
    """A decoded CBOR value as SurrealDB's JSON encoding writes it: record ids as `table:id`,
    datetimes in RFC 3339, decimals, durations and the like as their SurrealQL text."""
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, RecordID | uuid.UUID | decimal.Decimal):
        return str(value)
    return str(value)


def _json_request(text: str | bytes) -> bytes | None:
    """A JSON request as the CBOR frame the engine reads; None when it is not JSON."""
    try:
        return encode(json.loads(text))
    except (ValueError, TypeError):
        return None


def _json_answer(frame: bytes) -> str:
    return json.dumps(json_ready(decode(frame)), ensure_ascii=False)


# What the bridge answers itself.


def rpc_error(
    request_id: bytes | None, message: str, *, code: int = -32000, kind: str = "NotAllowed"
) -> bytes:
    """An RPC error in SurrealDB 3's form, echoing the request's raw id."""
    error = encode({"code": code, "kind": kind, "message": message, "details": None})
    pairs = [] if request_id is None else [(ID_KEY, request_id)]
    return join_map([*pairs, (cbor2.dumps("error"), error)])


def rpc_result(request_id: bytes | None, result: Any) -> bytes:
    pairs = [] if request_id is None else [(ID_KEY, request_id)]
    return join_map([*pairs, (cbor2.dumps("result"), encode(result))])


class Engine:
    """An engine's `execute`, and the bridge's own calls to it."""

    def __init__(self, execute: Execute, *, internal_user: str) -> None:
        self._execute = execute
        self.internal_user = internal_user
        self._internal_password = secrets.token_urlsafe(24)
        self._ids = itertools.count(1)

    async def execute(self, frame: bytes) -> bytes:
        """The engine's answer to one client frame.

        A frame the engine cannot read as a request makes `execute` raise; a server answers it
        with a JSON-RPC error that carries no `id`, since there is none to correlate.
        """
        try:
            return await self._execute(frame)
        except ValueError as exc:
            text = str(exc)
            code, message = (
                (-32700, "Parse error") if "decode" in text else (-32600, "Invalid request")
            )
            return encode({"error": {"code": code, "message": f"{message}: {text}"}})

    async def call(self, method: str, params: list[Any], session: str | None = None) -> Any:
        request: dict[str, Any] = {"id": f"bridge-{next(self._ids)}", "method": method}
        if params:
            request["params"] = params
        if session is not None:
            request["session"] = session
        response = decode(await self._execute(encode(request)))
        if not isinstance(response, dict):
            raise EngineError(f"{method}: unexpected answer {response!r}")
        if response.get("error") is not None:
            raise EngineError(f"{method}: {response['error']}")
        return response.get("result")

    async def define_user(self, name: str, password: str) -> None:
        """A root owner, defined on the engine's default session (`DEFINE USER` takes no
        parameter for its password, hence the literal)."""
        await self.call(
            "query",
            [f"DEFINE USER OVERWRITE {name} ON ROOT PASSWORD {json.dumps(password)} ROLES OWNER"],
        )

    async def define_internal_user(self) -> None:
        await self.define_user(self.internal_user, self._internal_password)

    async def remove_internal_user(self) -> None:
        await self.call("query", [f"REMOVE USER IF EXISTS {self.internal_user} ON ROOT"])

    async def sign_in_internally(self, session: str) -> None:
        await self.call(
            "signin", [{"user": self.internal_user, "pass": self._internal_password}], session
        )

    async def version(self) -> str:
        return str(await self.call("version", []))

    async def attach(self, session: str) -> None:
        await self.call("attach", [], session)

    async def detach(self, session: str) -> None:
        try:
            await self.call("detach", [], session)
        except EngineError as exc:
            logger.debug("session %s was already gone: %s", session, exc)


@dataclass
class Call:
    """One request frame, split: its method and raw id, and the session it is for."""

    method: str | None
    request_id: bytes | None
    session: str
    entries: Mapping[bytes, bytes]

    def params(self) -> list[Any]:
        raw = self.entries.get(PARAMS_KEY)
        params = decode(raw) if raw is not None else []
        return params if isinstance(params, list) else []


class Doorkeeper(Protocol):
    """Who may sign in, and what a connection may call: the one part that differs between a
    bridge that stands in for a server and the daemon's console."""

    async def admitted(self, connection: Connection, session: str) -> None:
        """A session of the connection was just attached (its own one included)."""

    async def answer(self, connection: Connection, call: Call) -> bytes | None:
        """The bridge's own answer to a call, or None to pass the call to the engine."""

    async def answered(self, connection: Connection, call: Call, reply: Mapping[str, Any]) -> None:
        """The engine accepted a session method (`SESSION_METHODS`) that it passed on."""


class Connection:
    """One client WebSocket: its own session, plus the sessions it attached itself."""

    def __init__(self, engine: Engine, door: Doorkeeper, headers: Headers) -> None:
        self.engine = engine
        self.door = door
        self.headers = headers
        self.session = str(uuid.uuid4())
        self.attached: set[str] = set()
        # The sessions a doorkeeper signed in, and the sign-ins it refused.
        self.signed_in: set[str] = set()
        self.refused_signins = 0
        # Set by a doorkeeper that ends the connection (too many refused sign-ins).
        self.close_reason: str | None = None

    def sessions(self) -> set[str]:
        return {self.session, *self.attached}

    async def open(self) -> None:
        await self.engine.attach(self.session)
        await self.door.admitted(self, self.session)

    async def forward(self, frame: bytes) -> bytes:
        """The answer to one CBOR request frame, as a server would send it."""
        try:
            pairs = split_map(frame)
        except ValueError:
            # Not a map, so not a request: passed on whole, to be refused as a server would.
            return await self.engine.execute(frame)
        entries = dict(pairs)
        if SESSION_KEY in entries and decode(entries[SESSION_KEY]) is None:
            # A NONE or null session (the JavaScript SDK's) means the connection's own.
            pairs = [(key, value) for key, value in pairs if key != SESSION_KEY]
            del entries[SESSION_KEY]
        method = _text(entries.get(METHOD_KEY))
        request_id = entries.get(ID_KEY)
        if SESSION_KEY in entries:
            session = str(decode(entries[SESSION_KEY]))
            if method != "attach" and session not in self.sessions():
                return rpc_error(
                    request_id,
                    f"the session {session} is not one this connection attached",
                    kind="NotFound",
                )
            named = True
        else:
            session, named = self.session, False
            pairs = [*pairs, (SESSION_KEY, cbor2.dumps(session))]
        call = Call(method, request_id, session, entries)
        own = await self.door.answer(self, call)
        if own is not None:
            return own
        reply = await self.engine.execute(join_map(pairs))
        # Only the session methods' answers are read; a query's, which may be large, is passed
        # on as the engine wrote it.
        if method in SESSION_METHODS:
            answer = decode(reply)
            if isinstance(answer, dict) and answer.get("error") is None:
                await self._track(call, answer)
                if method == "sessions" and isinstance(answer.get("result"), list):
                    mine = [s for s in answer["result"] if str(s) in self.sessions()]
                    reply = rpc_result(request_id, mine)
        return reply if named else _without_session(reply, session)

    async def _track(self, call: Call, answer: Mapping[str, Any]) -> None:
        """Remember the sessions the client attaches, so they are detached when it goes."""
        if call.method == "attach":
            self.attached.add(call.session)
            await self.door.admitted(self, call.session)
        elif call.method == "detach":
            self.attached.discard(call.session)
        await self.door.answered(self, call, answer)

    async def close(self) -> None:
        for session in self.sessions():
            await self.engine.detach(session)


def _text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        value = cbor2.loads(raw)
    except (cbor2.CBORDecodeError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _without_session(reply: bytes, session: str) -> bytes:
    """The answer without the session key the bridge added to its request.

    The engine writes the session last, as a UUID (tag 37): cut it off the end without walking
    the answer, which may be a whole table; any other form is split and joined again."""
    ending = SESSION_KEY + _UUID_TAG + uuid.UUID(session).bytes
    if reply.endswith(ending) and 0xA1 <= reply[0] <= 0xB7:
        return bytes([reply[0] - 1]) + reply[1 : -len(ending)]
    try:
        answer = split_map(reply)
    except ValueError:
        return reply
    return join_map([(key, value) for key, value in answer if key != SESSION_KEY])


OriginCheck = Callable[[str], bool]


def _encoding(connection: ServerConnection, offered: Sequence[Subprotocol]) -> Subprotocol | None:
    """`cbor` or `json`, whichever the client offers first; a client that offers none speaks
    JSON, as to a server. Offering only other encodings (`flatbuffers`) is refused."""
    for name in offered:
        if name in SUBPROTOCOLS:
            return name
    if offered:
        raise NegotiationError(
            f"unsupported encoding {', '.join(offered)}: this listener speaks cbor and json"
        )
    return None


class Listener:
    """The WebSocket server: `/rpc` for the RPC, `/health` and `/version` over plain HTTP."""

    def __init__(
        self,
        engine: Engine,
        door: Doorkeeper,
        *,
        allows_origin: OriginCheck | None = None,
        server_header: str = "MemCastle (SurrealDB embedded engine)",
        yield_factor: float = 0.0,
    ) -> None:
        self.engine = engine
        self._door = door
        self._yield_factor = yield_factor
        self._resume_at = 0.0
        self._allows_origin = allows_origin
        self._server_header = server_header
        self._server: Server | None = None
        self._version = ""

    async def start(self, host: str, port: int) -> int:
        """Listen on `host:port` (0 for any free port) and return the bound port; an address
        that cannot be bound raises `OSError`."""
        self._version = await self.engine.version()
        self._server = await serve(
            self._handle,
            host,
            port,
            subprotocols=SUBPROTOCOLS,
            select_subprotocol=_encoding,
            process_request=self._route,
            max_size=None,
            # A server does not compress its frames; on loopback it would only cost CPU.
            compression=None,
            server_header=self._server_header,
        )
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def close(self) -> None:
        """Stop listening and close every open connection (each detaches its sessions)."""
        if self._server is None:
            return
        self._server.close(close_connections=True)
        await self._server.wait_closed()
        self._server = None

    def connection_count(self) -> int:
        return 0 if self._server is None else len(self._server.connections)

    def _route(self, connection: ServerConnection, request: Request) -> Response | None:
        origin = request.headers.get("Origin")
        path = request.path.split("?", 1)[0]
        refused = self._allows_origin is not None and not self._allows_origin(origin or "")
        if origin is not None and refused:
            logger.warning("disallowed origin %s refused on %s", origin, path)
            return connection.respond(HTTPStatus.FORBIDDEN, "disallowed origin\n")
        if path == RPC_PATH:
            return None
        if path == "/health":
            return connection.respond(HTTPStatus.OK, "")
        if path == "/version":
            return connection.respond(HTTPStatus.OK, self._version)
        return connection.respond(
            HTTPStatus.NOT_FOUND,
            f"{path} is not served here: this listener speaks SurrealDB's RPC over a WebSocket "
            f"at {RPC_PATH} only (plus GET /health and GET /version); run SurrealQL with the "
            "RPC `query` method\n",
        )

    async def _answer(self, connection: Connection, frame: bytes) -> bytes:
        """One request, after the pause the listener's previous one earned.

        An engine in this process holds the interpreter lock while it works, so clients that
        keep it busy (a whole table read in a loop) would starve the process's other work.
        After a request that took longer than `BUSY_SECS` the listener waits `yield_factor`
        times as long before it starts the next, on any connection."""
        pause = self._resume_at - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)
        started = time.monotonic()
        try:
            return await connection.forward(frame)
        finally:
            finished = time.monotonic()
            if finished - started > BUSY_SECS:
                self._resume_at = finished + (finished - started) * self._yield_factor

    async def _handle(self, websocket: ServerConnection) -> None:
        assert websocket.request is not None  # the handshake is done before the handler runs
        connection = Connection(self.engine, self._door, websocket.request.headers)
        as_json = websocket.subprotocol != "cbor"
        await connection.open()
        try:
            async for message in websocket:
                if as_json:
                    frame = _json_request(message)
                    if frame is None:
                        await websocket.send(
                            json.dumps({"error": {"code": -32700, "message": "Parse error"}})
                        )
                        continue
                    await websocket.send(_json_answer(await self._answer(connection, frame)))
                elif isinstance(message, str):
                    await websocket.close(CloseCode.UNSUPPORTED_DATA, "binary CBOR frames only")
                    return
                else:
                    await websocket.send(await self._answer(connection, message))
                if connection.close_reason is not None:
                    await websocket.close(CloseCode.POLICY_VIOLATION, connection.close_reason)
                    return
        except ConnectionClosed:
            pass
        finally:
            await asyncio.shield(connection.close())
