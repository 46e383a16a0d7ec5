"""The database console: SurrealDB's own protocol onto the live embedded palace.

Only the daemon may open the embedded palace (the engine locks it), so SurrealDB's tools reach
it through the daemon: `POST /api/db` opens a second listener that speaks SurrealDB's RPC over
WebSocket (`kernel.rpc_bridge`) onto the daemon's own engine handle, and `DELETE /api/db` or the
daemon's shutdown closes it with every open connection. Nothing opens it on its own.

The listener runs on a thread of its own with its own event loop, so a console query never
waits behind the daemon's requests in the ASGI loop, nor they behind it; the engine calls run
on one more thread, one at a time (the embedded engine holds the interpreter lock while it
works, so a second one would only queue).

The security model (docs/database.md): loopback unless `allow_remote` and authentication are
both on; with authentication on, a connection may only sign in (any user name, the API token as
the password, checked by the same `TokenService` as every REST request) or send a Bearer header
on the upgrade, and five refused sign-ins close it; an `Origin` other than a page of this
machine or an exact `allowed_origins` entry is refused on every route.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import errno
import ipaddress
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kernel.config import Config, is_loopback, origins_value
from kernel.context import RequestContext
from kernel.errors import Conflict, InputInvalid, MemCastleError
from kernel.rpc_bridge import (
    Call,
    Connection,
    Engine,
    EngineError,
    Listener,
    rpc_error,
    rpc_result,
)
from kernel.store import Store
from kernel.validation import body_object, refuse_unknown
from memcastle_project.auth import TokenService
from memcastle_project.shapes import DatabaseConsoleAnswer

logger = logging.getLogger("memcastle.db")

NAMESPACE = "memcastle"
DATABASE = "palace"
# The user name the answer suggests; with authentication any name signs in with the token.
USER = "memcastle"
# The engine's root user the console signs admitted sessions in as: its password is random,
# made when the console opens and known only to this process; the user is removed on close.
INTERNAL_USER = "memcastle_console"
MAX_REFUSED_SIGNINS = 5
FIELDS = ("bind", "port", "allow_remote", "allowed_origins", "requested_by")
START_TIMEOUT_SECS = 30.0
# The embedded engine holds the interpreter lock while it works, so a console client reading
# whole tables in a loop would starve the daemon's own requests. After each request the console
# waits this many times as long before its next one: the daemon keeps at least two thirds of the
# interpreter (bench/db_console.py measures the REST latency meanwhile).
YIELD_FACTOR = 2.0

SUPPORTED = frozenset(
    {
        "query",
        "use",
        "let",
        "unset",
        "info",
        "version",
        "ping",
        "signin",
        "authenticate",
        "invalidate",
        "reset",
        "attach",
        "detach",
        "sessions",
    }
)
# What a connection may call before it signs in.
HANDSHAKE = frozenset({"ping", "version", "use", "signin", "authenticate", "invalidate", "reset"})
_PER_RECORD = (
    "per-record methods are not offered by the MemCastle console: run the SurrealQL statement "
    "with `query` instead (SELECT, CREATE, UPDATE, UPSERT, INSERT, RELATE, DELETE)"
)
_TRANSACTIONS = (
    "protocol transactions are not offered by the MemCastle console: send "
    "BEGIN; ...; COMMIT; inside one `query`"
)
_LIVE = (
    "live queries are not offered by the MemCastle console: run the query again, or follow "
    "the palace's changes with MemCastle's GET /api/events"
)
GUIDANCE = {
    "live": _LIVE,
    "kill": _LIVE,
    "begin": _TRANSACTIONS,
    "commit": _TRANSACTIONS,
    "cancel": _TRANSACTIONS,
    **dict.fromkeys(
        (
            "select",
            "create",
            "insert",
            "insert_relation",
            "update",
            "upsert",
            "merge",
            "patch",
            "relate",
            "delete",
        ),
        _PER_RECORD,
    ),
    "signup": "sign-up is not offered: sign in with any user name and the MemCastle API token "
    "as the password",
    "run": "functions are called from SurrealQL with `query` (RETURN fn::name(...))",
}
SIGN_IN_HELP = "sign in with any user name and the MemCastle API token as the password"


@dataclass(frozen=True)
class ConsoleRequest:
    """Where to open the console, and which web pages may reach it."""

    bind: str
    port: int
    allow_remote: bool
    allowed_origins: tuple[str, ...]
    # The fields the request gave; a repeat is compared on these only.
    asked: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, body: object, config: Config, daemon_port: int) -> ConsoleRequest:
        """The body of `POST /api/db`; what it leaves out comes from `[db]`. The console may
        not take the port the daemon listens on."""
        data = body_object(body)
        refuse_unknown(data, FIELDS)
        defaults = config.db
        return cls(
            bind=_bind(data.get("bind", defaults.bind)),
            port=_port(data.get("port", defaults.port), daemon_port),
            allow_remote=_flag(data.get("allow_remote", defaults.allow_remote)),
            allowed_origins=_origins(data.get("allowed_origins", defaults.allowed_origins)),
            asked=frozenset(data) - {"requested_by"},
        )


def _bind(raw: object) -> str:
    if not isinstance(raw, str):
        raise InputInvalid("bind", "must be an IP address such as 127.0.0.1")
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        raise InputInvalid(
            "bind", f"must be an IP address such as 127.0.0.1 or ::1, not {raw!r}"
        ) from None


def _port(raw: object, daemon_port: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 65535:
        raise InputInvalid("port", f"must be a port number from 0 to 65535 (got {raw!r})")
    if raw != 0 and raw == daemon_port:
        raise InputInvalid(
            "port",
            f"is the daemon's own port ({daemon_port}); give the console another, or 0 for any",
        )
    return raw


def _flag(raw: object) -> bool:
    if not isinstance(raw, bool):
        raise InputInvalid("allow_remote", "must be true or false")
    return raw


def _origins(raw: object) -> tuple[str, ...]:
    if isinstance(raw, str):
        raise InputInvalid("allowed_origins", "must be a list of origins")
    try:
        return origins_value(raw)
    except ValueError as exc:
        raise InputInvalid("allowed_origins", f"must be a list of {exc}") from None


def from_this_machine(origin: str) -> bool:
    """A page served from this machine: an http(s) origin whose host is a loopback name."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https"):
        return False
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ConsoleDoor:
    """The console's rules for a connection: what it may call, and how it signs in."""

    def __init__(self, console: _OpenConsole) -> None:
        self.console = console

    async def admitted(self, connection: Connection, session: str) -> None:
        await connection.engine.call("use", [NAMESPACE, DATABASE], session)
        if not self.console.auth_required or await self._bearer(connection):
            await self._sign_in(connection, session)

    async def answer(self, connection: Connection, call: Call) -> bytes | None:
        method = call.method
        if method is None:
            return None
        if method not in SUPPORTED:
            guidance = GUIDANCE.get(
                method,
                f"`{method}` is not offered by the MemCastle console; it answers "
                + ", ".join(sorted(SUPPORTED)),
            )
            return rpc_error(call.request_id, guidance, code=-32601, kind="NotAllowed")
        if method in ("signin", "authenticate"):
            return await self._presented(connection, call)
        if method not in HANDSHAKE and not _signed_in(connection, call):
            return rpc_error(
                call.request_id, f"not signed in: {SIGN_IN_HELP}", code=-32002, kind="NotAllowed"
            )
        return None

    async def answered(self, connection: Connection, call: Call, reply: Mapping[str, Any]) -> None:
        if call.method not in ("invalidate", "reset"):
            return
        connection.signed_in.discard(call.session)
        if not self.console.auth_required:
            await self._sign_in(connection, call.session)
        if call.method == "reset":
            await connection.engine.call("use", [NAMESPACE, DATABASE], call.session)

    async def _presented(self, connection: Connection, call: Call) -> bytes:
        """`signin` with any user name and the token as the password, or `authenticate` with
        the token."""
        credential = _credential(call)
        if self.console.auth_required and not (
            credential and await self.console.verify(f"Bearer {credential}")
        ):
            connection.refused_signins += 1
            logger.warning(
                "database console: a sign-in was refused (%d of %d on this connection)",
                connection.refused_signins,
                MAX_REFUSED_SIGNINS,
            )
            if connection.refused_signins >= MAX_REFUSED_SIGNINS:
                connection.close_reason = "too many refused sign-ins"
            return rpc_error(
                call.request_id,
                f"There was a problem with authentication: {SIGN_IN_HELP}",
                code=-32002,
                kind="NotAllowed",
            )
        await self._sign_in(connection, call.session)
        # A client keeps what `signin` answers to authenticate again after a reconnect; it is
        # the credential it presented, checked again then, so a revoked token stops working.
        return rpc_result(
            call.request_id, (credential or USER) if call.method == "signin" else None
        )

    async def _bearer(self, connection: Connection) -> bool:
        header = connection.headers.get("Authorization")
        return header is not None and await self.console.verify(header)

    async def _sign_in(self, connection: Connection, session: str) -> None:
        await connection.engine.sign_in_internally(session)
        connection.signed_in.add(session)


