"""REST views for miners (`/api/miners`): parse, call `MinerService`, render.

Listing and showing are reads and running is a write under the memory mode; creating,
changing, enabling, disabling, removing and reloading manage the configuration file and ignore
the mode. None of them has an MCP tool but the two reads.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.shapes import Job
from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    errors,
    refuse_body_fields,
    request_context,
    service,
)
from kernel.shapes import Shape
from sources.miner_service import MinerService

OPTION_VALUE = {
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}},
    ]
}


# `config` may also hold tables of options, as a TOML table holds sub-tables.
CONFIG_VALUE = {"anyOf": [*OPTION_VALUE["anyOf"], {"type": "object"}]}


CREDENTIAL = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"type": {"enum": ["env"]}, "name": {"type": "string", "minLength": 1}},
            "required": ["type", "name"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"type": {"enum": ["file"]}, "path": {"type": "string", "pattern": "^/"}},
            "required": ["type", "path"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"type": {"enum": ["oauth"]}},
            "required": ["type"],
            "additionalProperties": False,
        },
    ]
}


@extend_schema_field(CREDENTIAL)
class CredentialDefinition(serializers.JSONField):
    """Where a miner's credential comes from, as `sources.miners` takes it."""


@extend_schema_field(OPTION_VALUE)
class OptionValue(serializers.JSONField):
    """An option's value as `sources.miners` takes it, so the document says so: a string, a
    finite number, true or false, or a list of strings."""


@extend_schema_field(CONFIG_VALUE)
class ConfigValue(serializers.JSONField):
    """A `config` option's value: an option's, or a table of them."""


# Shapes (see `kernel.shapes`; a docstring would become a component's description).


class MinerCredential(Shape):
    kind = serializers.ChoiceField(["env", "file", "oauth"])
    available = serializers.BooleanField(
        help_text="whether it resolves now: the variable is set, the file readable, the source "
        "signed in"
    )


class Miner(Shape):
    name = serializers.CharField()
    # Typed as DRF's `Field.source` to mypy; the serializer's metaclass takes declared fields
    # out of the class, so the name is the field's alone.
    source = serializers.CharField(help_text="the source it mines")  # type: ignore[assignment]
    enabled = serializers.BooleanField()
    locator = serializers.CharField(allow_null=True, help_text="the place the source reads")
    wing = serializers.CharField(allow_null=True, help_text="the wing it files into")
    credential = MinerCredential(allow_null=True)
    scope = serializers.DictField(
        child=OptionValue(), help_text="options that say how much it reads"
    )
    config = serializers.DictField(child=ConfigValue(), help_text="other options")


class MinerList(Shape):
    miners = serializers.ListField(child=Miner())


class MinerRemoved(Shape):
    removed = serializers.CharField(help_text="the miner's name")


class MinersReloaded(Shape):
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())
    enabled = serializers.ListField(child=serializers.CharField())
    disabled = serializers.ListField(child=serializers.CharField())
    broadened = serializers.ListField(
        child=serializers.CharField(), help_text="changed miners that may now read more"
    )


NAME_PATTERN = r"^[a-z0-9_-]{1,64}$"
OPTIONS_HELP = "strings, numbers, booleans or lists of strings, by option name"
CREDENTIAL_HELP = (
    '{"type": "env", "name": VARIABLE} | {"type": "file", "path": ABSOLUTE PATH} | '
    '{"type": "oauth"}'
)


class MinerDefinition(serializers.Serializer):
    name = serializers.RegexField(NAME_PATTERN, help_text="unique; not `reload`")
    source = serializers.CharField(help_text="directory, or an installed source")  # type: ignore[assignment]
    enabled = serializers.BooleanField(required=False, help_text="true by default")
    locator = serializers.CharField(required=False, allow_null=True)
    wing = serializers.CharField(required=False, allow_null=True)
    credential = CredentialDefinition(required=False, allow_null=True, help_text=CREDENTIAL_HELP)
    scope = serializers.DictField(
        child=OptionValue(), required=False, allow_null=True, help_text=OPTIONS_HELP
    )
    config = serializers.DictField(
        child=ConfigValue(), required=False, allow_null=True, help_text=OPTIONS_HELP
    )
    requested_by = serializers.CharField(required=False)


