"""REST views of the daemon itself: health, status, configuration, shutdown, the API token and
the database console."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import (
    MemCastleView,
    administrative_context,
    errors,
    refuse_body_fields,
    request_context,
    service,
)
from memcastle_project.auth import TokenService
from memcastle_project.configuration import ConfigurationReport
from memcastle_project.console import DatabaseConsole
from memcastle_project.shapes import (
    DatabaseConsoleAnswer,
    EffectiveConfig,
    Health,
    Revoked,
    Shutdown,
    StatusReport,
    Token,
)
from memcastle_project.system import SystemService, health


@extend_schema_field({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})
class IPAddress(serializers.CharField):
    """An IPv4 or IPv6 address, as the database console's `bind` is checked."""


class HealthView(MemCastleView):
    @extend_schema(
        summary="Liveness probe; always open, never touches the datastore",
        responses={200: Health},
    )
    def get(self, request: Request) -> Response:
        return Response(health())


class StatusView(MemCastleView):
    system: SystemService = service()

    @extend_schema(
        summary="Status report (an unhealthy datastore is reported inside a 200)",
        responses={200: StatusReport, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        return Response(self.system.status(request_context(request)))


class ConfigView(MemCastleView):
    configuration: ConfigurationReport = service()

    @extend_schema(
        summary="The effective configuration, every secret left out (never mode-gated)",
        responses={200: EffectiveConfig, **errors()},
    )
    def get(self, request: Request) -> Response:
        return Response(self.configuration.show())


class ShutdownView(MemCastleView):
    system: SystemService = service()

    @extend_schema(
        summary="Stop the daemon gracefully",
        request=None,
        responses={202: Shutdown},
    )
    def post(self, request: Request) -> Response:
        return Response(self.system.shutdown(), status=202)


class TokenView(MemCastleView):
    tokens: TokenService = service()

    @extend_schema(
        summary="Generate the API token (shown once; replaces the previous one)",
        request=None,
        responses={201: Token, **errors(400)},
    )
    def post(self, request: Request) -> Response:
        refuse_body_fields(request)
        ctx = administrative_context(request, body=request.data)
        answer = self.tokens.generate(ctx)
        response = Response(answer, status=201)
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(
        summary="Revoke the generated API token (the configured secret is unaffected)",
        request=None,
        responses={200: Revoked, **errors(400)},
    )
    def delete(self, request: Request) -> Response:
        return Response(self.tokens.revoke(administrative_context(request)))


class DatabaseConsoleView(MemCastleView):
    console: DatabaseConsole = service()

    @extend_schema(
        summary="Where the database console listens, if it is open",
        responses={200: DatabaseConsoleAnswer, **errors()},
    )
    def get(self, request: Request) -> Response:
        return Response(self.console.status())

    @extend_schema(
        summary="Open the database console: SurrealDB's RPC onto the live embedded palace "
        "(200 with already_running when it is open as asked)",
        request=inline_serializer(
            "DatabaseConsoleOpen",
            {
                "bind": IPAddress(required=False, help_text="an IP address"),
                "port": serializers.IntegerField(
                    required=False, min_value=0, max_value=65535, help_text="0 for any free port"
                ),
                "allow_remote": serializers.BooleanField(required=False),
                "allowed_origins": serializers.ListField(
                    child=serializers.CharField(), required=False
                ),
                "requested_by": serializers.CharField(required=False),
            },
        ),
        responses={200: DatabaseConsoleAnswer, 201: DatabaseConsoleAnswer, **errors(400, 409)},
    )
    def post(self, request: Request) -> Response:
        ctx = administrative_context(request, body=request.data)
        answer = self.console.open(ctx, request.data)
        return Response(answer, status=200 if answer["already_running"] else 201)

    @extend_schema(
        summary="Close the database console and every open connection (a closed one is fine)",
        request=None,
        responses={200: DatabaseConsoleAnswer, **errors()},
    )
    def delete(self, request: Request) -> Response:
        return Response(self.console.close())
