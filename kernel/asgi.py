"""ASGI types and the one way an edge of the daemon answers with an error body before any view
runs (the token gate, `/mcp`'s own checks)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from kernel.errors import MemCastleError
from kernel.shapes import Error

# A message received is the server's dict; a message sent is only read, so any mapping will do.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
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
