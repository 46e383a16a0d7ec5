"""Daemon configuration: built-in defaults < TOML file < `MEMCASTLE_*` environment < flags.

Every setting is declared once in `SETTINGS` with its default, its environment variable and the
parser that validates it. Validation runs once on the merged result; a bad value stops start-up
with `memcastle::config::invalid` naming the key and where the value came from.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.errors import ConfigInvalid, MemCastleError
from kernel.profiles import (
    BUILTIN_LOCAL,
    Profile,
    ProfileInvalid,
    parse_profiles,
    tables_from_flat,
)
from kernel.values import (
    argv_value,
    ed25519_keys_value,
    http_url_value,
    registries_value,
    web_address_problem,
    web_api_value,
)

# A broker URL may carry a password, so it is never echoed back either.
SECRET_KEYS = ("auth.token", "store.password", "jobs.broker_url", "extraction.api_key")
LOG_LEVELS = ("trace", "debug", "info", "warn", "warning", "error", "off")


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _xdg(variable: str, fallback: str, env: Mapping[str, str]) -> Path:
    """An XDG base directory; unset, empty or relative values are ignored."""
    value = env.get(variable, "")
    if value and os.path.isabs(value):
        return Path(value)
    return _home() / fallback


def default_config_file(env: Mapping[str, str]) -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config", env) / "memcastle" / "config.toml"


def default_palace_path(env: Mapping[str, str]) -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share", env) / "memcastle" / "default"


def default_sources_dir(env: Mapping[str, str]) -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share", env) / "memcastle" / "sources"


def default_assets_dir() -> Path:
    """Read-only package assets: `share/memcastle` beside the interpreter's `bin`, which is
    inside the virtual environment the package is installed in (never under XDG)."""
    return Path(sys.prefix) / "share" / "memcastle"


def state_dir(env: Mapping[str, str]) -> Path:
    return _xdg("XDG_STATE_HOME", ".local/state", env) / "memcastle"


# Parsers take the raw value (a TOML value, or a string from the environment) and return the
# typed value, raising ValueError with a reason that completes "expected ...".


def _bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes", "on"):
        return True
    if isinstance(raw, str) and raw.strip().lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError("true or false")


def _port(raw: object) -> int:
    if isinstance(raw, bool):
        raise ValueError("a port number 0-65535")
    try:
        port = int(raw) if isinstance(raw, (int, str)) else -1
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValueError("a port number 0-65535")
    return port


def _ip(raw: object) -> str:
    text = str(raw).strip() if isinstance(raw, str) else ""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        hint = " (give the port separately as server.port)" if ":" in text and "." in text else ""
        raise ValueError(f"an IP address such as 127.0.0.1 or ::1, not a host name{hint}") from None


def is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback


def origins_value(raw: object) -> tuple[str, ...]:
    """Exact web origins (`scheme://host[:port]`), as a list or one comma-separated string."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple):
        raise ValueError("a list of origins such as http://localhost:3000")
    origins: list[str] = []
    for item in items:
        text = item.strip() if isinstance(item, str) else ""
        if not text and isinstance(raw, str):
            continue
        if not re.fullmatch(r"https?://[^/\s?#]+", text):
            raise ValueError("origins such as http://localhost:3000 (a scheme and a host, no path)")
        origins.append(text)
    return tuple(origins)


def _absolute_path(raw: object) -> Path:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("an absolute path")
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        raise ValueError("an absolute path")
    return path


def _choice(*choices: str) -> Callable[[object], str]:
    def parse(raw: object) -> str:
        if isinstance(raw, str) and raw.strip().lower() in choices:
            return raw.strip().lower()
        raise ValueError(" or ".join(f"`{c}`" for c in choices))

    return parse


