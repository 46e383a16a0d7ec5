"""ASGI types and the one way an edge of the daemon answers with an error body before any view
runs (the token gate, `/mcp`'s own checks)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from kernel.errors import MemCastleError
from kernel.shapes import Error

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_error(
    send: Send, error: MemCastleError, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(Error.render(error.body())).encode()
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
