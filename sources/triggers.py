"""Triggers: what makes a miner run unattended, and the rules a definition must keep.

A trigger names a miner and says when it runs: on a timetable (`schedule`), on a timetable that
backs off while runs fail (`poll`), when files change under a directory (`watch`) or when a
webhook delivery arrives (`webhook`). Triggers live in the `[[triggers]]` section of the
configuration file beside the miners, created disabled: only a person enables one, by the file,
REST or the CLI, never the daemon itself. What the daemon learns while running them (when one
last fired, when it is next due, how often it failed) is kept in the store, never its
enablement (`sources.trigger_service`, `sources.trigger_supervisor`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.errors import Conflict, MemCastleError, NotFound
from sources.miners import Credential, parse_credential
from sources.section_file import NAME, DefinitionError, Section, parse_name

TYPES = ("schedule", "poll", "watch", "webhook")
KEYS = ("name", "miner", "type", "enabled", "credential")
# Each type's own settings, beside the common keys of its table.
SETTINGS: dict[str, tuple[str, ...]] = {
    "schedule": ("every", "at"),
    "poll": ("every", "max_backoff"),
    "watch": ("path", "debounce", "recursive"),
    "webhook": ("auth", "header", "prefix", "encoding", "delivery_header"),
}
# What a source must declare (`[triggers.<type>]` of its manifest) to be started this way.
DECLARED = ("watch", "webhook")
AUTHS = ("hmac-sha256", "token")
ENCODINGS = ("hex", "base64")
DEFAULT_HEADERS = {"hmac-sha256": "x-hub-signature-256", "token": "x-memcastle-token"}
DEFAULT_PREFIXES = {"hmac-sha256": "sha256=", "token": ""}
DEFAULT_DEBOUNCE = 2.0
DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
DAY = 86400


# Refusals ---------------------------------------------------------------------------------------


class TriggerInvalid(MemCastleError):
    status = 400
    code = "memcastle::trigger::invalid"
    help = "correct the trigger's definition and send it again; nothing was written"


class TriggerNotFound(NotFound):
    code = "memcastle::trigger::not_found"
    help = "list the configured triggers with `memcastle trigger list` (GET /api/triggers)"


class NotActivatable(Conflict):
    code = "memcastle::trigger::not_activatable"
    help = "set up what the message says is missing, then enable the trigger again"


class TriggerDisabled(Conflict):
    code = "memcastle::trigger::disabled"
    help = "enable it first (`memcastle trigger enable NAME`)"


class TriggersFileRefused(Conflict):
    code = "memcastle::trigger::config_file"
    help = (
        "fix the [[triggers]] section of the configuration file (the message names the line), "
        "or send the request again if the file was being edited"
    )


# Durations and times ----------------------------------------------------------------------------


def parse_duration(raw: object, key: str, *, low: float, high: float | None = None) -> float:
    """Seconds from `30s`, `5m`, `2h`, `1d` (and `250ms`), within [low, high]."""
    match = DURATION.match(raw) if isinstance(raw, str) else None
    if match is None:
        raise DefinitionError(key, "must be a duration such as 30s, 5m, 2h or 1d")
    seconds = int(match[1]) * UNITS[match[2]]
    if seconds < low or (high is not None and seconds > high):
        bounds = f"at least {_shown(low)}" + (f" and at most {_shown(high)}" if high else "")
        raise DefinitionError(key, f"must be {bounds}")
    return seconds


def _shown(seconds: float) -> str:
    for unit in ("d", "h", "m", "s"):
        if seconds >= UNITS[unit] and seconds % UNITS[unit] == 0:
            return f"{int(seconds // UNITS[unit])}{unit}"
    return f"{round(seconds * 1000)}ms"


# The definition ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trigger:
    name: str
    miner: str
    type: str
    enabled: bool = False
    credential: Credential | None = None
    # The type's settings as written (what the file and a patch work on).
    settings: Mapping[str, Any] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The trigger as its `[[triggers]]` table says it."""
        table: dict[str, Any] = {"name": self.name, "miner": self.miner, "type": self.type}
        if self.enabled:
            table["enabled"] = True
        if self.credential is not None:
            table["credential"] = self.credential.as_toml()
        table.update(self.settings)
        return table

    def shown(self, environ: Mapping[str, str]) -> dict[str, Any]:
        """As the API shows it: the secret's kind and availability, never where it is."""
        credential = self.credential
        return {
            "name": self.name,
            "miner": self.miner,
            "type": self.type,
            "enabled": self.enabled,
            "settings": dict(self.settings),
            "credential": None
            if credential is None
            else {"kind": credential.kind, "available": credential.available(environ)},
        }

    # The settings, with their defaults.

    @property
    def every(self) -> float:
        return parse_duration(self.settings["every"], "every", low=1)

    @property
    def at(self) -> tuple[int, int] | None:
        raw = self.settings.get("at")
        match = CLOCK.match(raw) if isinstance(raw, str) else None
        return None if match is None else (int(match[1]), int(match[2]))

    @property
    def max_backoff(self) -> float:
        raw = self.settings.get("max_backoff")
        return 8 * self.every if raw is None else parse_duration(raw, "max_backoff", low=1)

    @property
    def path(self) -> str:
        return str(self.settings["path"])

    @property
    def debounce(self) -> float:
        raw = self.settings.get("debounce")
        return DEFAULT_DEBOUNCE if raw is None else parse_duration(raw, "debounce", low=0.1)

    @property
    def recursive(self) -> bool:
        return bool(self.settings.get("recursive", True))

    @property
    def auth(self) -> str:
        return str(self.settings.get("auth", "hmac-sha256"))

    @property
    def header(self) -> str:
        return str(self.settings.get("header", DEFAULT_HEADERS[self.auth])).lower()

    @property
    def prefix(self) -> str:
        return str(self.settings.get("prefix", DEFAULT_PREFIXES[self.auth]))

    @property
    def encoding(self) -> str:
        return str(self.settings.get("encoding", "hex"))

    @property
    def delivery_header(self) -> str | None:
        raw = self.settings.get("delivery_header")
        return None if raw is None else str(raw).lower()

    @property
    def timetabled(self) -> bool:
        return self.type in ("schedule", "poll")

    def secret(self) -> bytes | None:
        """The webhook's shared secret, read afresh (a rotated secret applies at once); None
        when it does not resolve."""
        credential = self.credential
        if credential is None:
            return None
        if credential.kind == "env":
            value = os.environ.get(str(credential.reference))
            return value.encode() if value else None
        try:
            with open(str(credential.reference), "rb") as handle:
                value_bytes = handle.read().strip()
        except OSError:
            return None
        return value_bytes or None


