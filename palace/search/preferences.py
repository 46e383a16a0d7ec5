"""Source preferences (ADR-048): which mining sources a search trusts more, and how it re-scores.

A policy gives every source a level, `low`, `normal` or `high`: a global `default`, a level per
source (the `origin.source` a mined drawer keeps), and per source `criteria` that match the
metadata snapshot its origin kept (`{path, equals, level}`, a dot-path into `origin.metadata`
and the JSON scalar it must equal). It is configured in three layers, read once at start-up
(configuration.md section 6): `[preferences]` of the configuration file, then
`[palace.preferences]` of the same file, then `<palace>/preferences.toml`, which is the
preferences table itself. A later layer overrides an earlier one field by field; a source's
`criteria` list is replaced only where a layer gives one (`criteria = []` clears it). An
unknown key or a bad value stops start-up with `memcastle::config::invalid` naming the key and
the file: a preference that silently did nothing would be worse than a daemon that says why it
will not start.

A search re-scores only when the policy is not the default one (search.md section 5), so
without a policy every answer is exactly what it was before preferences existed. When one is
set, the search ranks a wider pool of candidates (`candidate_pool`), and `rerank` re-scores
each page of hits (the direct hits, then the expanded tail on its own): the raw scores
normalized within the page, plus a bounded freshness and the level's adjustment.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.errors import ConfigInvalid, InputInvalid
from kernel.validation import parse_instant

# What each level adds to a normalized score: bounded, so that authority reorders close hits and
# never buries a far better one.
ADJUSTMENTS: Mapping[str, float] = {"low": -0.08, "normal": 0.0, "high": 0.08}
LEVELS = tuple(ADJUSTMENTS)
DEFAULT_LEVEL = "normal"
# Freshness is FRESHNESS / (1 + age in days / FRESHNESS_DAYS): 0.12 today, half that a month on.
FRESHNESS = 0.12
FRESHNESS_DAYS = 30.0
# The candidates a re-scored search ranks: clamp(4 * limit, 20, 200).
POOL_FACTOR, POOL_MIN, POOL_MAX = 4, 20, 200
# The per-palace layer, in the palace's directory.
PALACE_FILE = "preferences.toml"

HELP = (
    "fix the source preferences in that file and start the daemon again (preferences are read "
    "at start-up)"
)

Scalar = str | int | float | bool


# The policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Criterion:
    """A source's rule: the drawers whose `origin.metadata` holds `equals` at `path` take
    `level`."""

    path: str
    equals: Scalar
    level: str

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.split("."))

    def matches(self, metadata: object) -> bool:
        """Whether `metadata` holds `equals` at `path`: JSON equality, so `true` is not `1`
        but `1` is `1.0`."""
        value = metadata
        for segment in self.segments:
            if not isinstance(value, Mapping) or segment not in value:
                return False
            value = value[segment]
        return _same_scalar(value, self.equals)

    def view(self) -> dict[str, Any]:
        return {"path": self.path, "equals": self.equals, "level": self.level}


@dataclass(frozen=True)
class SourcePolicy:
    """One source's preference: its level (None: the global default) and its criteria, in the
    order declared (the first wins a tie)."""

    level: str | None = None
    criteria: tuple[Criterion, ...] = ()


@dataclass(frozen=True)
class Preference:
    """The level a drawer resolved to, the source it came from (when it was mined) and the
    criterion that set the level (when one did): what `signals.preference` shows."""

    level: str
    source: str | None = None
    criterion: Criterion | None = None

    def signal(self) -> dict[str, Any]:
        signal: dict[str, Any] = {"level": self.level}
        if self.source is not None:
            signal["source"] = self.source
        if self.criterion is not None:
            signal["criterion"] = self.criterion.view()
        return signal


@dataclass(frozen=True)
class Preferences:
    """The merged policy. The default policy (every level `normal`) leaves search as it is."""

    default: str = DEFAULT_LEVEL
    sources: Mapping[str, SourcePolicy] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """Whether any level the policy can resolve to is not `normal`. A policy that names
        sources only to keep them `normal` changes no level, so it is the default policy and
        search answers as it always did."""
        levels = [self.default]
        for source in self.sources.values():
            levels += [source.level or self.default, *(c.level for c in source.criteria)]
        return any(level != DEFAULT_LEVEL for level in levels)

    def resolve(self, origin: object) -> Preference:
        """The level of a drawer with this `source.origin`: the default without an origin, else
        its source's level (or the default), overridden by the matching criterion with the
        most path segments (the first declared of those)."""
        if not isinstance(origin, Mapping):
            return Preference(self.default)
        source = origin.get("source")
        if not isinstance(source, str):
            return Preference(self.default)
        policy = self.sources.get(source, SourcePolicy())
        metadata = origin.get("metadata")
        criterion = max(
            (c for c in policy.criteria if c.matches(metadata)),
            key=lambda c: len(c.segments),
            default=None,
        )
        if criterion is not None:
            return Preference(criterion.level, source, criterion)
        return Preference(policy.level or self.default, source)

    def rerank(self, hits: Sequence[dict[str, Any]], now: dt.datetime) -> list[dict[str, Any]]:
        """The page `hits` re-scored and re-ordered (best first, equal scores by id):
        `(raw - low) / range + freshness + adjustment`, `high` and `low` the best and worst raw
        score of the page and `range = max(high - low, 0.5 * max(|high|, |low|, 0.01))`, so one
        hit, or hits all scored alike, are not stretched to the full scale. The raw scores stay
        in the legs' signals, beside `signals.preference`."""
        if not hits:
            return []
        raws = [float(hit["score"]) for hit in hits]
        high, low = max(raws), min(raws)
        spread = max(high - low, 0.5 * max(abs(high), abs(low), 0.01))
        rescored = []
        for hit, raw in zip(hits, raws, strict=True):
            origin = (hit.get("source") or {}).get("origin")
            preference = self.resolve(origin)
            score = (
                (raw - low) / spread
                + freshness(_instant_of(origin, hit), now)
                + ADJUSTMENTS[preference.level]
            )
            signals = {**hit.get("signals", {}), "preference": preference.signal()}
            rescored.append({**hit, "score": score, "signals": signals})
        rescored.sort(key=lambda hit: (-hit["score"], hit["id"]))
        return rescored


