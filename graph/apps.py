from django.apps import AppConfig

from jobs import kinds


class GraphConfig(AppConfig):
    name = "graph"

    def ready(self) -> None:
        kinds.register(job_kinds)


def job_kinds() -> kinds.AppJobs:
    """Imported when the job engine first needs them, not when Django starts (`jobs.kinds`)."""
    from graph import extraction

    return kinds.AppJobs(kinds=(extraction.EXTRACT,), sweepers=(extraction.ExtractSweeper,))
