"""The shapes of what the daemon says of itself: health, the status report, shutdown, the
API token and the database console (see `kernel.shapes`; a docstring would become a
component's description)."""

from __future__ import annotations

from rest_framework import serializers

from jobs.shapes import JobCounts
from kernel.context import Mode
from kernel.shapes import Shape
from palace.embeddings.shapes import EmbeddingProvenance
from palace.search.shapes import SearchIndexStatus


class Health(Shape):
    status = serializers.CharField()


class StatusStore(Shape):
    mode = serializers.CharField(help_text="embedded or remote")


# An unhealthy datastore is reported here, inside a 200 (api.md "REST API").
class StatusDatastore(Shape):
    healthy = serializers.BooleanField()
    error = serializers.CharField(required=False, help_text="why it is not healthy")


class StatusMigrations(Shape):
    applied = serializers.IntegerField()
    available = serializers.IntegerField()
    pending = serializers.IntegerField()


class StatusEmbeddings(Shape):
    default_profile = serializers.CharField(allow_null=True)
    profiles = serializers.DictField(
        child=EmbeddingProvenance(), help_text="each configured profile, by name"
    )


# The status report. What only a healthy datastore can say (migrations, drawers, jobs) is
# null when it is not.
class StatusReport(Shape):
    version = serializers.CharField()
    pid = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    uptime_secs = serializers.IntegerField()
    bind_addr = serializers.CharField()
    mcp_url = serializers.CharField()
    palace = serializers.CharField(help_text="the palace's directory")
    store = StatusStore()
    datastore = StatusDatastore()
    migrations = StatusMigrations(allow_null=True)
    drawers = serializers.IntegerField(allow_null=True)
    jobs = JobCounts(allow_null=True)
    search = SearchIndexStatus()
    embeddings = StatusEmbeddings()
    auth_enabled = serializers.BooleanField(help_text="whether requests need a token")
    mode = serializers.ChoiceField(
        [mode.value for mode in Mode], help_text="the memory mode of this request"
    )


class Shutdown(Shape):
    shutting_down = serializers.BooleanField()


# The token is shown in this answer only (api.md "Authentication").
class Token(Shape):
    token = serializers.CharField()
    algorithm = serializers.CharField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class Revoked(Shape):
    revoked = serializers.BooleanField()


# The database console (`/api/db`): where it listens and how to sign in to it.
class DatabaseConsoleAnswer(Shape):
    running = serializers.BooleanField()
    addr = serializers.CharField(allow_null=True, help_text="host:port it listens on")
    url = serializers.CharField(
        allow_null=True, help_text="what SurrealDB Studio or an SDK connects to (RPC at /rpc)"
    )
    namespace = serializers.CharField()
    database = serializers.CharField()
    user = serializers.CharField(help_text="a user name to sign in with (any name is accepted)")
    remote = serializers.BooleanField(help_text="whether it listens beyond this machine")
    auth_required = serializers.BooleanField(
        help_text="whether a connection must sign in with the API token as its password"
    )
    started_at = serializers.DateTimeField(allow_null=True)
    already_running = serializers.BooleanField(
        help_text="true only on an open that found the console already open as asked"
    )


class ConfigAssets(Shape):
    dashboard = serializers.CharField(help_text="the directory the dashboard's files come from")
    bundled_sources = serializers.CharField(help_text="the directory of the bundled sources")


# The effective configuration (`GET /api/config`): each section of the file (`server`, `jobs`,
# `embeddings`...) with its values as the daemon runs with them. A secret is never in it:
# `secrets` only says whether each one is set.
class EffectiveConfig(Shape):
    config_file = serializers.CharField(
        allow_null=True, help_text="the file read at start-up, null when there was none"
    )
    settings = serializers.DictField(
        child=serializers.DictField(),
        help_text="each section of the configuration file, by name, with every value but secrets",
    )
    secrets = serializers.DictField(
        child=serializers.BooleanField(),
        help_text="each secret setting (`auth.token`, `store.password`...): whether it is set",
    )
    assets = ConfigAssets()