def candidate_pool(limit: int) -> int:
    """How many candidates a re-scored search ranks before it keeps `limit`: enough for a
    preferred source to climb from below the page."""
    return min(max(POOL_FACTOR * limit, POOL_MIN), POOL_MAX)


def freshness(instant: dt.datetime | None, now: dt.datetime) -> float:
    """`0.12 / (1 + age_days / 30)`. A date in the future counts as today, so that no drawer
    scores more than a fresh one (and the formula never divides by zero); a drawer with no
    readable date at all gets none."""
    if instant is None:
        return 0.0
    age_days = max((now - instant).total_seconds() / 86_400, 0.0)
    return FRESHNESS / (1 + age_days / FRESHNESS_DAYS)


def _instant_of(origin: object, hit: Mapping[str, Any]) -> dt.datetime | None:
    """When the memory dates from: its document's `occurred_at` kept on the origin, else its
    `valid_from`."""
    if isinstance(origin, Mapping):
        occurred = _instant(origin.get("occurred_at"))
        if occurred is not None:
            return occurred
    return _instant(hit.get("valid_from"))


def _instant(raw: object) -> dt.datetime | None:
    if isinstance(raw, dt.datetime):
        return raw if raw.tzinfo else raw.replace(tzinfo=dt.UTC)
    try:
        return parse_instant(raw, "occurred_at")
    except InputInvalid:
        return None


def _same_scalar(value: object, expected: Scalar) -> bool:
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(value, bool) and value == expected
    if isinstance(expected, int | float):
        return isinstance(value, int | float) and value == expected
    return isinstance(value, str) and value == expected


# Loading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceLayer:
    """What one layer says of a source: None where it says nothing."""

    level: str | None = None
    criteria: tuple[Criterion, ...] | None = None


@dataclass(frozen=True)
class Layer:
    """One layer of the policy, as written: None (or absent) where it says nothing."""

    default: str | None = None
    sources: Mapping[str, SourceLayer] = field(default_factory=dict)


def load_preferences(config_file: Path | None, palace_path: Path) -> Preferences:
    """The policy of the daemon configured by `config_file` (None: no file) for the palace at
    `palace_path`, its three layers merged."""
    layers = _config_layers(config_file) if config_file is not None else []
    palace_file = palace_path / PALACE_FILE
    palace_table = _read_toml(palace_file)
    if palace_table is not None:
        layers.append(parse_layer(palace_table, "", palace_file))
    return merge(layers)


