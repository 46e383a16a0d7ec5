"""Embedding profiles: named, compatible embedding spaces, read from `[embeddings.profiles.<name>]`.

A profile says who makes its vectors (`provider`: local, command, http or external), with which
model, how long they are (`dimensions`) and how the text was turned into them (`pipeline`). Every
stored vector carries its profile's provenance, so vectors of different spaces are never mixed.

The built-in `local` profile (all-MiniLM-L6-v2, 384 dimensions, run offline) always exists unless
a `[embeddings.profiles.local]` table replaces it, so a fresh install has semantic search.

This module is imported by the configuration loader: it must stay free of heavy imports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from kernel.values import argv_value, http_url_value

PROVIDERS = ("local", "command", "http", "external")
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_MODEL_ALIASES = ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
LOCAL_DIMENSIONS = 384
# Tokens per window (with [CLS] and [SEP]) and tokens shared by neighbouring windows.
LOCAL_WINDOW = 256
LOCAL_STRIDE = 32
# Turns in each passage a conversation's drawer is also embedded as (palace/embeddings/passages.py).
LOCAL_PASSAGE_TURNS = 6
# Each new vector records that the int8 graph made it, its feed-forward products quantized row by
# row, with passages. Vectors of the float graph, of the int8 graph before it quantized by row,
# and those made before passages, are kept, not re-embedded: the graphs agree to a cosine of 0.99
# (0.995 and more between the two int8 graphs) and the overall retrieval figures of tests/eval to
# about 0.01, and a drawer without passages still has its windows (docs/retrieval.md), so they
# rank together as one space.
LOCAL_PIPELINE = (
    f"minilm-l6-v2 onnx int8, feed-forward by row; windows {LOCAL_WINDOW}/{LOCAL_STRIDE}; "
    f"conversations also as passages of {LOCAL_PASSAGE_TURNS} turns; mean pool; l2"
)
# A command or HTTP provider is given the start of a drawer: the stored content is unchanged.
INPUT_CHARS = 8000
DEFAULT_TIMEOUT_SECS = 30.0
DEFAULT_BATCH_SIZE = 16
MAX_DIMENSIONS = 65_536
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Each key and the providers that use it; any other key in a profile table is ignored, as
# unknown keys are elsewhere in the file.
KEYS: dict[str, tuple[str, ...]] = {
    "provider": PROVIDERS,
    "model": PROVIDERS,
    "dimensions": PROVIDERS,
    "pipeline": ("command", "http", "external"),
    "command": ("command",),
    "url": ("http",),
    "api_key": ("http",),
    "timeout_secs": ("command", "http"),
    "batch_size": ("command", "http"),
}


@dataclass(frozen=True)
class Profile:
    name: str
    provider: str
    model: str | None
    dimensions: int
    pipeline: str
    # command: the argv, run without a shell.
    command: tuple[str, ...] = ()
    # http: the base URL (`/embeddings` is appended) and the bearer key, never shown.
    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_secs: float = DEFAULT_TIMEOUT_SECS
    batch_size: int = DEFAULT_BATCH_SIZE

    def provenance(self) -> dict[str, Any]:
        """What is stored with every vector of this profile."""
        return {
            "provider": self.provider,
            "model": self.model,
            "dimensions": self.dimensions,
            "pipeline": self.pipeline,
        }

    @property
    def can_embed(self) -> bool:
        """Whether the daemon can make vectors itself; an external profile's come from callers."""
        return self.provider != "external"


BUILTIN_LOCAL = Profile(
    name="local",
    provider="local",
    model=LOCAL_MODEL,
    dimensions=LOCAL_DIMENSIONS,
    pipeline=LOCAL_PIPELINE,
    batch_size=DEFAULT_BATCH_SIZE,
)


class ProfileInvalid(ValueError):
    """A profile table breaks a rule; `key` is the full config key at fault."""

    def __init__(self, key: str, expected: str, shown: object = None, secret: bool = False):
        super().__init__(expected)
        self.key = key
        self.expected = expected
        self.shown = "<secret>" if secret else repr(shown)


