from django.apps import AppConfig

from jobs import kinds


class SourcesConfig(AppConfig):
    name = "sources"

    def ready(self) -> None:
        kinds.register(job_kinds)


def job_kinds() -> kinds.AppJobs:
    """Imported when the job engine first needs them, not when Django starts (`jobs.kinds`)."""
    from sources import mining

    return kinds.AppJobs(kinds=(mining.MINE,))
