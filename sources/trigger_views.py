"""REST views for triggers (`/api/triggers`): parse, call `TriggerService`, render.

Listing and showing are reads and firing is a write under the memory mode; defining, changing,
enabling, disabling, removing and reloading manage the configuration file and ignore the mode.
None of them has an MCP tool but the two reads, so an agent cannot decide what the daemon does
unattended.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.rest import (
    MODE_PARAMETER,
    MemCastleView,
    errors,
    refuse_body_fields,
    request_context,
    service,
)
from kernel.shapes import Shape
from sources.miner_views import NAME_PATTERN, MinerCredential
from sources.trigger_service import TriggerService
from sources.triggers import TYPES

STATUSES = ["disabled", "active", "failing", "unavailable"]
FIRE_OUTCOMES = ["queued", "coalesced"]
SETTINGS_HELP = (
    "the type's settings: schedule every, at; poll every, max_backoff; watch path, debounce, "
    "recursive; webhook auth, header, prefix, encoding, delivery_header"
)
CREDENTIAL_HELP = (
    'the webhook\'s shared secret: {"type": "env", "name": VARIABLE} | '
    '{"type": "file", "path": ABSOLUTE PATH}'
)

# Shapes (see `kernel.shapes`; a docstring would become a component's description).


class TriggerState(Shape):
    last_fired = serializers.DateTimeField(allow_null=True)
    next_due = serializers.DateTimeField(
        allow_null=True, help_text="when a timetabled trigger fires next"
    )
    fires = serializers.IntegerField(help_text="how many times it fired")
    failures = serializers.IntegerField(help_text="consecutive failures of its runs")
    last_error = serializers.CharField(allow_null=True)
    last_job = serializers.CharField(allow_null=True, help_text="the job of its last fire")
    watching = serializers.BooleanField(
        allow_null=True, help_text="a watch trigger: whether its directory is being watched"
    )


class Trigger(Shape):
    name = serializers.CharField()
    miner = serializers.CharField(help_text="the miner it runs")
    type = serializers.ChoiceField(list(TYPES))
    enabled = serializers.BooleanField()
    settings = serializers.DictField(child=serializers.JSONField(), help_text=SETTINGS_HELP)
    credential = MinerCredential(allow_null=True)
    status = serializers.ChoiceField(STATUSES)
    unavailable_reason = serializers.CharField(
        required=False, help_text="what an enabled trigger is missing"
    )
    state = TriggerState()


class TriggerList(Shape):
    triggers = serializers.ListField(child=Trigger())


class TriggerRemoved(Shape):
    removed = serializers.CharField(help_text="the trigger's name")


class TriggerFired(Shape):
    status = serializers.ChoiceField(
        FIRE_OUTCOMES, help_text="coalesced: it joined a run of its miner still queued"
    )
    job = serializers.CharField()


class TriggersReloaded(Shape):
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())
    enabled = serializers.ListField(child=serializers.CharField())
    disabled = serializers.ListField(child=serializers.CharField())


class TriggerDefinition(serializers.Serializer):
    name = serializers.RegexField(NAME_PATTERN, help_text="unique; not `reload`")
    miner = serializers.RegexField(NAME_PATTERN, help_text="the miner it runs")
    type = serializers.ChoiceField(list(TYPES))
    enabled = serializers.BooleanField(
        required=False, help_text="false by default; enabling checks what it needs"
    )
    settings = serializers.DictField(
        child=serializers.JSONField(), required=False, help_text=SETTINGS_HELP
    )
    credential = serializers.JSONField(required=False, help_text=CREDENTIAL_HELP)
    requested_by = serializers.CharField(required=False)


class TriggerChange(serializers.Serializer):
    name = serializers.RegexField(NAME_PATTERN, required=False, help_text="a new name")
    miner = serializers.RegexField(NAME_PATTERN, required=False)
    type = serializers.ChoiceField(
        list(TYPES), required=False, help_text="another type starts its settings afresh"
    )
    enabled = serializers.BooleanField(required=False)
    settings = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        required=False,
        allow_null=True,
        help_text="merged key by key: a null value removes the setting, null removes them all",
    )
    credential = serializers.JSONField(
        required=False, help_text=f"{CREDENTIAL_HELP}; null removes it"
    )
    requested_by = serializers.CharField(required=False)


# Views.


class TriggerServiceView(MemCastleView):
    triggers: TriggerService = service()


class TriggersView(TriggerServiceView):
    @extend_schema(
        summary="The triggers configured in the daemon's configuration file, with their state",
        parameters=[MODE_PARAMETER],
        responses={200: TriggerList, **errors(403)},
    )
    def get(self, request: Request) -> Response:
        return Response(TriggerList.render(self.triggers.list(request_context(request))))

    @extend_schema(
        summary="Define a trigger in the configuration file (disabled unless enabled is true, "
        "which checks everything it needs)",
        request=TriggerDefinition,
        responses={201: Trigger, **errors(400, 409)},
    )
    def post(self, request: Request) -> Response:
        return Response(Trigger.render(self.triggers.define(request.data)), status=201)


class TriggerView(TriggerServiceView):
    @extend_schema(
        summary="One trigger, with its status and state; its secret shown as its kind and "
        "whether it resolves",
        parameters=[MODE_PARAMETER],
        responses={200: Trigger, **errors(403, 404)},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(Trigger.render(self.triggers.get(request_context(request), name)))

    @extend_schema(
        summary="Change a trigger: the body is a JSON merge patch of its definition",
        request=TriggerChange,
        responses={200: Trigger, **errors(400, 404, 409)},
    )
    def put(self, request: Request, name: str) -> Response:
        return Response(Trigger.render(self.triggers.change(name, request.data)))

    @extend_schema(
        summary="Remove a trigger from the configuration file",
        request=None,
        responses={200: TriggerRemoved, **errors(404, 409)},
    )
    def delete(self, request: Request, name: str) -> Response:
        return Response(TriggerRemoved.render(self.triggers.remove(name)))


class TriggerEnableView(TriggerServiceView):
    @extend_schema(
        summary="Enable a trigger (everything it needs must be there); idempotent",
        request=None,
        responses={200: Trigger, **errors(404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        return Response(Trigger.render(self.triggers.enable(name)))


class TriggerDisableView(TriggerServiceView):
    @extend_schema(
        summary="Disable a trigger; idempotent",
        request=None,
        responses={200: Trigger, **errors(404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        return Response(Trigger.render(self.triggers.disable(name)))


class TriggerFireView(TriggerServiceView):
    @extend_schema(
        summary="Fire a trigger now: its miner's job is queued, or joins one still queued",
        parameters=[MODE_PARAMETER],
        request=None,
        responses={202: TriggerFired, **errors(403, 404, 409)},
    )
    def post(self, request: Request, name: str) -> Response:
        refuse_body_fields(request)
        ctx = request_context(request, body=request.data)
        return Response(TriggerFired.render(self.triggers.fire(ctx, name)), status=202)


class TriggersReloadView(TriggerServiceView):
    @extend_schema(
        summary="Read the configuration file again and report what changed since start-up or "
        "the last reload or write",
        request=None,
        responses={200: TriggersReloaded, **errors(409)},
    )
    def post(self, request: Request) -> Response:
        refuse_body_fields(request)
        return Response(TriggersReloaded.render(self.triggers.reload()))