def tables_from_flat(values: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """`embeddings.profiles.<name>.<key>` entries of a flattened config file, by profile."""
    prefix = "embeddings.profiles."
    tables: dict[str, dict[str, object]] = {}
    for key, value in values.items():
        if not key.startswith(prefix):
            continue
        name, _, setting = key[len(prefix) :].rpartition(".")
        if not name:
            raise ProfileInvalid(key, "a table [embeddings.profiles.<name>]", value)
        tables.setdefault(name, {})[setting] = value
    return tables


def parse_profiles(tables: Mapping[str, Mapping[str, object]]) -> dict[str, Profile]:
    """The configured profiles, the built-in `local` among them unless a table replaces it.

    Raises `ProfileInvalid` naming the key at fault."""
    profiles = {BUILTIN_LOCAL.name: BUILTIN_LOCAL}
    for name in sorted(tables):
        profiles[name] = parse_profile(name, tables[name])
    return profiles


def parse_profile(name: str, table: Mapping[str, object]) -> Profile:
    prefix = f"embeddings.profiles.{name}"
    if not NAME.match(name):
        raise ProfileInvalid(
            prefix,
            "a profile name of lowercase letters, digits, `-` and `_` (at most 64)",
            name,
        )
    provider = table.get("provider")
    if provider not in PROVIDERS:
        raise ProfileInvalid(
            f"{prefix}.provider", " or ".join(f"`{p}`" for p in PROVIDERS), provider
        )
    assert isinstance(provider, str)
    for key in table:
        if key in KEYS and provider not in KEYS[key]:
            users = " and ".join(KEYS[key])
            raise ProfileInvalid(
                f"{prefix}.{key}",
                f"no `{key}` for a {provider} profile (only {users} use it)",
                table[key],
                secret=key == "api_key",
            )

    def get(key: str, parse: Any, default: Any = None) -> Any:
        if table.get(key) is None:
            return default
        try:
            return parse(table[key])
        except ValueError as exc:
            raise ProfileInvalid(
                f"{prefix}.{key}", str(exc), table[key], secret=key == "api_key"
            ) from None

    model = get("model", _text)
    dimensions = get("dimensions", _whole(1, MAX_DIMENSIONS))
    if provider == "local":
        if model is not None and model.lower() not in LOCAL_MODEL_ALIASES:
            raise ProfileInvalid(
                f"{prefix}.model", f"`{LOCAL_MODEL}`, the one model the local provider runs", model
            )
        if dimensions is not None and dimensions != LOCAL_DIMENSIONS:
            raise ProfileInvalid(
                f"{prefix}.dimensions", f"{LOCAL_DIMENSIONS}, the local model's size", dimensions
            )
        return Profile(
            name=name,
            provider=provider,
            model=LOCAL_MODEL,
            dimensions=LOCAL_DIMENSIONS,
            pipeline=LOCAL_PIPELINE,
        )
    if dimensions is None:
        raise ProfileInvalid(
            f"{prefix}.dimensions",
            f"the length of the profile's vectors, a whole number from 1 to {MAX_DIMENSIONS}",
        )
    command: tuple[str, ...] = get("command", argv_value, ())
    url = get("url", http_url_value)
    if provider == "command" and not command:
        raise ProfileInvalid(
            f"{prefix}.command", 'the program and its arguments, like ["/usr/bin/embed", "-q"]'
        )
    if provider == "http" and url is None:
        raise ProfileInvalid(f"{prefix}.url", "an http:// or https:// URL")
    return Profile(
        name=name,
        provider=provider,
        model=model,
        dimensions=dimensions,
        pipeline=get("pipeline", _text) or _default_pipeline(provider, command),
        command=command,
        url=url,
        api_key=get("api_key", _text),
        timeout_secs=get("timeout_secs", _number(1, 3600), DEFAULT_TIMEOUT_SECS),
        batch_size=get("batch_size", _whole(1, 1024), DEFAULT_BATCH_SIZE),
    )


def _default_pipeline(provider: str, command: tuple[str, ...]) -> str:
    # Never the whole argv or the URL: either can carry a credential.
    if provider == "command":
        return f"command {PurePath(command[0]).name}; first {INPUT_CHARS} chars; l2"
    if provider == "http":
        return f"http openai /embeddings; first {INPUT_CHARS} chars; l2"
    return "external: vectors supplied by callers; l2"


def _text(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("a non-empty string")
    return raw


def _whole(low: int, high: int) -> Any:
    def parse(raw: object) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
            raise ValueError(f"a whole number from {low} to {high}")
        return raw

    return parse


def _number(low: float, high: float) -> Any:
    def parse(raw: object) -> float:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not low <= raw <= high:
            raise ValueError(f"a number of seconds from {low:g} to {high:g}")
        return float(raw)

    return parse