def _config_layers(path: Path) -> list[Layer]:
    """`[preferences]`, then `[palace.preferences]`, of the configuration file."""
    table = _read_toml(path) or {}
    layers = []
    if "preferences" in table:
        layers.append(parse_layer(table["preferences"], "preferences", path))
    palace = table.get("palace")
    if isinstance(palace, dict) and "preferences" in palace:
        layers.append(parse_layer(palace["preferences"], "palace.preferences", path))
    return layers


def merge(layers: Sequence[Layer]) -> Preferences:
    """The layers merged field by field, each overriding the ones before it."""
    default = DEFAULT_LEVEL
    levels: dict[str, str | None] = {}
    criteria: dict[str, tuple[Criterion, ...]] = {}
    for layer in layers:
        default = layer.default or default
        for name, source in layer.sources.items():
            levels[name] = source.level or levels.get(name)
            if source.criteria is not None:
                criteria[name] = source.criteria
            else:
                criteria.setdefault(name, ())
    return Preferences(
        default, {name: SourcePolicy(levels[name], criteria[name]) for name in levels}
    )


def parse_layer(raw: object, key: str, path: Path) -> Layer:
    """One layer, checked strictly: `key` is where its table sits in `path` (empty for a
    whole file), to name a bad key as it is written."""
    table = _table(raw, key, path, ("default", "sources"))
    default = _level(table["default"], _key(key, "default"), path) if "default" in table else None
    sources_key = _key(key, "sources")
    sources = _table(table.get("sources", {}), sources_key, path, None)
    return Layer(
        default,
        {name: _source(value, _key(sources_key, name), path) for name, value in sources.items()},
    )


def _source(raw: object, key: str, path: Path) -> SourceLayer:
    table = _table(raw, key, path, ("level", "criteria"))
    level = _level(table["level"], _key(key, "level"), path) if "level" in table else None
    if "criteria" not in table:
        return SourceLayer(level)
    listed = table["criteria"]
    if not isinstance(listed, list):
        raise _invalid(_key(key, "criteria"), path, "a list of {path, equals, level}", listed)
    return SourceLayer(
        level,
        tuple(
            _criterion(item, f"{_key(key, 'criteria')}[{index}]", path)
            for index, item in enumerate(listed)
        ),
    )


def _criterion(raw: object, key: str, path: Path) -> Criterion:
    table = _table(raw, key, path, ("path", "equals", "level"))
    for name in ("path", "equals", "level"):
        if name not in table:
            raise ConfigInvalid(
                f"missing key `{_key(key, name)}` in {path}: a criterion needs path, equals "
                "and level",
                help=HELP,
            )
    dotted = table["path"]
    if not isinstance(dotted, str) or not all(dotted.split(".")):
        raise _invalid(
            _key(key, "path"), path, "a dot-path into the metadata, such as `repo.name`", dotted
        )
    equals = table["equals"]
    finite = not isinstance(equals, float) or math.isfinite(equals)
    if not isinstance(equals, str | int | float | bool) or not finite:
        raise _invalid(
            _key(key, "equals"), path, "a JSON scalar (a string, a number or a boolean)", equals
        )
    return Criterion(dotted, equals, _level(table["level"], _key(key, "level"), path))


def _table(raw: object, key: str, path: Path, allowed: tuple[str, ...] | None) -> dict[str, Any]:
    """`raw` as a table whose keys are all `allowed` (None: any key)."""
    if not isinstance(raw, dict):
        raise _invalid(key or "(the file)", path, "a table", raw)
    for name in raw:
        if allowed is not None and name not in allowed:
            expected = ", ".join(f"`{each}`" for each in allowed)
            hint = (
                " (this file is the preferences table itself: write `default` and "
                "`[sources.<name>]` at its top level)"
                if not key and name == "preferences"
                else ""
            )
            raise ConfigInvalid(
                f"unknown key `{_key(key, name)}` in {path}: expected {expected}{hint}",
                help=HELP,
            )
    return raw


def _level(raw: object, key: str, path: Path) -> str:
    if isinstance(raw, str) and raw in ADJUSTMENTS:
        return raw
    raise _invalid(key, path, "`low`, `normal` or `high`", raw)


def _key(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _invalid(key: str, path: Path, expected: str, got: object) -> ConfigInvalid:
    return ConfigInvalid(
        f"invalid value for `{key}` from {path}: expected {expected}, got {got!r}", help=HELP
    )


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The TOML file at `path`, or None when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigInvalid(f"{path} cannot be read: {exc.strerror}", help=HELP) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(f"{path} is not valid TOML: {exc}", help=HELP) from None
