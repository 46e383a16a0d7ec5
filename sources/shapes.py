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


SIGN_IN_FLOWS = ["device", "browser"]
SIGN_IN_STATUSES = ["pending", "signed_in"]
CREDENTIAL_STORES = ["keyring", "file"]


class SourceAuth(Shape):
    signed_in = serializers.BooleanField()
    expires_at = serializers.DateTimeField(
        required=False, help_text="when the current access token expires, if it does"
    )
    scopes = serializers.ListField(
        child=serializers.CharField(), help_text="granted when signed in, else declared"
    )
    provider = serializers.CharField(help_text="the host of the provider's token endpoint")
    flows = serializers.ListField(
        child=serializers.ChoiceField(SIGN_IN_FLOWS),
        help_text="how it can sign in: the device flow, the browser flow (PKCE)",
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
    registry = serializers.CharField(
        required=False, help_text="the registry a source installed by name came from"
    )
    archive_digest = serializers.CharField(
        required=False, help_text="SHA-256 of the archive installed from a registry"
    )
    signed_by = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="the id of the trusted key that signed it; null when accepted unsigned",
    )
    auth = SourceAuth(required=False, help_text="its sign-in, for a source that declares one")


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


# A source registry's answers (`/api/source-registry`).


class RegistryHit(Shape):
    name = serializers.CharField()
    description = serializers.CharField()
    license = serializers.CharField(allow_null=True)
    homepage = serializers.CharField(allow_null=True)
    registry = serializers.CharField(help_text="the registry that lists it, as configured or given")
    repository = serializers.CharField(
        allow_null=True, help_text="owner/repo for a source whose versions are GitHub releases"
    )
    version = serializers.CharField(
        allow_null=True,
        help_text="the version an install would choose; null when none can run here",
    )
    installed = serializers.CharField(
        allow_null=True, help_text="the version installed here, null when it is not"
    )


class RegistrySearch(Shape):
    registries = serializers.ListField(
        child=serializers.CharField(), help_text="the registries searched, in order"
    )
    results = serializers.ListField(child=RegistryHit())


class RegistryPreview(Shape):
    name = serializers.CharField()
    version = serializers.CharField()
    registry = serializers.CharField(help_text="the first registry offering it")
    description = serializers.CharField()
    license = serializers.CharField(allow_null=True)
    homepage = serializers.CharField(allow_null=True)
    permissions = serializers.JSONField(
        help_text="what it would be allowed: filesystem.read, network, process, env, oauth"
    )
    consent_digest = serializers.CharField(
        allow_null=True,
        help_text="the digest consent to its permissions names; null when it asks for nothing",
    )
    archive_digest = serializers.CharField(help_text="SHA-256 of the archive, as verified")
    signed_by = serializers.CharField(
        allow_null=True, help_text="the id of the trusted key that signed it, null if none"
    )
    installed = serializers.CharField(
        allow_null=True, help_text="the version installed here, null when it is not"
    )


class RegistryUpdate(Shape):
    name = serializers.CharField()
    installed = serializers.CharField(
        allow_null=True, help_text="the version installed before (null when unreadable)"
    )
    version = serializers.CharField(help_text="the newest version its registry offers")
    registry = serializers.CharField()
    status = serializers.ChoiceField(
        ["updated", "available", "current"],
        help_text="updated; available (a check found a newer version); current (none newer)",
    )
    source = SourceAdapter(required=False, help_text="the source as updated")  # type: ignore[assignment]


# Signing a source in (`/api/source-packages/{name}/auth`): never a token.


class SignInStarted(Shape):
    source = serializers.CharField()  # type: ignore[assignment]
    flow = serializers.CharField(help_text="the id to wait on")
    kind = serializers.ChoiceField(SIGN_IN_FLOWS)
    url = serializers.CharField(
        help_text="the page to open: with the code filled in (device) when the provider "
        "offers one, else the authorization page (browser)"
    )
    user_code = serializers.CharField(required=False, help_text="device: the code to type")
    verification_uri = serializers.CharField(
        required=False, help_text="device: the page to type the code at"
    )
    expires_at = serializers.DateTimeField(help_text="when the flow gives up")


class SignInOutcome(Shape):
    source = serializers.CharField()  # type: ignore[assignment]
    status = serializers.ChoiceField(
        SIGN_IN_STATUSES,
        help_text="pending: no outcome yet, wait again; signed_in: done (told once)",
    )
    flow = serializers.CharField(required=False, help_text="pending: the flow waited on")
    signed_in = serializers.BooleanField(required=False)
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="when the access token expires, if it does"
    )
    scopes = serializers.ListField(child=serializers.CharField(), required=False)
    stored_in = serializers.ChoiceField(
        CREDENTIAL_STORES, required=False, help_text="where the credential is kept"
    )
