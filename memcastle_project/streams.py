"""`GET /api/events`: the server-sent events stream of change notices.

A plain async Django view returning a streaming response: it is cancelled as soon as the client
leaves, and holds no thread while it waits. Each frame is named by its kind and carries one JSON
object; a comment line keeps a quiet stream open through proxies; the stream ends when the
daemon shuts down.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse

from memcastle_project import runtime
from memcastle_project.api import method_not_allowed
from memcastle_project.context import MODE_HEADER, RequestContext
from memcastle_project.errors import MemCastleError
from memcastle_project.events import Subscription


def frame(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def _frames(subscription: Subscription, keepalive_secs: float) -> AsyncIterator[bytes]:
    try:
        yield frame("open", {"kind": "open", "keepalive_secs": keepalive_secs})
        while True:
            event = await subscription.next(keepalive_secs)
            if event is not None:
                yield frame(event.kind, dict(event.data))
            elif subscription.closed:
                return
            else:
                yield b": keep-alive\n\n"
    finally:
        subscription.cancel()


def _refusal(error: MemCastleError) -> JsonResponse:
    return JsonResponse(error.body(), status=error.status)


async def events(request: HttpRequest) -> HttpResponseBase:
    """A read under the memory mode: disabled is refused, read_only gets the same stream."""
    if request.method != "GET":
        response = _refusal(method_not_allowed(f'Method "{request.method}" not allowed.'))
        response["Allow"] = "GET"
        return response
    try:
        RequestContext.build(mode=request.headers.get(MODE_HEADER)).require_read("events")
    except MemCastleError as error:
        return _refusal(error)
    daemon = runtime.current()
    response = StreamingHttpResponse(
        _frames(daemon.events.subscribe(), daemon.config.events_keepalive_secs),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    # nginx would otherwise buffer the stream.
    response["X-Accel-Buffering"] = "no"
    return response
