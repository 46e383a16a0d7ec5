"""`GET /api/config`: the configuration the daemon runs with, every secret left out.

It is what the dashboard's Settings page and `memcastle config show` print: the merged result of
defaults, the file, the environment and the flags, laid out as the file's sections
(`[server] port`), so a value can be looked up where it would be set. A secret (the token, the
store's password, a broker URL, an API key) is never given back, not even masked: the answer
only says whether each one is set. A URL keeps its host but loses any user and password in it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kernel.config import Config
from memcastle_project.shapes import EffectiveConfig

# The fields that hold a secret, wherever they appear (`store.password`, a profile's `api_key`).
# A broker URL may carry a password, so the whole of it is one (as in `kernel.config`).
SECRET_FIELDS = frozenset({"auth_token", "password", "broker_url", "api_key"})

# `Config`'s own fields, which are not sections, by the key the file gives them.
TOP_LEVEL = {
    "palace_path": ("palace", "path"),
    "bind": ("server", "bind"),
    "port": ("server", "port"),
    "log_level": ("logging", "level"),
    "log_format": ("logging", "format"),
    "auth_enabled": ("auth", "enabled"),
    "auth_token": ("auth", "token"),
    "web_enable": ("web", "enable"),
    "events_keepalive_secs": ("events", "keepalive_secs"),
}
# Said once at the top of the answer, not as a setting: nobody sets it in the file itself.
NOT_SETTINGS = frozenset({"config_file"})


class ConfigurationReport:
    """The daemon's configuration as an answer, and where its read-only assets come from."""

    def __init__(self, config: Config, *, dashboard_dir: Path) -> None:
        self.config = config
        self.dashboard_dir = dashboard_dir

    def show(self) -> dict[str, Any]:
        """Not gated by a memory mode, which guards memory, not what the daemon is set to do."""
        config = self.config
        settings: dict[str, dict[str, Any]] = {}
        secrets: dict[str, bool] = {}
        for item in dataclasses.fields(config):
            value = getattr(config, item.name)
            if item.name in NOT_SETTINGS:
                continue
            if item.name in TOP_LEVEL:
                section, key = TOP_LEVEL[item.name]
                table = settings.setdefault(section, {})
                _put(table, secrets, f"{section}.{key}", key, value, item.name in SECRET_FIELDS)
            elif dataclasses.is_dataclass(value):
                settings[item.name] = _section(value, item.name, secrets)
            else:
                raise TypeError(f"Config.{item.name} has no place in the configuration report")
        return EffectiveConfig.render(
            {
                "config_file": str(config.config_file) if config.config_file else None,
                "settings": settings,
                "secrets": secrets,
                "assets": {
                    "dashboard": str(self.dashboard_dir),
                    "bundled_sources": str(config.mining.bundled_dir),
                },
            }
        )


def _section(value: object, prefix: str, secrets: dict[str, bool]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for item in dataclasses.fields(value):  # type: ignore[arg-type]
        path, secret = f"{prefix}.{item.name}", item.name in SECRET_FIELDS
        _put(table, secrets, path, item.name, getattr(value, item.name), secret)
    return table


def _put(
    table: dict[str, Any], secrets: dict[str, bool], path: str, key: str, value: Any, secret: bool
) -> None:
    """`value` under `key`, or, for a secret, only whether it is set."""
    if secret:
        secrets[path] = bool(value)
        return
    table[key] = _plain(value, path, secrets)


def _plain(value: Any, path: str, secrets: dict[str, bool]) -> Any:
    """A value as JSON: paths and tuples as strings and lists, profiles as tables, a URL
    without its credentials."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _section(value, path, secrets)
    if isinstance(value, Mapping):
        return {str(name): _plain(item, f"{path}.{name}", secrets) for name, item in value.items()}
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, tuple | list):
        return [_plain(item, path, secrets) for item in value]
    if isinstance(value, str) and path.rsplit(".", 1)[-1] == "url":
        return _without_credentials(value)
    return value


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