def parse_trigger(raw: Mapping[str, Any]) -> Trigger:
    """A trigger from its table (TOML or JSON), or `DefinitionError` naming the key at fault.
    A JSON null stands for an absent optional key."""
    raw = {key: value for key, value in raw.items() if value is not None}
    known = {*KEYS, *(key for keys in SETTINGS.values() for key in keys)}
    for key in raw:
        if key not in known:
            raise DefinitionError(key, f"is not a trigger key or setting (keys: {', '.join(KEYS)})")
    name = parse_name(raw.get("name"))
    miner = raw.get("miner")
    if not isinstance(miner, str) or not NAME.match(miner):
        raise DefinitionError("miner", "must name a miner (it is required)")
    kind = raw.get("type")
    if kind not in TYPES:
        raise DefinitionError("type", f"must be one of {', '.join(TYPES)} (it is required)")
    allowed = SETTINGS[kind]
    for key in raw:
        if key not in KEYS and key not in allowed:
            raise DefinitionError(
                key, f"is not a setting of a {kind} trigger (known: {', '.join(allowed)})"
            )
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        raise DefinitionError("enabled", "must be true or false")
    credential = None
    if "credential" in raw:
        if kind != "webhook":
            raise DefinitionError("credential", "is for webhook triggers only (their secret)")
        credential = parse_credential(raw["credential"])
        if credential is not None and credential.kind == "oauth":
            raise DefinitionError(
                "credential", "of a webhook is its shared secret: an env or a file credential"
            )
    settings = {key: raw[key] for key in allowed if key in raw}
    _check_settings(kind, settings)
    return Trigger(name, miner, kind, enabled, credential, settings)


def _check_settings(kind: str, settings: Mapping[str, Any]) -> None:
    if kind in ("schedule", "poll"):
        if "every" not in settings:
            raise DefinitionError("every", f"must be given for a {kind} trigger, e.g. 1h")
        every = parse_duration(settings["every"], "every", low=1)
        if "at" in settings:
            if not isinstance(settings["at"], str) or not CLOCK.match(settings["at"]):
                raise DefinitionError("at", "must be a time of day HH:MM (UTC)")
            if every % DAY:
                raise DefinitionError("at", "needs `every` in whole days (1d, 7d)")
        backoff = settings.get("max_backoff")
        if backoff is not None and parse_duration(backoff, "max_backoff", low=1) < every:
            raise DefinitionError("max_backoff", "must be at least `every`")
    elif kind == "watch":
        path = settings.get("path")
        if not isinstance(path, str) or not os.path.isabs(path):
            raise DefinitionError("path", "must be an absolute path (it is required)")
        if "debounce" in settings:
            parse_duration(settings["debounce"], "debounce", low=0.1, high=3600)
        if not isinstance(settings.get("recursive", True), bool):
            raise DefinitionError("recursive", "must be true or false")
    else:
        if settings.get("auth", "hmac-sha256") not in AUTHS:
            raise DefinitionError("auth", f"must be one of {', '.join(AUTHS)}")
        if settings.get("encoding", "hex") not in ENCODINGS:
            raise DefinitionError("encoding", f"must be one of {', '.join(ENCODINGS)}")
        for key in ("header", "delivery_header"):
            value = settings.get(key)
            if value is not None and (not isinstance(value, str) or not HEADER_NAME.match(value)):
                raise DefinitionError(key, "must be an HTTP header name")
        if not isinstance(settings.get("prefix", ""), str):
            raise DefinitionError("prefix", "must be a string")


TRIGGERS: Section[Trigger] = Section(
    "triggers", parse_trigger, TriggersFileRefused, inline=("credential",)
)


# Timetables -------------------------------------------------------------------------------------


def next_due(trigger: Trigger, after: dt.datetime, *, interval: float | None = None) -> dt.datetime:
    """When a timetabled trigger is next due after `after`: one interval later (`interval`
    when a poll backs off), or with `at`, the first HH:MM (UTC) at least that far on, less the
    day the clock time may fall short by."""
    seconds = trigger.every if interval is None else interval
    due = after + dt.timedelta(seconds=seconds)
    clock = trigger.at
    if clock is None:
        return due
    slot = (due - dt.timedelta(days=1)).replace(
        hour=clock[0], minute=clock[1], second=0, microsecond=0
    )
    while slot <= after or slot < due - dt.timedelta(days=1):
        slot += dt.timedelta(days=1)
    return slot


def timetable_key(trigger: Trigger) -> str | None:
    """What a persisted next-due time was computed from: a change of it starts afresh."""
    if not trigger.timetabled:
        return None
    return f"{trigger.type}:{trigger.settings.get('every')}@{trigger.settings.get('at')}"
