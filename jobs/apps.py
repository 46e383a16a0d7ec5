from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Job kinds are imported at their first lookup (`jobs.kinds`), not here."""

    name = "jobs"
