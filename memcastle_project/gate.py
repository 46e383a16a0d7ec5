"""The bearer-token check, once for every HTTP request at the ASGI edge.

The gate wraps the whole ASGI application, so REST, `/mcp` and unknown paths share one check
(an unknown path without a token is a 401, not a 404).
"""

from __future__ import annotations

import asyncio

from kernel.asgi import ASGIApp, Receive, Scope, Send, send_error
from kernel.errors import Unauthorized
from memcastle_project.auth import TokenService


def _is_open(scope: Scope, web_enabled: bool) -> bool:
    """The liveness probe, and the dashboard's static files when they are served."""
    method, path = scope.get("method"), scope.get("path", "")
    if method == "GET" and path == "/api/health":
        return True
    return web_enabled and method in ("GET", "HEAD") and (path == "/ui" or path.startswith("/ui/"))


class TokenGate:
    """ASGI middleware: refuses any HTTP request without a valid token when auth is enabled."""

    def __init__(self, app: ASGIApp, tokens: TokenService, *, web_enabled: bool) -> None:
        self.app = app
        self.tokens = tokens
        self.web_enabled = web_enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tokens = self.tokens
        if scope["type"] != "http" or not tokens.enabled:
            return await self.app(scope, receive, send)
        if _is_open(scope, self.web_enabled):
            return await self.app(scope, receive, send)
        authorization = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                authorization = value.decode("latin-1")
        # The configured secret is checked here; only the generated token needs the store, so
        # only it costs a hop to a thread (0.1-0.3 ms a request, measured).
        if tokens.verify_secret(authorization) or await asyncio.to_thread(
            tokens.verify, authorization
        ):
            return await self.app(scope, receive, send)
        await send_error(
            send,
            Unauthorized("a valid bearer token is required"),
            [(b"www-authenticate", b"Bearer")],
        )
