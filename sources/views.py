"""REST views for mining sources: parse, call `SourceService`, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import MODE_PARAMETER, MemCastleView, errors, request_context, service
from sources.services import SourceService

ADAPTER = inline_serializer(
    "SourceAdapter",
    {
        "name": serializers.CharField(),
        "description": serializers.CharField(),
        "capabilities": inline_serializer(
            "SourceCapabilities",
            {
                "incremental": serializers.BooleanField(),
                "retains_raw": serializers.BooleanField(),
                "needs_credentials": serializers.BooleanField(),
            },
        ),
        "origin": serializers.ChoiceField(["builtin", "package", "bundled", "registry", "plugin"]),
        "options": serializers.ListField(
            child=inline_serializer(
                "SourceOption",
                {
                    "name": serializers.CharField(),
                    "description": serializers.CharField(),
                    "type": serializers.ChoiceField(["string", "path", "date"]),
                    "breadth": serializers.ChoiceField(
                        ["include", "opt_in_include", "exclude", "since"], required=False
                    ),
                },
            )
        ),
    },
)
MINED = inline_serializer(
    "MinedSource",
    {
        "id": serializers.CharField(),
        "source": serializers.CharField(help_text="the adapter that reads it"),
        "account": serializers.CharField(allow_null=True),
        "locator": serializers.CharField(help_text="the place, e.g. the directory's path"),
        "cursor": serializers.JSONField(allow_null=True, help_text="where the next run starts"),
        "last_job": serializers.CharField(allow_null=True),
        "last_run_at": serializers.DateTimeField(allow_null=True),
        "documents": serializers.IntegerField(help_text="documents read from it so far"),
    },
)


class SourcesView(MemCastleView):
    sources: SourceService = service()

    @extend_schema(
        summary="The mining sources this daemon has, and the places mined",
        parameters=[MODE_PARAMETER],
        responses={
            200: inline_serializer(
                "Sources",
                {
                    "adapters": serializers.ListField(child=ADAPTER),
                    "sources": serializers.ListField(child=MINED),
                },
            ),
            **errors(403),
        },
    )
    def get(self, request: Request) -> Response:
        return Response(self.sources.list_sources(request_context(request)))
