"""`/mcp` on the daemon's listener: streamable HTTP through the SDK's session manager.

Daphne has no ASGI lifespan, so the session manager's `run()` starts with the first request and
stops when the daemon drains: new requests are refused from then on, calls in flight finish,
then the sessions and their streams are closed. The token check is the gate's, in front of
everything; the Host check is this endpoint's own, because a browser page on another name that
resolves here (DNS rebinding) must not reach an agent's memory even where auth is off.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from kernel.asgi import Receive, Scope, Send, send_error
from kernel.errors import MAX_BODY_BYTES, BodyTooLarge, MemCastleError
from mcp_bridge.server import build_server
from mcp_bridge.tools import ToolServices

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")
# A session is forgotten, with its mode, after this long without a request (docs/mcp.md,
# "Sessions and memory modes").
SESSION_IDLE_SECS = 300.0


def header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return value.decode("latin-1")
    return None


def host_name(scope: Scope) -> str | None:
    """The Host header without its port."""
    host = header(scope, b"host")
    if host is None:
        return None
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def too_large(scope: Scope) -> bool:
    """A declared length over the limit; a chunked body is held to it by the SDK as it reads."""
    length = header(scope, b"content-length")
    return length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES


def wants_stream(scope: Scope) -> bool:
    return "text/event-stream" in (header(scope, b"accept") or "")


class HostRefused(MemCastleError):
    status = 421
    code = "memcastle::mcp::host_refused"
    help = "connect to /mcp as localhost, 127.0.0.1 or [::1]"


class StreamNotAccepted(MemCastleError):
    status = 406
    code = "memcastle::mcp::not_acceptable"
    help = (
        "/mcp speaks MCP over streamable HTTP: connect an MCP client to it "
        "(a GET must accept text/event-stream)"
    )


class ShuttingDown(MemCastleError):
    status = 503
    code = "memcastle::server::shutting_down"
    help = "the daemon is stopping; start it again and reconnect"


def headers_at_once(send: Send) -> Send:
    """Send a response's headers as soon as it starts. Daphne (Twisted) writes them with the
    first body bytes, and an idle session's standing GET stream has none until the SDK's
    keep-alive 15 s later: a client saw no answer to its GET for that long."""

    async def sending(message: Mapping[str, Any]) -> None:
        await send(message)
        if message["type"] == "http.response.start":
            await send({"type": "http.response.body", "body": b"", "more_body": True})

    return sending


class McpEndpoint:
    """The ASGI application mounted at /mcp."""

    def __init__(self, services: ToolServices) -> None:
        self.services = services
        self.manager: StreamableHTTPSessionManager | None = None
        self._started = asyncio.Event()
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._closing = False
        self._calls_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = host_name(scope)
        if host not in LOOPBACK_NAMES:
            return await send_error(send, HostRefused(f"the Host {host!r} is not a loopback name"))
        if self._closing:
            return await send_error(send, ShuttingDown("the daemon is shutting down"))
        if too_large(scope):
            return await send_error(send, BodyTooLarge())
        if scope.get("method") == "GET" and not wants_stream(scope):
            return await send_error(send, StreamNotAccepted("a GET of /mcp is an event stream"))
        manager = await self._running()
        # A GET is the session's standing stream, open until the session ends; only other
        # requests are calls that a drain waits for.
        counted = scope.get("method") != "GET"
        self._calls_in_flight += counted
        try:
            await manager.handle_request(scope, receive, send if counted else headers_at_once(send))
        finally:
            self._calls_in_flight -= counted
            self._stop_when_idle()

    def close(self) -> None:
        """Refuse new requests; end the sessions once the calls in flight are answered.
        Called on the event loop's thread when the daemon starts draining."""
        self._closing = True
        self._stop_when_idle()

    async def _running(self) -> StreamableHTTPSessionManager:
        if self._runner is None:
            # Calls are answered with plain JSON, not a one-event SSE stream: no tool sends
            # anything before its answer, and the stream cost 1.7 ms more per call here
            # (bench/mcp.py, docs/benchmarks.md). The session's GET stream stays SSE.
            self.manager = StreamableHTTPSessionManager(
                build_server(self.services),
                session_idle_timeout=SESSION_IDLE_SECS,
                json_response=True,
                max_request_body_size=MAX_BODY_BYTES,
            )
            self._runner = asyncio.create_task(self._run(self.manager))
        await self._started.wait()
        assert self.manager is not None
        return self.manager

    async def _run(self, manager: StreamableHTTPSessionManager) -> None:
        async with manager.run():
            self._started.set()
            await self._stop.wait()
        logger.info("MCP sessions closed")

    def _stop_when_idle(self) -> None:
        if self._closing and self._calls_in_flight == 0:
            self._stop.set()
