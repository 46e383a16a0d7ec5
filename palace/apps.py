from django.apps import AppConfig

from jobs import kinds


class PalaceConfig(AppConfig):
    name = "palace"

    def ready(self) -> None:
        kinds.register(job_kinds)


def job_kinds() -> kinds.AppJobs:
    """Imported when the job engine first needs them, not when Django starts (`jobs.kinds`)."""
    from palace import checkpoint, maintenance
    from palace.embeddings import job as embed

    return kinds.AppJobs(
        kinds=(checkpoint.CHECKPOINT, maintenance.AUDIT, maintenance.REPAIR, embed.EMBED),
        sweepers=(embed.EmbedSweeper,),
    )
