from django.apps import AppConfig


class MemCastleConfig(AppConfig):
    """The project package is an app too, for the commands of the daemon itself (`serve`,
    `status`, `migrate`...)."""

    name = "memcastle_project"
