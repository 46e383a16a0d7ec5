"""The ASGI application Daphne serves: the token gate, then `/mcp` to the MCP endpoint and
everything else to Django, each bound to the daemon's services."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import closing
from typing import IO, Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.routing import ProtocolTypeRouter
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, ASGIRequest, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.db import close_old_connections, reset_queries
from django.http import HttpResponse, HttpResponseBase
from django.urls import set_script_prefix

from kernel.asgi import Receive, Scope, Send
from mcp_bridge.endpoint import McpEndpoint
from memcastle_project.composition import Services
from memcastle_project.gate import TokenGate
from memcastle_project.urls import URLConf

# Routes that hold their request open: the event stream (an async view, streaming for as long
# as the client listens) and a sign-in's long poll (up to 25 s). They keep Django's own path,
# which runs a sync view on a thread of its own: on the one thread every other view shares, a
# wait would stall the whole daemon until it ended.
HELD_OPEN = re.compile(r"/api/(?:events|source-packages/[^/]+/auth/[^/]+/wait)")


class DjangoApp(ASGIHandler):
    """Django's ASGI handler, with each request's sync work in one hop to one long-lived thread.

    The stock handler opens a `ThreadSensitiveContext` per request, which starts (and joins) a
    new thread for every request's sync view. Without it, asgiref runs thread-sensitive code on
    its single shared thread, which also suits the one store connection the views share.
    Measured on 2 cores: /api/health 3.4 -> 2.5 ms median, a drawer by id 4.9 -> 3.5 ms
    (docs/benchmarks-history.md, "Hierarchy and REST reads").

    The stock handler then hops to that thread twice: once for the view, once more, after the
    response is sent, to close it. The second hop waits for the interpreter lock behind the
    event loop, and the next request's view waits behind it: measured in the daemon, 0.84 ms
    median and 3.1 at p75 from the response sent to the request done. So the view, the
    rendering and the close run in one hop (`_respond`), and a whole body goes out with its
    `Content-Length` rather than chunked.
    """

    def __init__(self, urlconf: URLConf) -> None:
        super().__init__()
        self.urlconf = urlconf
        self._sync_handler = BaseHandler()
        self._sync_handler.load_middleware(is_async=False)

    async def __call__(
        self,
        scope: Scope,
        # Django's handler reads whatever mapping it receives.
        receive: Callable[[], Awaitable[Mapping[str, Any]]],
        send: Send,
    ) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}")
        if HELD_OPEN.fullmatch(scope["path"]):
            # A context of its own: a sync view in it runs on a thread of its own.
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        with closing(body_file):
            response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
        await self.send_response(response, send)
        if response.streaming:
            await sync_to_async(response.close, thread_sensitive=True)()

    def create_request(
        self, scope: Mapping[str, Any], body_file: IO[bytes]
    ) -> tuple[ASGIRequest, None] | tuple[None, HttpResponseBase]:
        """The request, routed by this daemon's URL configuration, whose views are bound to its
        services (Django reads `request.urlconf` before `ROOT_URLCONF`)."""
        created = super().create_request(scope, body_file)
        if created[0] is not None:
            # The stubs say a module path; Django takes any object with `urlpatterns` and the
            # error handlers (`URLResolver.urlconf_module`), which is what `URLConf` is.
            created[0].urlconf = self.urlconf  # type: ignore[assignment]
        return created

    def _respond(self, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """The response, rendered and, unless it streams, closed (Django's `request_finished`
        fires here, before the bytes are sent: nothing in MemCastle listens for it)."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        created = self.create_request(scope, body_file)
        response = created[1] if created[0] is None else self._sync_handler.get_response(created[0])
        if isinstance(response, HttpResponse):
            # Not streamed: sent whole, with its length.
            response["Content-Length"] = str(len(response.content))
            response.close()
        return response


def _drop_database_signal_receivers() -> None:
    """MemCastle has no Django database, yet Django connects `close_old_connections` and
    `reset_queries` to every request's start and end; under ASGI each sync receiver costs a
    thread hop. Measured on 2 cores, 4 alternating runs: a drawer read by id, client side,
    4.7 -> 3.6 ms median."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_started.disconnect(reset_queries)
    signals.request_finished.disconnect(close_old_connections)


class McpOrDjango:
    """`/mcp` to the MCP endpoint, every other path to Django."""

    def __init__(self, mcp: McpEndpoint, django_app: DjangoApp) -> None:
        self.mcp = mcp
        self.django_app = django_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] in ("/mcp", "/mcp/"):
            return await self.mcp(scope, receive, send)
        return await self.django_app(scope, receive, send)


class Application:
    """The daemon's ASGI application, on its services."""

    def __init__(self, services: Services) -> None:
        self.mcp = McpEndpoint(services)
        django_app = DjangoApp(URLConf(services))
        self.app = TokenGate(
            ProtocolTypeRouter({"http": McpOrDjango(self.mcp, django_app)}),
            services.tokens,
            web_enabled=services.config.web_enable,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


django.setup(set_prefix=False)
_drop_database_signal_receivers()