class MinerChange(serializers.Serializer):
    name = serializers.RegexField(
        NAME_PATTERN, required=False, help_text="a new name (what it mined stays)"
    )
    source = serializers.CharField(required=False)  # type: ignore[assignment]
    enabled = serializers.BooleanField(required=False)
    locator = serializers.CharField(required=False, allow_null=True, help_text="null removes it")
    wing = serializers.CharField(required=False, allow_null=True, help_text="null removes it")
    credential = CredentialDefinition(
        required=False, allow_null=True, help_text=f"{CREDENTIAL_HELP}; null removes it"
    )
    scope = serializers.DictField(
        child=OptionValue(allow_null=True),
        required=False,
        allow_null=True,
        help_text="merged key by key: a null value removes the option, null removes them all",
    )
    config = serializers.DictField(
        child=ConfigValue(allow_null=True),
        required=False,
        allow_null=True,
        help_text="merged like scope",
    )
    allow_broaden = serializers.BooleanField(
        required=False, help_text="accept a change that may make the miner read more"
    )


class MinerRun(serializers.Serializer):
    options = serializers.DictField(
        child=OptionValue(),
        required=False,
        help_text=f"this run's own options over the miner's: {OPTIONS_HELP}",
    )
    full = serializers.BooleanField(required=False, help_text="read everything again")
    allow_broaden = serializers.BooleanField(
        required=False, help_text="accept options that may make this run read more"
    )
    requested_by = serializers.CharField(required=False)


# Views.


class MinerServiceView(MemCastleView):
    miners: MinerService = service()


class MinersView(MinerServiceView):
    @extend_schema(
        summary="The miners configured in the daemon's configuration file",
        parameters=[MODE_PARAMETER],
        responses={200: MinerList, **errors(403)},
    )
    def get(self, request: Request) -> Response:
        return Response(MinerList.render(self.miners.list(request_context(request))))

    @extend_schema(
        summary="Add a miner to the configuration file (an enabled one must be able to run)",
        request=MinerDefinition,
        responses={201: Miner, **errors(400, 409)},
    )
    def post(self, request: Request) -> Response:
        return Response(Miner.render(self.miners.create(request.data)), status=201)


class MinerView(MinerServiceView):
    @extend_schema(
        summary="One miner; its credential shown as its kind and whether it resolves",
        parameters=[MODE_PARAMETER],
        responses={200: Miner, **errors(403, 404)},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(Miner.render(self.miners.get(request_context(request), name)))

    @extend_schema(
        summary="Change a miner: the body is a JSON merge patch of its definition; a change "
        "that may broaden what it reads needs allow_broaden",
        request=MinerChange,
        responses={200: Miner, **errors(400, 404, 409)},
    )
    def put(self, request: Request, name: str) -> Response:
        return Response(Miner.render(self.miners.change(name, request.data)))

    @extend_schema(
        summary="Remove a miner from the configuration file (what it mined stays)",
        request=None,
        responses={200: MinerRemoved, **errors(404, 409)},
    )
    def delete(self, request: Request, name: str) -> Response:
        return Response(MinerRemoved.render(self.miners.remove(name)))


class MinerEnableView(MinerServiceView):
    @extend_schema(
        summary="Enable a miner (it must be able to run); idempotent",
        request=None,
        responses={200: Miner, **errors(400, 404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        return Response(Miner.render(self.miners.enable(name)))


class MinerDisableView(MinerServiceView):
    @extend_schema(
        summary="Disable a miner; idempotent",
        request=None,
        responses={200: Miner, **errors(404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        return Response(Miner.render(self.miners.disable(name)))


class MinerRunView(MinerServiceView):
    @extend_schema(
        summary="Run a miner: submit a mine job of its source, place, wing and options",
        parameters=[MODE_PARAMETER],
        request=MinerRun,
        responses={201: Job, **errors(403, 404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        ctx = request_context(request, body=request.data)
        return Response(self.miners.run(ctx, name, request.data), status=201)


class MinersReloadView(MinerServiceView):
    @extend_schema(
        summary="Read the configuration file again and report what changed since start-up or "
        "the last reload or write",
        request=None,
        responses={200: MinersReloaded, **errors(409)},
    )
    def post(self, request: Request) -> Response:
        refuse_body_fields(request)
        return Response(MinersReloaded.render(self.miners.reload()))
