from django.apps import AppConfig


class PalaceConfig(AppConfig):
    name = "palace"
