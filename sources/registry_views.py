"""REST views for source registries (`/api/source-registry`): parse, call `SourceRegistry`,
render.

None of them is gated by the memory mode, which guards memory, not the daemon's sources (like
`/api/source-packages`); none has an MCP tool: an agent cannot fetch or install code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.errors import InputInvalid
from kernel.rest import MemCastleView, errors, service
from kernel.validation import body_object, optional_text, refuse_unknown
from sources.registry import SourceRegistry
from sources.shapes import RegistryPreview, RegistrySearch, RegistryUpdate, SourceInstalled

REGISTRY_HELP = (
    "a registry to ask instead of mining.registries: an https:// URL, an http:// URL of this "
    "machine, a file:// URL or an absolute path"
)
REGISTRY_PARAMETER = OpenApiParameter("registry", str, description=REGISTRY_HELP)
CONSENT_HELP = "the digest of the permissions agreed to (the refusal names it)"


class RegistryInstall(serializers.Serializer):
    consent = serializers.CharField(required=False, help_text=CONSENT_HELP)
    enable = serializers.BooleanField(required=False, help_text="enable it once installed")
    registry = serializers.CharField(required=False, help_text=REGISTRY_HELP)
    requested_by = serializers.CharField(required=False)


class RegistryUpdateBody(serializers.Serializer):
    check = serializers.BooleanField(
        required=False, help_text="only say whether a newer version is offered"
    )
    consent = serializers.CharField(required=False, help_text=CONSENT_HELP)
    registry = serializers.CharField(required=False, help_text=REGISTRY_HELP)
    requested_by = serializers.CharField(required=False)


def _fields(request: Request, serializer: type[serializers.Serializer]) -> Mapping[str, Any]:
    """The body's fields, refusing one the route does not take."""
    data = body_object(request.data)
    refuse_unknown(data, tuple(serializer().fields))
    return data


def _flag(data: Mapping[str, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise InputInvalid(name, "must be true or false")
    return value


class SourceRegistryView(MemCastleView):
    registry: SourceRegistry = service()
    query_parameters = ("q", "registry")

    @extend_schema(
        summary="Search the source registries: every source whose name or description holds "
        "every word of q",
        parameters=[
            OpenApiParameter("q", str, description="words to find; every source when absent"),
            REGISTRY_PARAMETER,
        ],
        responses={200: RegistrySearch, **errors(502)},
    )
    def get(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        registry = request.query_params.get("registry") or None
        return Response(RegistrySearch.render(self.registry.search(query, registry)))


class SourceRegistryEntryView(MemCastleView):
    registry: SourceRegistry = service()
    query_parameters = ("registry",)

    @extend_schema(
        summary="Preview what installing NAME or NAME@VERSION would install: fetched and "
        "verified, with its permissions and consent digest; nothing is installed",
        parameters=[REGISTRY_PARAMETER],
        responses={200: RegistryPreview, **errors(404, 502)},
    )
    def get(self, request: Request, spec: str) -> Response:
        registry = request.query_params.get("registry") or None
        return Response(RegistryPreview.render(self.registry.preview(spec, registry)))


class SourceRegistryInstallView(MemCastleView):
    registry: SourceRegistry = service()

    @extend_schema(
        summary="Install NAME or NAME@VERSION from the first registry offering it (a replaced "
        "source keeps its state)",
        request=RegistryInstall,
        responses={200: SourceInstalled, **errors(404, 502)},
    )
    def post(self, request: Request, spec: str) -> Response:
        data = _fields(request, RegistryInstall)
        answer = self.registry.install(
            spec,
            consent=optional_text(data, "consent"),
            enable=_flag(data, "enable"),
            registry=optional_text(data, "registry"),
        )
        return Response(SourceInstalled.render(answer))


class SourceRegistryUpdateView(MemCastleView):
    registry: SourceRegistry = service()

    @extend_schema(
        summary="Update an installed source to the newest version its registry offers, or "
        "check whether there is one",
        request=RegistryUpdateBody,
        responses={200: RegistryUpdate, **errors(404, 502)},
    )
    def post(self, request: Request, name: str) -> Response:
        data = _fields(request, RegistryUpdateBody)
        answer = self.registry.update(
            name,
            check=_flag(data, "check"),
            consent=optional_text(data, "consent"),
            registry=optional_text(data, "registry"),
        )
        return Response(RegistryUpdate.render(answer))
