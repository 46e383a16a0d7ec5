"""The bearer-token check, once for every HTTP request at the ASGI edge.

The gate wraps the whole ASGI application, so REST, `/mcp` and unknown paths share one check
(an unknown path without a token is a 401, not a 404).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from memcastle_project import runtime
from memcastle_project.errors import MemCastleError, Unauthorized

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _is_open(scope: Scope, web_enabled: bool) -> bool:
    """The liveness probe, and the dashboard's static files when they are served."""
    method, path = scope.get("method"), scope.get("path", "")
    if method == "GET" and path == "/api/health":
        return True
    return web_enabled and method in ("GET", "HEAD") and (path == "/ui" or path.startswith("/ui/"))


async def send_error(send: Send, error: MemCastleError, headers: list | None = None) -> None:
    body = json.dumps(error.body()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class TokenGate:
    """ASGI middleware: refuses any HTTP request without a valid token when auth is enabled."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        daemon = runtime.current()
        tokens = daemon.tokens
        if scope["type"] != "http" or not tokens.enabled:
            return await self.app(scope, receive, send)
        if _is_open(scope, daemon.config.web_enable):
            return await self.app(scope, receive, send)
        authorization = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                authorization = value.decode("latin-1")
        if await asyncio.to_thread(tokens.verify, authorization):
            return await self.app(scope, receive, send)
        await send_error(
            send,
            Unauthorized("a valid bearer token is required"),
            [(b"www-authenticate", b"Bearer")],
        )