def _log_filter(raw: object) -> str:
    """A level (`info`) or a directive list (`memcastle=debug,warn`)."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"a level ({', '.join(LOG_LEVELS)}) or a directive like memcastle=debug")
    for part in raw.split(","):
        level = part.split("=", 1)[-1].strip().lower()
        if level not in LOG_LEVELS:
            raise ValueError(
                f"a level ({', '.join(LOG_LEVELS)}) or a directive like memcastle=debug"
            )
    return raw.strip()


def _secret(raw: object) -> str:
    if not isinstance(raw, str) or len(raw) < 16:
        raise ValueError("a secret of at least 16 characters")
    if raw != raw.strip():
        raise ValueError("a secret without leading or trailing whitespace")
    return raw


def _optional_str(raw: object) -> str:
    if not isinstance(raw, str):
        raise ValueError("a string")
    return raw


def _text(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("a non-empty string")
    return raw


def _store_url(raw: object) -> str:
    if not isinstance(raw, str) or not re.match(r"^wss?://[^/\s]+", raw):
        raise ValueError("a ws:// or wss:// URL of a SurrealDB server")
    return raw


_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def _store_sync(raw: object) -> str:
    """`every`, `never`, or an interval over 100ms such as `500ms`, `5s`, `1m`."""
    text = raw.strip().lower() if isinstance(raw, str) else ""
    if text in ("every", "never"):
        return text
    match = _DURATION.match(text)
    if match and int(match.group(1)) * _DURATION_MS[match.group(2)] > 100:
        return text
    raise ValueError("`every`, `never` or an interval over 100ms such as `500ms`, `5s`, `1m`")


def _ranged(
    convert: Callable[[Any], float], low: float, high: float, expected: str
) -> Callable[[object], float]:
    """A number from `low` to `high`, given as a TOML number or a string (the environment)."""

    def parse(raw: object) -> float:
        if not isinstance(raw, bool) and isinstance(raw, (int, float, str)):
            try:
                number = convert(raw)
            except ValueError:
                number = low - 1
            if low <= number <= high:
                return number
        raise ValueError(expected)

    return parse


def _whole(raw: Any) -> int:
    if isinstance(raw, float):
        raise ValueError("not a whole number")
    return int(raw)


def _int_range(low: int, high: int) -> Callable[[object], float]:
    return _ranged(_whole, low, high, f"a whole number from {low} to {high}")


def _fraction(low: float, high: float) -> Callable[[object], float]:
    return _ranged(float, low, high, f"a number from {low} to {high}")


# Fractions allowed: tests shorten waits this way.
_seconds = _ranged(float, 0.01, 3600, "a number of seconds from 0.01 to 3600")


def _broker_url(raw: object) -> str:
    if not isinstance(raw, str) or not re.match(r"^rediss?://\S+", raw):
        raise ValueError("a redis:// or rediss:// URL")
    return raw


@dataclass(frozen=True)
class Setting:
    key: str
    default: object
    parse: Callable[[object], object]
    env: str | None = None
    env_trim: bool = False
    flag: str | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("palace.path", None, _absolute_path, "MEMCASTLE_PALACE_PATH", flag="--palace"),
    Setting("server.bind", "127.0.0.1", _ip, "MEMCASTLE_BIND", flag="--bind"),
    Setting("server.port", 8420, _port, "MEMCASTLE_PORT", flag="--port"),
    Setting("logging.level", "info", _log_filter, "MEMCASTLE_LOG"),
    Setting("logging.format", "text", _choice("text", "json"), "MEMCASTLE_LOG_FORMAT"),
    Setting("auth.enabled", False, _bool, "MEMCASTLE_AUTH_ENABLED"),
    Setting("auth.token", None, _secret, "MEMCASTLE_AUTH_TOKEN", env_trim=True),
    Setting("web.enable", False, _bool, "MEMCASTLE_WEB_ENABLE"),
    Setting("db.bind", "127.0.0.1", _ip, "MEMCASTLE_DB_BIND"),
    Setting("db.port", 8000, _port, "MEMCASTLE_DB_PORT"),
    Setting("db.allow_remote", False, _bool, "MEMCASTLE_DB_ALLOW_REMOTE"),
    Setting("db.allowed_origins", (), origins_value, "MEMCASTLE_DB_ALLOWED_ORIGINS"),
    Setting("webhook.enable", False, _bool),
    Setting("webhook.bind", "127.0.0.1", _ip),
    Setting("webhook.port", 8787, _port),
    Setting("webhook.allow_remote", False, _bool),
    Setting("webhook.max_body_bytes", 1_048_576, _int_range(1, 67_108_864)),
    Setting("webhook.max_concurrent", 16, _int_range(1, 4096)),
    Setting("store.mode", "embedded", _choice("embedded", "remote")),
    Setting("store.sync", "every", _store_sync, "MEMCASTLE_STORE_SYNC"),
    Setting("store.url", None, _store_url),
    Setting("store.namespace", "memcastle", _optional_str),
    Setting("store.database", "palace", _optional_str),
    Setting("store.username", None, _optional_str),
    Setting("store.password", None, _optional_str),
    Setting(
        "jobs.max_concurrency",
        4,
        _int_range(1, 256),
        "MEMCASTLE_JOBS_MAX_CONCURRENCY",
        flag="--concurrency",
    ),
    Setting(
        "jobs.drain_timeout_secs", 10, _int_range(1, 86400), "MEMCASTLE_JOBS_DRAIN_TIMEOUT_SECS"
    ),
    Setting("jobs.lease_ttl_secs", 30, _int_range(3, 86400), "MEMCASTLE_JOBS_LEASE_TTL_SECS"),
    Setting("jobs.retention_days", 30, _int_range(0, 36500), "MEMCASTLE_JOBS_RETENTION_DAYS"),
    Setting("jobs.broker_url", None, _broker_url, "MEMCASTLE_JOBS_BROKER_URL"),
    Setting("dedup.enabled", True, _bool, "MEMCASTLE_DEDUP_ENABLED"),
    Setting("dedup.near_threshold", 0.9, _fraction(0.5, 1.0), "MEMCASTLE_DEDUP_NEAR_THRESHOLD"),
    Setting("dedup.entity_fuzzy", True, _bool, "MEMCASTLE_DEDUP_ENTITY_FUZZY"),
    Setting("events.keepalive_secs", 15.0, _seconds, "MEMCASTLE_EVENTS_KEEPALIVE_SECS"),
    Setting("mining.chunk_chars", 6000, _int_range(200, 100_000), "MEMCASTLE_MINING_CHUNK_CHARS"),
    Setting(
        "mining.max_file_bytes",
        2_097_152,
        _int_range(1, 67_108_864),
        "MEMCASTLE_MINING_MAX_FILE_BYTES",
    ),
    Setting(
        "mining.max_documents",
        2000,
        _int_range(1, 1_000_000),
        "MEMCASTLE_MINING_MAX_DOCUMENTS",
    ),
    Setting("mining.sources_dir", None, _absolute_path, "MEMCASTLE_MINING_SOURCES_DIR"),
    Setting("mining.bundled_dir", None, _absolute_path, "MEMCASTLE_MINING_BUNDLED_DIR"),
    Setting(
        "mining.source_memory_mib",
        256,
        _int_range(16, 4096),
        "MEMCASTLE_MINING_SOURCE_MEMORY_MIB",
    ),
    Setting(
        "mining.source_timeout_secs",
        60,
        _int_range(1, 3600),
        "MEMCASTLE_MINING_SOURCE_TIMEOUT_SECS",
    ),
    # The official registry is to be decided (configuration.md): none until one exists.
    Setting("mining.registries", (), registries_value, "MEMCASTLE_MINING_REGISTRIES"),
    Setting(
        "mining.github_api_url",
        "https://api.github.com",
        web_api_value,
        "MEMCASTLE_MINING_GITHUB_API_URL",
        env_trim=True,
    ),
    Setting("mining.trust", "optional", _choice("optional", "required"), "MEMCASTLE_MINING_TRUST"),
    Setting("mining.trusted_keys", (), ed25519_keys_value, "MEMCASTLE_MINING_TRUSTED_KEYS"),
    Setting(
        "extraction.provider",
        "none",
        _choice("none", "heuristic", "command", "http"),
        "MEMCASTLE_EXTRACTION_PROVIDER",
    ),
    Setting("extraction.command", None, argv_value),
    Setting("extraction.url", None, http_url_value, "MEMCASTLE_EXTRACTION_URL", env_trim=True),
    Setting("extraction.model", None, _text, "MEMCASTLE_EXTRACTION_MODEL", env_trim=True),
    Setting("extraction.api_key", None, _text, "MEMCASTLE_EXTRACTION_API_KEY", env_trim=True),
    Setting(
        "extraction.timeout_secs",
        120,
        _ranged(float, 1, 3600, "a number of seconds from 1 to 3600"),
        "MEMCASTLE_EXTRACTION_TIMEOUT_SECS",
    ),
    Setting("extraction.batch_size", 8, _int_range(1, 256), "MEMCASTLE_EXTRACTION_BATCH_SIZE"),
    Setting(
        "extraction.min_confidence",
        0.3,
        _fraction(0.0, 1.0),
        "MEMCASTLE_EXTRACTION_MIN_CONFIDENCE",
    ),
    Setting("extraction.max_entities", 32, _int_range(1, 1000)),
    Setting("extraction.max_relations", 64, _int_range(1, 10_000)),
    # The profile embedded automatically and searched by default; empty for none.
    Setting(
        "embeddings.default_profile",
        "local",
        _optional_str,
        "MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE",
        env_trim=True,
    ),
)


@dataclass(frozen=True)
class StoreConfig:
    mode: str
    sync: str
    url: str | None
    namespace: str
    database: str
    username: str | None
    password: str | None

    def __repr__(self) -> str:
        # The remote password must never reach a log line or a traceback.
        return f"StoreConfig(mode={self.mode!r}, url={self.url!r}, sync={self.sync!r})"


@dataclass(frozen=True)
class DatabaseConsoleConfig:
    """`[db]`: where `memcastle db start` opens the database console unless told otherwise.
    No setting opens it."""

    bind: str = "127.0.0.1"
    port: int = 8000
    allow_remote: bool = False
    allowed_origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class WebhookConfig:
    """`[webhook]`: the listener for webhook deliveries, a socket of its own that is bound only
    while it is enabled here and a webhook trigger is enabled."""

    enable: bool = False
    bind: str = "127.0.0.1"
    port: int = 8787
    allow_remote: bool = False
    max_body_bytes: int = 1_048_576
    max_concurrent: int = 16


@dataclass(frozen=True)
class JobsConfig:
    max_concurrency: int
    drain_timeout_secs: int
    lease_ttl_secs: int
    broker_url: str | None
    # Finished jobs older than this many days are removed by a daily sweep (0: kept forever).
    retention_days: int = 30

    def __repr__(self) -> str:
        # A broker URL may carry a password.
        return (
            f"JobsConfig(max_concurrency={self.max_concurrency!r}, "
            f"lease_ttl_secs={self.lease_ttl_secs!r}, retention_days={self.retention_days!r}, "
            f"broker={bool(self.broker_url)!r})"
        )


@dataclass(frozen=True)
class DedupConfig:
    enabled: bool = True
    near_threshold: float = 0.9
    # Entity resolution's one-typo rule and `possibly_same_as` candidates (docs/graph.md).
    entity_fuzzy: bool = True


@dataclass(frozen=True)
class MiningConfig:
    chunk_chars: int = 6000
    max_file_bytes: int = 2_097_152
    max_documents: int = 2000
    # Installed sources (`<name>/` with its manifest and component), and the bundled ones.
    sources_dir: Path = field(default_factory=lambda: default_sources_dir(os.environ))
    bundled_dir: Path = field(default_factory=lambda: default_assets_dir() / "sources")
    # Caps of one call of a source; a manifest's [limits] can only lower them.
    source_memory_mib: int = 256
    source_timeout_secs: int = 60
    # Where sources are found by name, in order (sources.md 6), and the releases API that
    # resolves a registry's repository entries.
    registries: tuple[str, ...] = ()
    github_api_url: str = "https://api.github.com"
    # `optional` or `required`: whether a registry's package must be signed by one of
    # `trusted_keys` (base64 ed25519 public keys).
    trust: str = "optional"
    trusted_keys: tuple[str, ...] = ()
    # `[mining.oauth.<source>]`: the OAuth client (and endpoints) a source signs in with, in
    # place of the ones its manifest declares (your own OAuth app, GitHub Enterprise).
    oauth_clients: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ExtractionConfig:
    """`[extraction]`: who reads drawers for the knowledge graph (`none`: nobody) and the limits
    put on what it answers. The API key is never shown."""

    provider: str = "none"
    command: tuple[str, ...] = ()
    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_secs: float = 120.0
    batch_size: int = 8
    min_confidence: float = 0.3
    max_entities: int = 32
    max_relations: int = 64

    @property
    def configured(self) -> bool:
        return self.provider != "none"


@dataclass(frozen=True)
class EmbeddingsConfig:
    """`[embeddings]`: the default profile's name (None: nothing is embedded automatically) and
    every profile by name. A profile's repr never shows its API key."""

    default_profile: str | None = BUILTIN_LOCAL.name
    profiles: Mapping[str, Profile] = field(
        default_factory=lambda: {BUILTIN_LOCAL.name: BUILTIN_LOCAL}
    )


