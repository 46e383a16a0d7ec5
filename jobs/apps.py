from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self) -> None:
        # Job kinds register themselves on import; every kind is imported here, once, so the
        # REST views, the worker and the CLI all know the same kinds.
        from graph import extraction  # noqa: F401
        from jobs import demo  # noqa: F401
        from palace import checkpoint, maintenance  # noqa: F401
        from palace.embeddings import job  # noqa: F401
        from sources import mining  # noqa: F401
