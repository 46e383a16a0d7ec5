"""Django settings. MemCastle keeps everything in SurrealDB, so there is no Django database.

The daemon's configuration (palace path, address, auth...) is not read here: `memcastle serve`
loads it with `kernel.config` and builds the services on it (`memcastle_project.composition`).
The routes are bound to those services per daemon (`memcastle_project.urls.URLConf`, set on each
request), so `ROOT_URLCONF` names a module that routes nothing.
"""

from __future__ import annotations

import os
import secrets

from kernel import __version__
from kernel.errors import MAX_BODY_BYTES

# Sessions, CSRF and signed cookies are not used; the key only has to exist.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)
DEBUG = False
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "jobs",
    "palace",
    "graph",
    "sources",
    "mcp_bridge",
    "web",
    "memcastle_project",
]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "memcastle_project.urls"
DATABASES: dict = {}
APPEND_SLASH = False
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": []},
    }
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "kernel.rest.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "MemCastle",
    "DESCRIPTION": (
        "The REST API of the MemCastle memory daemon. Every failure is "
        "`{error, code, help}` with the status each route lists."
    ),
    "VERSION": __version__,
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Choice sets used by several fields, or fields of one name with different choices, each
    # keep one name of their own.
    "ENUM_NAME_OVERRIDES": {
        "RankingEnum": "palace.search.query.RANKINGS",
        "StateEnum": "graph.lifecycle.STATES",
        "SourceStateEnum": "sources.shapes.STATES",
        # Named here so that the triggers' enums leave the older names as they were.
        "StatusEnum": "jobs.shapes.STATUSES",
        "TypeEnum": "sources.shapes.OPTION_TYPES",
        "TriggerTypeEnum": "sources.triggers.TYPES",
        "TriggerStatusEnum": "sources.trigger_views.STATUSES",
        "FireOutcomeEnum": "sources.trigger_views.FIRE_OUTCOMES",
        "SignInFlowEnum": "sources.shapes.SIGN_IN_FLOWS",
        "SignInStatusEnum": "sources.shapes.SIGN_IN_STATUSES",
        "CredentialStoreEnum": "sources.shapes.CREDENTIAL_STORES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memcastle_project.streams.document_event_stream",
        "kernel.rest.declare_parameter_bounds",
        "palace.openapi.declare_name_rules",
        "palace.openapi.declare_temporal",
        "jobs.openapi.declare_job_kinds",
        # Last: it leaves alone the strings the hooks above gave an enum or a pattern.
        "kernel.rest.declare_no_nul",
    ],
}

# Logging is configured by `kernel.logs` when the daemon starts.
LOGGING_CONFIG = None