@dataclass(frozen=True)
class Config:
    palace_path: Path
    bind: str
    port: int
    log_level: str
    log_format: str
    auth_enabled: bool
    auth_token: str | None
    web_enable: bool
    store: StoreConfig
    config_file: Path | None
    jobs: JobsConfig
    events_keepalive_secs: float
    dedup: DedupConfig
    mining: MiningConfig = MiningConfig()
    embeddings: EmbeddingsConfig = field(default_factory=EmbeddingsConfig)
    extraction: ExtractionConfig = ExtractionConfig()
    db: DatabaseConsoleConfig = DatabaseConsoleConfig()
    webhook: WebhookConfig = WebhookConfig()

    def __repr__(self) -> str:
        return (
            f"Config(palace_path={str(self.palace_path)!r}, bind={self.bind!r}, "
            f"port={self.port!r}, auth_enabled={self.auth_enabled!r}, store={self.store!r})"
        )


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{key}."))
        else:
            flat[key] = value
    return flat


def _read_file(path: Path, explicit: bool) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not explicit:
            return {}
        raise MemCastleError(
            f"config file {path} does not exist",
            code="memcastle::io::failed",
            help="create the file or drop --config / MEMCASTLE_CONFIG to use the defaults",
        ) from None
    except OSError as exc:
        raise MemCastleError(
            f"config file {path} cannot be read: {exc.strerror}",
            code="memcastle::io::failed",
            help="check the file's permissions",
        ) from None
    try:
        return _flatten(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(
            f"config file {path} is not valid TOML: {exc}",
            help="fix the TOML syntax and start again",
        ) from None


def load_config(
    *,
    config_file: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Config:
    """Merge defaults, the config file, the environment and flag overrides, then validate."""
    env = os.environ if env is None else env
    explicit = config_file or env.get("MEMCASTLE_CONFIG") or None
    path = Path(explicit).expanduser() if explicit else default_config_file(env)
    file_values = _read_file(path, explicit=bool(explicit))

    # Each value is what its setting's parser returned, of the type its field below declares.
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for setting in SETTINGS:
        raw, origin = setting.default, "the default"
        if setting.key in file_values:
            raw, origin = file_values[setting.key], f"{path}"
        if setting.env and setting.env in env:
            env_value = env[setting.env]
            raw, origin = (env_value.strip() if setting.env_trim else env_value), setting.env
        if overrides and overrides.get(setting.key) is not None:
            raw, origin = overrides[setting.key], f"the flag {setting.flag or setting.key}"
        values[setting.key] = _validate(setting, raw, origin)
        origins[setting.key] = origin

    if values["palace.path"] is None:
        values["palace.path"] = default_palace_path(env)
    _check_store(values)
    _check_console(values)
    _check_webhook(values)
    _check_trust(values, origins)
    return Config(
        palace_path=values["palace.path"],
        bind=values["server.bind"],
        port=values["server.port"],
        log_level=values["logging.level"],
        log_format=values["logging.format"],
        auth_enabled=values["auth.enabled"],
        auth_token=values["auth.token"],
        web_enable=values["web.enable"],
        store=StoreConfig(
            mode=values["store.mode"],
            sync=values["store.sync"],
            url=values["store.url"],
            namespace=values["store.namespace"],
            database=values["store.database"],
            username=values["store.username"],
            password=values["store.password"],
        ),
        config_file=path if path.exists() else None,
        jobs=JobsConfig(
            max_concurrency=values["jobs.max_concurrency"],
            drain_timeout_secs=values["jobs.drain_timeout_secs"],
            lease_ttl_secs=values["jobs.lease_ttl_secs"],
            retention_days=values["jobs.retention_days"],
            broker_url=values["jobs.broker_url"],
        ),
        events_keepalive_secs=values["events.keepalive_secs"],
        dedup=DedupConfig(
            enabled=values["dedup.enabled"],
            near_threshold=values["dedup.near_threshold"],
            entity_fuzzy=values["dedup.entity_fuzzy"],
        ),
        mining=MiningConfig(
            chunk_chars=values["mining.chunk_chars"],
            max_file_bytes=values["mining.max_file_bytes"],
            max_documents=values["mining.max_documents"],
            sources_dir=values["mining.sources_dir"] or default_sources_dir(env),
            bundled_dir=values["mining.bundled_dir"] or default_assets_dir() / "sources",
            source_memory_mib=values["mining.source_memory_mib"],
            source_timeout_secs=values["mining.source_timeout_secs"],
            registries=values["mining.registries"],
            github_api_url=values["mining.github_api_url"],
            trust=values["mining.trust"],
            trusted_keys=values["mining.trusted_keys"],
            oauth_clients=_oauth_clients(file_values, path),
        ),
        embeddings=_embeddings(values, file_values, origins, path),
        extraction=_extraction(values, origins),
        db=DatabaseConsoleConfig(
            bind=values["db.bind"],
            port=values["db.port"],
            allow_remote=values["db.allow_remote"],
            allowed_origins=values["db.allowed_origins"],
        ),
        webhook=WebhookConfig(
            enable=values["webhook.enable"],
            bind=values["webhook.bind"],
            port=values["webhook.port"],
            allow_remote=values["webhook.allow_remote"],
            max_body_bytes=values["webhook.max_body_bytes"],
            max_concurrent=values["webhook.max_concurrent"],
        ),
    )


def _validate(setting: Setting, raw: object, origin: str) -> object:
    if raw is None:
        return None
    try:
        return setting.parse(raw)
    except ValueError as exc:
        shown = "<secret>" if setting.key in SECRET_KEYS else repr(raw)
        raise ConfigInvalid(
            f"invalid value for `{setting.key}` from {origin}: expected {exc}, got {shown}"
        ) from None


def _check_store(values: dict[str, Any]) -> None:
    if values["store.mode"] == "remote" and not values["store.url"]:
        raise ConfigInvalid(
            "invalid value for `store.url`: a remote store needs a ws:// or wss:// URL"
        )
    if values["store.mode"] == "embedded" and values["store.url"]:
        raise ConfigInvalid(
            'invalid value for `store.url`: it is only used with store.mode = "remote"'
        )
    if values["store.mode"] == "embedded" and values["jobs.broker_url"]:
        raise ConfigInvalid(
            "invalid value for `jobs.broker_url`: a broker is only used with store.mode = "
            '"remote" (an embedded palace runs its jobs inside the daemon)'
        )


def _check_console(values: dict[str, Any]) -> None:
    if not is_loopback(values["db.bind"]) and not values["db.allow_remote"]:
        raise ConfigInvalid(
            f"invalid value for `db.bind`: {values['db.bind']} is not a loopback address, and "
            "the database console would send the token in cleartext; set db.allow_remote = true "
            "(with auth.enabled) to allow it"
        )
    if values["db.port"] != 0 and values["db.port"] == values["server.port"]:
        raise ConfigInvalid(
            f"invalid value for `db.port`: {values['db.port']} is the daemon's own port "
            "(server.port); give the database console another"
        )


def _check_webhook(values: dict[str, Any]) -> None:
    """A webhook listener beyond loopback must be asked for and stand behind authentication;
    its port is its own."""
    if not is_loopback(values["webhook.bind"]) and not (
        values["webhook.allow_remote"] and values["auth.enabled"]
    ):
        raise ConfigInvalid(
            f"invalid value for `webhook.bind`: {values['webhook.bind']} is not a loopback "
            "address; set webhook.allow_remote = true with auth.enabled = true to listen there"
        )
    port = values["webhook.port"]
    for other in ("server.port", "db.port"):
        if port != 0 and port == values[other]:
            raise ConfigInvalid(
                f"invalid value for `webhook.port`: {port} is also `{other}`; give the webhook "
                "listener a port of its own"
            )


def _check_trust(values: dict[str, Any], origins: dict[str, str]) -> None:
    """`required` trust with no key to trust would refuse every registry package: a mistake,
    said at start rather than at the first install."""
    if values["mining.trust"] == "required" and not values["mining.trusted_keys"]:
        raise ConfigInvalid(
            f"invalid value for `mining.trust` from {origins['mining.trust']}: `required` needs "
            "at least one key in mining.trusted_keys (MEMCASTLE_MINING_TRUSTED_KEYS)"
        )


# What `[mining.oauth.<source>]` may set: the client, and the endpoints it signs in at.
OAUTH_CLIENT_KEYS = ("client_id", "token_url", "device_authorization_url", "authorize_url")
SOURCE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$")


def _oauth_clients(file_values: Mapping[str, object], path: Path) -> dict[str, dict[str, str]]:
    """`[mining.oauth.<source>]` tables, each key checked: a client id, and endpoints that are
    https (http only to this machine), since codes and tokens cross them."""
    clients: dict[str, dict[str, str]] = {}
    for key, raw in file_values.items():
        if not key.startswith("mining.oauth."):
            continue
        source, _, name = key.removeprefix("mining.oauth.").partition(".")
        if not SOURCE_NAME.match(source) or name not in OAUTH_CLIENT_KEYS:
            raise ConfigInvalid(
                f"`{key}` in {path} is not a setting: `[mining.oauth.<source>]` takes "
                f"{', '.join(OAUTH_CLIENT_KEYS)}"
            )
        text = raw.strip() if isinstance(raw, str) else ""
        problem = "is empty" if not text else None
        if name != "client_id" and text:
            problem = web_address_problem(text)
        if problem is not None:
            raise ConfigInvalid(f"invalid value for `{key}` from {path}: {raw!r} {problem}")
        clients.setdefault(source, {})[name] = text
    return clients


def _extraction(values: dict[str, Any], origins: dict[str, str]) -> ExtractionConfig:
    """`[extraction]`; the command provider needs its argv, the http provider its URL."""
    provider = str(values["extraction.provider"])
    needs = {"command": "extraction.command", "http": "extraction.url"}.get(provider)
    if needs is not None and values[needs] is None:
        expected = (
            'the program and its arguments, like ["/usr/bin/extract", "-q"]'
            if provider == "command"
            else "an http:// or https:// URL"
        )
        raise ConfigInvalid(
            f"invalid value for `{needs}`: the {provider} provider (from "
            f"{origins['extraction.provider']}) needs {expected}"
        )
    return ExtractionConfig(
        provider=provider,
        command=values["extraction.command"] or (),
        url=values["extraction.url"],
        model=values["extraction.model"],
        api_key=values["extraction.api_key"],
        timeout_secs=float(values["extraction.timeout_secs"]),
        batch_size=int(values["extraction.batch_size"]),
        min_confidence=float(values["extraction.min_confidence"]),
        max_entities=int(values["extraction.max_entities"]),
        max_relations=int(values["extraction.max_relations"]),
    )


def _embeddings(
    values: dict[str, Any], file_values: dict[str, object], origins: dict[str, str], path: Path
) -> EmbeddingsConfig:
    """The profiles of `[embeddings.profiles.<name>]`; the default must name one of them."""
    try:
        profiles = parse_profiles(tables_from_flat(file_values))
    except ProfileInvalid as exc:
        got = "" if exc.shown == "None" else f", got {exc.shown}"
        raise ConfigInvalid(
            f"invalid value for `{exc.key}` from {path}: expected {exc.expected}{got}"
        ) from None
    default = str(values["embeddings.default_profile"] or "").strip() or None
    if default is not None and default not in profiles:
        raise ConfigInvalid(
            f"invalid value for `embeddings.default_profile` from "
            f"{origins['embeddings.default_profile']}: no profile named {default!r} is configured "
            f"(configured: {', '.join(sorted(profiles))}; an empty value means none)"
        )
    return EmbeddingsConfig(default_profile=default, profiles=profiles)
