"""Miners: what one is, and the rules a definition must keep (`sources.section_file` reads and
rewrites the `[[miners]]` section of the configuration file; `sources.miner_service` serves
them).

A miner is a saved mine job: a source, the place it reads, the wing it files into, a reference
to a credential and the options of its runs (`scope`, which says how much it reads, and
`config`). They live in the configuration file so that a person can read and edit them; REST
and the CLI change them too, and MCP only reads them, so an agent cannot widen what the daemon
mines.

The daemon owns nothing of the file but the `[[miners]]` tables: a write splices the new
section into the text it read, so every other byte, comment included, stays as it was, and
replaces the file atomically with the same permissions. A hand edit is noticed by the file's
signature on the next request; a file that no longer parses keeps the last good set and refuses
writes until it is fixed, and one invalid at start-up stops the daemon, naming the line.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.errors import Conflict, MemCastleError, NotFound
from sources.section_file import DefinitionError, Section, parse_name

KEYS = ("name", "source", "enabled", "locator", "wing", "credential", "scope", "config")
# What each kind of credential names: the variable, the file, or nothing (the source's sign-in).
CREDENTIAL_KEYS = {"env": "name", "file": "path", "oauth": None}
# Words of an option key that say it holds a secret, which belongs in a credential, never in
# the configuration file (`api_key`, `apiKey` and `github-token` are all refused).
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "privatekey",
        "accesskey",
        "secretkey",
        "credential",
        "credentials",
        "cookie",
    }
)
DIRECTORY = "directory"

Value = str | int | float | bool | list[str] | dict[str, Any]


# Refusals ---------------------------------------------------------------------------------------


class MinerInvalid(MemCastleError):
    status = 400
    code = "memcastle::miner::invalid"
    help = "correct the miner's definition and send it again; nothing was written"


class MinerNotFound(NotFound):
    code = "memcastle::miner::not_found"
    help = "list the configured miners with `memcastle miner list` (GET /api/miners)"


class ScopeBroadened(Conflict):
    code = "memcastle::miner::scope_broadened"
    help = (
        "if the miner should read more, send it again with allow_broaden "
        "(`memcastle miner set|run --allow-broaden`)"
    )


class MinerDisabled(Conflict):
    code = "memcastle::miner::disabled"
    help = "enable it first (`memcastle miner enable NAME`)"


class NotRunnable(Conflict):
    code = "memcastle::miner::not_runnable"
    help = "change the miner's options so that its source accepts them (`memcastle miner set`)"


class ConfigFileRefused(Conflict):
    code = "memcastle::miner::config_file"
    help = (
        "fix the [[miners]] section of the configuration file (the message names the line), "
        "or send the request again if the file was being edited"
    )


# The definition ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credential:
    """Where a miner's credential is found; only its kind and availability are ever shown."""

    kind: str
    reference: str | None = None

    def as_toml(self) -> dict[str, str]:
        key = CREDENTIAL_KEYS[self.kind]
        return {"type": self.kind} if key is None else {"type": self.kind, key: str(self.reference)}

    def available(self, environ: Mapping[str, str], *, signed_in: bool = False) -> bool:
        """Whether it resolves now: `oauth` when the source is signed in (`signed_in`)."""
        if self.kind == "env":
            return bool(environ.get(str(self.reference)))
        if self.kind == "file":
            path = str(self.reference)
            return os.path.isfile(path) and os.access(path, os.R_OK)
        return signed_in


@dataclass(frozen=True)
class Miner:
    name: str
    source: str
    enabled: bool = True
    locator: str | None = None
    wing: str | None = None
    credential: Credential | None = None
    scope: Mapping[str, Value] = field(default_factory=dict)
    config: Mapping[str, Value] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The miner as its `[[miners]]` table says it (what the file and a patch work on)."""
        table: dict[str, Any] = {"name": self.name, "source": self.source}
        if not self.enabled:
            table["enabled"] = False
        for key in ("locator", "wing"):
            if getattr(self, key) is not None:
                table[key] = getattr(self, key)
        if self.credential is not None:
            table["credential"] = self.credential.as_toml()
        for key in ("scope", "config"):
            if getattr(self, key):
                table[key] = dict(getattr(self, key))
        return table

    def shown(self, environ: Mapping[str, str], *, signed_in: bool = False) -> dict[str, Any]:
        """As the API shows it: the credential's kind and availability, never where it is
        (`signed_in`: whether the source is, for an `oauth` credential)."""
        credential = self.credential
        return {
            "name": self.name,
            "source": self.source,
            "enabled": self.enabled,
            "locator": self.locator,
            "wing": self.wing,
            "credential": None
            if credential is None
            else {
                "kind": credential.kind,
                "available": credential.available(environ, signed_in=signed_in),
            },
            "scope": dict(self.scope),
            "config": dict(self.config),
        }


def parse_miner(raw: Mapping[str, Any]) -> Miner:
    """A miner from its table (TOML or JSON), or `DefinitionError` naming the key at fault.
    A JSON null stands for an absent optional key."""
    if "trigger" in raw:
        raise DefinitionError(
            "trigger",
            "is the legacy [miners.trigger] table, which is no longer read: define a "
            "[[triggers]] entry that names this miner instead",
        )
    for key in raw:
        if key not in KEYS:
            raise DefinitionError(key, f"is not a miner key (known: {', '.join(KEYS)})")
    name = parse_name(raw.get("name"))
    source = raw.get("source")
    if not isinstance(source, str) or not source:
        raise DefinitionError("source", "must name a source, e.g. directory (it is required)")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise DefinitionError("enabled", "must be true or false")
    return Miner(
        name=name,
        source=source,
        enabled=enabled,
        locator=_optional_text(raw, "locator"),
        wing=_optional_text(raw, "wing"),
        credential=parse_credential(raw.get("credential")),
        scope=parse_options(raw.get("scope"), "scope", nested=False),
        config=parse_options(raw.get("config"), "config", nested=True),
    )


def _optional_text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise DefinitionError(key, "must be a non-empty string")
    return value


def parse_credential(raw: object) -> Credential | None:
    if raw is None:
        return None
    kinds = " | ".join(
        f'{{type = "{kind}"' + (f', {key} = "..."}}' if key else "}")
        for kind, key in CREDENTIAL_KEYS.items()
    )
    # A `type` that is no string (a table, a list) is no kind either, and cannot be looked up.
    if not isinstance(raw, Mapping) or str(raw.get("type")) not in CREDENTIAL_KEYS:
        raise DefinitionError("credential", f"must be one of {kinds}")
    kind = str(raw["type"])
    key = CREDENTIAL_KEYS[kind]
    for name in raw:
        if name not in ("type", key):
            raise DefinitionError(f"credential.{name}", f"is not a key of a {kind} credential")
    if key is None:
        return Credential(kind)
    reference = raw.get(key)
    if not isinstance(reference, str) or not reference:
        raise DefinitionError(f"credential.{key}", f"must be given for a {kind} credential")
    if kind == "file" and not os.path.isabs(reference):
        raise DefinitionError("credential.path", "must be an absolute path")
    return Credential(kind, reference)


def parse_options(raw: object, where: str, *, nested: bool) -> dict[str, Value]:
    """`scope` or `config`: an open table of strings, numbers, booleans and lists of strings
    (and in `config`, tables of them), whose keys never look like secrets."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DefinitionError(where, "must be a table of options")
    options: dict[str, Value] = {}
    for key, value in raw.items():
        path = f"{where}.{key}"
        if looks_secret(key):
            raise DefinitionError(
                path,
                "looks like a secret, which never goes in the configuration file: give the "
                "miner a credential (an environment variable or a file) instead",
            )
        if isinstance(value, Mapping) and nested:
            options[key] = parse_options(value, path, nested=True)
        else:
            options[key] = _option_value(value, path)
    return options