def _signed_in(connection: Connection, call: Call) -> bool:
    """Whether the session a call is for is signed in; a new session (`attach`) takes the
    connection's own."""
    session = connection.session if call.method == "attach" else call.session
    return session in connection.signed_in


def _credential(call: Call) -> str | None:
    params = call.params()
    first = params[0] if params else None
    if call.method == "authenticate":
        return first if isinstance(first, str) and first else None
    if not isinstance(first, dict):
        return None
    password = first.get("pass", first.get("password"))
    return password if isinstance(password, str) and password else None


class _OpenConsole:
    """One open console: its thread, event loop, engine thread and listener."""

    def __init__(
        self, store: Store, tokens: TokenService, request: ConsoleRequest, *, auth_required: bool
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.request = request
        self.auth_required = auth_required
        self.started_at = dt.datetime.now(dt.UTC)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._engine_thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="memcastle-db-engine"
        )
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="memcastle-db-console", daemon=True
        )
        self.engine = Engine(self._execute, internal_user=INTERNAL_USER)
        self.listener = Listener(
            self.engine,
            ConsoleDoor(self),
            allows_origin=self.allows_origin,
            yield_factor=YIELD_FACTOR,
        )

    def allows_origin(self, origin: str) -> bool:
        return origin in self.request.allowed_origins or from_this_machine(origin)

    async def _execute(self, frame: bytes) -> bytes:
        return await self._loop.run_in_executor(self._engine_thread, self.store.rpc, frame)

    async def verify(self, authorization: str) -> bool:
        return await self._loop.run_in_executor(
            self._engine_thread, self.tokens.verify, authorization
        )

    def start(self) -> None:
        """Bind the listener; an address that cannot be bound raises `OSError`."""
        self._thread.start()
        try:
            self._run(self._open())
        except BaseException:
            self.stop()
            raise

    async def _open(self) -> None:
        await self.engine.define_internal_user()
        self.port = await self.listener.start(self.request.bind, self.request.port)

    def stop(self) -> None:
        """Close the listener and every connection, remove the internal user, end the thread."""
        if self._thread.is_alive():
            try:
                self._run(self._close())
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout=START_TIMEOUT_SECS)
        self._engine_thread.shutdown(wait=True)
        self._loop.close()

    async def _close(self) -> None:
        await self.listener.close()
        try:
            await self.engine.remove_internal_user()
        except (EngineError, MemCastleError) as exc:
            logger.warning("the database console's internal user was not removed: %s", exc)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(START_TIMEOUT_SECS)

    def addr(self) -> str:
        host = self.request.bind
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


