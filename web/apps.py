from django.apps import AppConfig


class WebConfig(AppConfig):
    """The dashboard: files under `dist/`, served by `web.views.dashboard`. It registers no job
    kind and no command, and imports no other app: every datum it shows comes from `/api`."""

    name = "web"