def _option_value(value: object, path: str) -> Value:
    if isinstance(value, float) and not math.isfinite(value):
        raise DefinitionError(path, "must be a finite number")
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise DefinitionError(
        path, "must be a string, a number, true or false, or a list of strings (a date as text)"
    )


def looks_secret(key: str) -> bool:
    """Whether an option's name says it holds a secret: one of `SECRET_WORDS` is a word of it,
    or two of its words make one (`api_key`)."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    pairs = ("".join(pair) for pair in itertools.pairwise(words))
    return any(word in SECRET_WORDS for word in (*words, *pairs))


# Running ----------------------------------------------------------------------------------------


def flatten(miner: Miner, extra: Mapping[str, Value] | None = None) -> dict[str, str]:
    """The mine job's options: `scope` then `config`, each value as text (a list of strings
    comma-joined), then a run's own `extra` options over them. A nested table, or a key set in
    both tables, cannot be given to a source."""
    options: dict[str, str] = {}
    for where, table in (("scope", miner.scope), ("config", miner.config)):
        for key, value in table.items():
            if key in options:
                raise NotRunnable(f"`{key}` is set in both scope and config of miner {miner.name}")
            options[key] = _as_text(value, f"{where}.{key}", miner.name)
    for key, value in (extra or {}).items():
        options[key] = _as_text(value, key, miner.name)
    return options


def _as_text(value: Value, path: str, name: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, Mapping):
        raise NotRunnable(f"`{path}` of miner {name} is a table, which no source option takes")
    return str(value)


# Broadening -------------------------------------------------------------------------------------


def broadening(old: Miner, new: Miner, breadths: Mapping[str, str | None]) -> list[str]:
    """What of a change may make the miner read more, by the breadth each option declares
    (`breadths`; an undeclared option counts as possibly broadening): another source or place,
    an added `opt_in_include` option, a removed or loosened `include`, `exclude` or `since`."""
    reasons = [key for key in ("source", "locator") if getattr(old, key) != getattr(new, key)]
    before, after = {**old.config, **old.scope}, {**new.config, **new.scope}
    for key in sorted({*before, *after}):
        if _widens(breadths.get(key), before.get(key), after.get(key)):
            reasons.append(key)
    return reasons


def _widens(breadth: str | None, old: Value | None, new: Value | None) -> bool:
    if old == new:
        return False
    if old is None:
        return breadth not in ("include", "exclude", "since")
    if new is None:
        return breadth != "opt_in_include"
    if breadth == "since":
        return not (isinstance(old, str) and isinstance(new, str) and new >= old)
    if breadth == "include":
        return not _items(new) <= _items(old)
    if breadth == "exclude":
        return not _items(new) >= _items(old)
    if breadth == "opt_in_include":
        if isinstance(old, bool) and isinstance(new, bool):
            return new and not old
        return not _items(new) <= _items(old)
    return True


def _items(value: Value) -> set[str]:
    if isinstance(value, list):
        return set(value)
    if isinstance(value, str):
        return {item.strip() for item in value.split(",") if item.strip()}
    return {str(value)}


# The service ------------------------------------------------------------------------------------

MINERS: Section[Miner] = Section(
    "miners",
    parse_miner,
    ConfigFileRefused,
    tables=("scope", "config"),
    inline=("credential",),
)
REPORT_KEYS = ("added", "removed", "changed", "enabled", "disabled", "broadened")
PATCH_KEYS = (*KEYS, "allow_broaden")
RUN_KEYS = ("options", "full", "allow_broaden")
