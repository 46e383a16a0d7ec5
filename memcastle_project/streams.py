"""`GET /api/events`: the server-sent events stream of change notices.

A plain async Django view returning a streaming response: it is cancelled as soon as the client
leaves, and holds no thread while it waits. Each frame is named by its kind and carries one JSON
object; a comment line keeps a quiet stream open through proxies; the stream ends when the
daemon shuts down.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse

from kernel.context import MODE_HEADER, RequestContext
from kernel.errors import MemCastleError
from kernel.events import EventBus, Subscription
from kernel.rest import method_not_allowed
from kernel.shapes import Error


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
    return JsonResponse(Error.render(error.body()), status=error.status)


def event_stream(
    events: EventBus, keepalive_secs: float
) -> Callable[[HttpRequest], Coroutine[Any, Any, HttpResponseBase]]:
    """The view of `GET /api/events` on this daemon's event bus."""

    async def view(request: HttpRequest) -> HttpResponseBase:
        """A read under the memory mode: disabled is refused, read_only gets the same stream."""
        if request.method != "GET":
            refusal = _refusal(method_not_allowed(f'Method "{request.method}" not allowed.'))
            refusal["Allow"] = "GET"
            return refusal
        try:
            RequestContext.build(mode=request.headers.get(MODE_HEADER)).require_read("events")
        except MemCastleError as error:
            return _refusal(error)
        response = StreamingHttpResponse(
            _frames(events.subscribe(), keepalive_secs), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        # nginx would otherwise buffer the stream.
        response["X-Accel-Buffering"] = "no"
        return response

    return view


def document_event_stream(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: the stream is a plain Django view, which the generator does not
    see, so its operation is added to the OpenAPI document here."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    meanings = {
        "400": "an unknown X-MemCastle-Mode value",
        "401": "missing or wrong bearer token (authentication enabled)",
        "403": "the memory mode is disabled",
        "500": "server failure; the detail is in the daemon log",
    }
    result["paths"]["/api/events"] = {
        "get": {
            "operationId": "events_stream",
            "summary": "Server-sent events: what changed (jobs, wings, rooms, drawers), by id",
            "tags": ["events"],
            "parameters": [
                {
                    "in": "header",
                    "name": MODE_HEADER,
                    "schema": {"type": "string", "enum": ["full", "read_only", "disabled"]},
                    "description": "memory mode of this request; full when absent",
                }
            ],
            "responses": {
                "200": {
                    "description": "an `open` frame, then one frame per change, a "
                    "comment line when quiet; ends when the daemon stops",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                **{
                    status: {"description": meaning, "content": error}
                    for status, meaning in meanings.items()
                },
            },
        }
    }
    return result