class DatabaseConsole:
    """`/api/db`: open, report and close the console. Outside the memory modes."""

    def __init__(
        self, config: Config, store: Store, tokens: TokenService, *, daemon_port: int
    ) -> None:
        self.config = config
        self.store = store
        self.tokens = tokens
        self.daemon_port = daemon_port
        self._open: _OpenConsole | None = None
        self._lock = threading.Lock()

    def open(self, ctx: RequestContext, body: object) -> dict[str, Any]:
        request = ConsoleRequest.parse(body, self.config, self.daemon_port)
        with self._lock:
            if self.store.mode != "embedded":
                raise MemCastleError(
                    "the palace is on a remote SurrealDB server, which the daemon does not own: "
                    "there is no embedded palace to open a console onto",
                    code="memcastle::db::unavailable",
                    status=409,
                    help=f"point SurrealDB's tools at that server ({self.config.store.url})",
                )
            if self._open is not None:
                return self._repeat(self._open, request)
            if not is_loopback(request.bind) and not (
                request.allow_remote and self.config.auth_enabled
            ):
                raise MemCastleError(
                    f"`bind` {request.bind} is not a loopback address: the console would be "
                    "reachable from other machines, with the token sent in cleartext",
                    code="memcastle::db::unsafe_bind",
                    status=400,
                    help="bind 127.0.0.1, or set allow_remote with authentication enabled "
                    "(auth.enabled) and put a TLS proxy in front",
                )
            console = _OpenConsole(
                self.store, self.tokens, request, auth_required=self.config.auth_enabled
            )
            try:
                console.start()
            except OSError as exc:
                raise _bind_failed(request, exc) from None
            self._open = console
        if not is_loopback(request.bind):
            logger.warning(
                "the database console listens on %s, reachable from other machines: its "
                "sign-ins carry the API token in cleartext",
                console.addr(),
            )
        logger.info(
            "database console opened on ws://%s (requested by %s)",
            console.addr(),
            ctx.requested_by,
        )
        return self._answer(console)

    def _repeat(self, console: _OpenConsole, request: ConsoleRequest) -> dict[str, Any]:
        """A second open: the open console when it asks for nothing different (a field it
        leaves out asks for nothing; a port of 0 is any port)."""
        opened = console.request
        different = [
            name
            for name, same in (
                ("bind", request.bind == opened.bind),
                ("port", request.port in (0, console.port)),
                ("allowed_origins", set(request.allowed_origins) == set(opened.allowed_origins)),
                ("allow_remote", request.allow_remote == opened.allow_remote),
            )
            if name in request.asked and not same
        ]
        if different:
            raise Conflict(
                f"the database console is already open on ws://{console.addr()} with another "
                + " and ".join(different),
                code="memcastle::db::already_running",
                help="use the open console, or close it first (memcastle db stop)",
            )
        return self._answer(console, already_running=True)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return self._answer(self._open)

    def close(self) -> dict[str, Any]:
        """Close the console and every open connection; closing a closed one succeeds."""
        with self._lock:
            console, self._open = self._open, None
            if console is not None:
                console.stop()
                logger.info("database console on ws://%s closed", console.addr())
            return self._answer(None)

    def _answer(
        self, console: _OpenConsole | None, *, already_running: bool = False
    ) -> dict[str, Any]:
        """Where the console listens, or that it is closed (`console` None)."""
        addr = console.addr() if console is not None else None
        return DatabaseConsoleAnswer.render(
            {
                "running": console is not None,
                "addr": addr,
                "url": f"ws://{addr}" if addr is not None else None,
                "namespace": NAMESPACE,
                "database": DATABASE,
                "user": USER,
                "remote": console is not None and not is_loopback(console.request.bind),
                "auth_required": self.config.auth_enabled,
                "started_at": console.started_at if console is not None else None,
                "already_running": already_running,
            }
        )


def _bind_failed(request: ConsoleRequest, exc: OSError) -> MemCastleError:
    taken = exc.errno == errno.EADDRINUSE
    reason = "is already in use" if taken else f"cannot be bound ({exc.strerror or exc})"
    return Conflict(
        f"the database console's address {request.bind}:{request.port} {reason}",
        code="memcastle::db::bind_failed",
        help="choose another port with --port (0 for any free port)"
        if taken
        else "bind an address of this machine, such as 127.0.0.1",
    )
