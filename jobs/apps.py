from django.apps import AppConfig

from jobs import kinds


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self) -> None:
        kinds.register(job_kinds)


def job_kinds() -> kinds.AppJobs:
    from jobs import demo

    return kinds.AppJobs(kinds=(demo.DEMO,))
