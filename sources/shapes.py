"""The shapes of what the source service answers: the adapters this daemon has and the places
mined (see `kernel.shapes`; a docstring would become a component's description)."""

from __future__ import annotations

from rest_framework import serializers

from kernel.shapes import Shape


class SourceCapabilities(Shape):
    incremental = serializers.BooleanField()
    retains_raw = serializers.BooleanField()
    needs_credentials = serializers.BooleanField()


OPTION_TYPES = ["string", "path", "date"]


class SourceOption(Shape):
    name = serializers.CharField()
    description = serializers.CharField()
    type = serializers.ChoiceField(OPTION_TYPES)
    breadth = serializers.ChoiceField(
        ["include", "opt_in_include", "exclude", "since"], required=False
    )


ORIGINS = ["builtin", "package", "bundled", "registry", "plugin"]
STATES = ["installed", "enabled", "disabled", "unavailable"]


class SourceAdapter(Shape):
    name = serializers.CharField()
    description = serializers.CharField()
    capabilities = SourceCapabilities()
    origin = serializers.ChoiceField(ORIGINS)
    options = serializers.ListField(child=SourceOption())
    triggers = serializers.ListField(
        child=serializers.ChoiceField(["watch", "webhook"]),
        help_text="what may start it besides a timetable: a watch of its files, a webhook",
    )
    state = serializers.ChoiceField(STATES)
    version = serializers.CharField(required=False, help_text="an installed source's version")
    unavailable_reason = serializers.CharField(
        required=False, help_text="why an installed source cannot run"
    )
    permissions = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="what an installed source may do: filesystem.read, network, process, env, "
        "oauth (null for a built-in source)",
    )
    consent_digest = serializers.CharField(
        required=False, help_text="the digest consent to its permissions names"
    )
    digest = serializers.CharField(required=False, help_text="SHA-256 of its component")
    installed_at = serializers.DateTimeField(required=False)
    updated_at = serializers.DateTimeField(required=False)


class SourceInstalled(Shape):
    source = SourceAdapter()  # type: ignore[assignment]
    replaced = serializers.BooleanField(help_text="whether it replaced an installed version")


class SourceRemoved(Shape):
    removed = serializers.CharField(help_text="the source's name")


class MinedSource(Shape):
    id = serializers.CharField()
    # Typed as DRF's `Field.source` to mypy; the serializer's metaclass takes declared fields
    # out of the class, so the name is the field's alone.
    source = serializers.CharField(help_text="the adapter that reads it")  # type: ignore[assignment]
    account = serializers.CharField(allow_null=True)
    locator = serializers.CharField(help_text="the place, e.g. the directory's path")
    cursor = serializers.JSONField(allow_null=True, help_text="where the next run starts")
    last_job = serializers.CharField(allow_null=True)
    last_run_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField(help_text="when it was first mined")
    updated_at = serializers.DateTimeField()
    documents = serializers.IntegerField(help_text="documents read from it so far")


class Sources(Shape):
    adapters = serializers.ListField(child=SourceAdapter())
    sources = serializers.ListField(child=MinedSource())
