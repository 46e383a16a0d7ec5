"""`memcastle doctor`: what is wrong with this installation, found without changing anything.

The checks read the configuration file and the directories it names, and, when a daemon answers,
its health and status over HTTP. They never open the datastore, never run a provider and never
write a file, so they are safe on a broken installation and beside a running daemon. Each check
gives a `Finding`; only an `error` makes the command fail (cli.md section 3).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kernel import __version__
from kernel.config import SETTINGS, Config, default_config_file, is_loopback, load_config
from kernel.errors import MemCastleError
from kernel.profiles import KEYS as PROFILE_KEYS
from memcastle_project.cli import DaemonClient, NotRunning, locate
from palace.search.preferences import load_preferences
from sources.miners import MINERS, Miner
from sources.section_file import FileInvalid, SectionFile
from sources.triggers import TRIGGERS, Trigger

Status = Literal["ok", "warning", "error", "skipped"]
STATUSES: tuple[Status, ...] = ("ok", "warning", "error", "skipped")
KNOWN_KEYS = frozenset(setting.key for setting in SETTINGS)
# Tables read by their own code rather than by `SETTINGS`: the rewritable sections (checked
# strictly below) and the source preferences, whose keys are adapters' names and criteria.
OPEN_TABLES = ("miners", "triggers", "preferences", "palace.preferences")
PROFILES = "embeddings.profiles."
DAEMON_CHECKS = ("health", "status", "version", "datastore", "migrations")


@dataclass(frozen=True)
class Finding:
    area: str
    check: str
    status: Status
    summary: str
    remediation: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The JSON shape: `remediation` only when there is something to do."""
        shown = {
            "area": self.area,
            "check": self.check,
            "status": self.status,
            "summary": self.summary,
        }
        if self.remediation is not None:
            shown["remediation"] = self.remediation
        return shown


def failed(found: list[Finding]) -> bool:
    return any(finding.status == "error" for finding in found)


def findings(
    config_file: str | None, env: Mapping[str, str], *, palace: str | None = None
) -> list[Finding]:
    """Every check, in the order a person fixes things: the file, its settings and sections, the
    directories and exposure they configure, then the daemon that runs them. `config_file` and
    `palace` are the `--config` and `--palace` flags (None when not given); the file is found
    as `kernel.config.load_config` finds it."""
    explicit = config_file or env.get("MEMCASTLE_CONFIG") or None
    path = Path(explicit).expanduser().absolute() if explicit else default_config_file(env)
    file, text = _file(path, explicit=explicit is not None)
    toml, table = _toml(path, text)
    settings, config = _settings(config_file, env, palace, table)
    return [
        file,
        toml,
        settings,
        *_keys(table),
        *_sections(path, None if table is None else text),
        *_configured(config, env),
        *_daemon(config),
    ]


# The configuration file -------------------------------------------------------------------------

UNPARSED = "the config file cannot be parsed"


def _file(path: Path, *, explicit: bool) -> tuple[Finding, str | None]:
    """The file's text ("" when the default file is absent: the defaults apply), or None when
    it cannot be used at all."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            return Finding(
                "config",
                "file",
                "error",
                f"{path} does not exist (named by --config or MEMCASTLE_CONFIG)",
                "create the file, or drop --config / MEMCASTLE_CONFIG to use the defaults",
            ), None
        return Finding("config", "file", "ok", f"no file at {path}: the defaults apply"), ""
    except (OSError, UnicodeDecodeError) as exc:
        return Finding(
            "config",
            "file",
            "error",
            f"{path} cannot be read: {exc}",
            "check the file's permissions and that it is UTF-8 text",
        ), None
    return Finding("config", "file", "ok", str(path)), text


def _toml(path: Path, text: str | None) -> tuple[Finding, dict[str, Any] | None]:
    if text is None:
        return _skipped("config", "toml", "the config file cannot be read"), None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Finding(
            "config",
            "toml",
            "error",
            f"{path} is not valid TOML: {exc}",
            "fix the TOML syntax at the line and column named",
        ), None
    return Finding("config", "toml", "ok", "the file is valid TOML"), table


def _settings(
    config_file: str | None,
    env: Mapping[str, str],
    palace: str | None,
    table: dict[str, Any] | None,
) -> tuple[Finding, Config | None]:
    """The configuration merged and validated as the daemon loads it, which stops at the first
    invalid value; None when it does not load."""
    if table is None:
        return _skipped("config", "settings", UNPARSED), None
    try:
        config = load_config(config_file=config_file, env=env, overrides={"palace.path": palace})
    except MemCastleError as exc:
        return Finding("config", "settings", "error", exc.message, exc.help), None
    summary = "every setting is valid (file, environment and flags)"
    return Finding("config", "settings", "ok", summary), config


def _keys(table: dict[str, Any] | None) -> list[Finding]:
    """One warning per key no part of MemCastle reads: loading ignores them, so a misspelt
    setting silently keeps its default."""
    if table is None:
        return [_skipped("config", "keys", UNPARSED)]
    unknown = [key for key in _flat_keys(table) if not _known(key)]
    if not unknown:
        return [Finding("config", "keys", "ok", "every key is one MemCastle reads")]
    return [
        Finding(
            "config",
            "keys",
            "warning",
            f"`{key}` is not a setting MemCastle reads: it is ignored",
            f"check the spelling of `{key}` against docs/configuration.md, or remove it",
        )
        for key in unknown
    ]


def _flat_keys(table: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Dotted keys of the file's values, as `kernel.config` flattens them (a list of tables,
    `[[miners]]`, is one value)."""
    for name, value in table.items():
        if isinstance(value, dict):
            yield from _flat_keys(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def _known(key: str) -> bool:
    if key in KNOWN_KEYS or any(key == t or key.startswith(f"{t}.") for t in OPEN_TABLES):
        return True
    if key.startswith(PROFILES):
        # `embeddings.profiles.<name>.<key>`: names are the user's, keys are the profiles'.
        return key.rpartition(".")[2] in PROFILE_KEYS
    return False


def _sections(path: Path, text: str | None) -> list[Finding]:
    """`[[miners]]` and `[[triggers]]` read as strictly as the daemon reads them at start-up
    (where an invalid one stops it), then every trigger's miner looked up. `text` is None when
    the file cannot be parsed."""
    if text is None:
        return [_skipped("miners", "section", UNPARSED), _skipped("triggers", "section", UNPARSED)]
    miners, miners_finding = _section(SectionFile(path, MINERS), text)
    triggers, triggers_finding = _section(SectionFile(path, TRIGGERS), text)
    found = [miners_finding, triggers_finding]
    if miners is not None and triggers is not None:
        found.extend(_references(miners, triggers))
    return found


def _section[E: (Miner, Trigger)](
    file: SectionFile[E], text: str
) -> tuple[list[E] | None, Finding]:
    """The section's entries and one finding for it: the first entry at fault, naming its line."""
    key = file.section.key
    try:
        entries = file.parse(text)
    except FileInvalid as exc:
        return None, Finding(
            key,
            "section",
            "error",
            str(exc),
            f"fix the [[{key}]] entry at the line named: the daemon does not start while the "
            "section is invalid",
        )
    enabled = sum(1 for entry in entries if entry.enabled)
    count = f"{len(entries)} entry" if len(entries) == 1 else f"{len(entries)} entries"
    summary = f"{count}, all valid ({enabled} enabled)"
    return entries, Finding(key, "section", "ok", summary)


def _references(miners: list[Miner], triggers: list[Trigger]) -> list[Finding]:
    """A trigger fires its miner by name: an enabled one naming no miner cannot run; a disabled
    one only becomes a problem when it is enabled."""
    names = {miner.name for miner in miners}
    missing = [trigger for trigger in triggers if trigger.miner not in names]
    if not missing:
        return [Finding("triggers", "miners named", "ok", "every trigger names a configured miner")]
    return [
        Finding(
            "triggers",
            "miners named",
            "error" if trigger.enabled else "warning",
            f"{'enabled' if trigger.enabled else 'disabled'} trigger {trigger.name!r} names "
            f"miner {trigger.miner!r}, which is not configured",
            f"define a [[miners]] entry named {trigger.miner!r}, or point the trigger at "
            "another miner (`memcastle trigger set NAME --miner MINER`)",
        )
        for trigger in missing
    ]


# What the settings configure --------------------------------------------------------------------


def _configured(config: Config | None, env: Mapping[str, str]) -> list[Finding]:
    if config is None:
        reason = "the settings are invalid"
        return [
            _skipped("paths", "palace", reason),
            _skipped("paths", "sources", reason),
            _skipped("auth", "token", reason),
            _skipped("server", "exposure", reason),
            _skipped("config", "preferences", reason),
        ]
    return [
        _directory("palace", config.palace_path, "error"),
        _directory("sources", config.mining.sources_dir, "warning"),
        _token(config, env),
        _exposure(config),
        _preferences(config),
    ]


def _preferences(config: Config) -> Finding:
    """The source preferences of the file and the palace, read as the daemon reads them at
    start-up (an invalid policy stops it)."""
    try:
        policy = load_preferences(config.config_file, config.palace_path)
    except MemCastleError as exc:
        return Finding("config", "preferences", "error", exc.message, exc.help)
    summary = "a policy re-scores search hits" if policy.active else "none set"
    return Finding("config", "preferences", "ok", summary)


def _directory(check: str, path: Path, severity: Status) -> Finding:
    """Whether the daemon can use the directory: an existing one must be writable; a missing one
    is created at first use, which needs its nearest existing parent writable. Asked of
    `os.access`, so nothing is created to find out."""
    if path.exists():
        if not path.is_dir():
            return Finding(
                "paths", check, severity, f"{path} is not a directory", "move the file away"
            )
        if not os.access(path, os.W_OK | os.X_OK):
            return Finding(
                "paths",
                check,
                severity,
                f"{path} is not writable by this user",
                "run the daemon as the directory's owner, or fix its permissions",
            )
        return Finding("paths", check, "ok", f"{path} exists and is writable")
    parent = next(ancestor for ancestor in path.parents if ancestor.exists())
    if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
        return Finding(
            "paths", check, "ok", f"{path} does not exist yet: it is created in {parent}"
        )
    return Finding(
        "paths",
        check,
        severity,
        f"{path} does not exist and cannot be created: {parent} is not a writable directory",
        "create the directory, or configure another path",
    )


def _token(config: Config, env: Mapping[str, str]) -> Finding:
    """A daemon with auth needs a secret: the configured one, or a token generated into the
    palace, which only the daemon can see. The secret itself is never shown."""
    if not config.auth_enabled:
        return Finding("auth", "token", "ok", "authentication is disabled")
    if config.auth_token:
        origin = "MEMCASTLE_AUTH_TOKEN" if env.get("MEMCASTLE_AUTH_TOKEN") else "auth.token"
        return Finding("auth", "token", "ok", f"authentication is enabled; the token is {origin}")
    return Finding(
        "auth",
        "token",
        "warning",
        "authentication is enabled with no auth.token or MEMCASTLE_AUTH_TOKEN: the daemon starts "
        "only with a token generated into the palace, and clients need it too",
        "run `memcastle auth generate` and give clients MEMCASTLE_AUTH_TOKEN, or set auth.token",
    )


def _exposure(config: Config) -> Finding:
    address = f"{config.bind}:{config.port}"
    if is_loopback(config.bind):
        return Finding("server", "exposure", "ok", f"listens on {address}, loopback only")
    if config.auth_enabled:
        return Finding("server", "exposure", "ok", f"listens on {address}, with authentication")
    return Finding(
        "server",
        "exposure",
        "warning",
        f"listens on {address}, beyond loopback, without authentication: anyone who reaches it "
        "reads and writes the palace",
        "set auth.enabled = true (with a token), or server.bind = 127.0.0.1",
    )


# The running daemon -----------------------------------------------------------------------------


def _daemon(config: Config | None) -> list[Finding]:
    """Read-only requests to the daemon this configuration selects (its registry file, else the
    configured address), when one answers."""
    if config is None:
        return [_skipped("daemon", check, "the settings are invalid") for check in DAEMON_CHECKS]
    endpoint = locate(config)
    client = DaemonClient(endpoint, token=config.auth_token, mode=None)
    where = f"{endpoint.url} (from the {endpoint.source})"
    with client.http:
        try:
            client.call("GET", "/api/health")
        except NotRunning:
            stale = "; its registry file is stale" if endpoint.stale else ""
            reason = f"no daemon answered at {where}{stale}"
            return [_skipped("daemon", check, reason) for check in DAEMON_CHECKS]
        except MemCastleError as exc:
            return [
                Finding("daemon", "health", "error", f"{where}: {exc.message}", exc.help),
                *(
                    _skipped("daemon", check, "the health check failed")
                    for check in DAEMON_CHECKS[1:]
                ),
            ]
        return [Finding("daemon", "health", "ok", f"a daemon answers at {where}"), *_status(client)]


def _status(client: DaemonClient) -> list[Finding]:
    try:
        report = client.call("GET", "/api/status")
    except MemCastleError as exc:
        return [
            Finding("daemon", "status", "error", f"/api/status: {exc.message}", exc.help),
            *(_skipped("daemon", check, "/api/status failed") for check in DAEMON_CHECKS[2:]),
        ]
    return [
        Finding(
            "daemon", "status", "ok", f"pid {report.get('pid')}, palace {report.get('palace')}"
        ),
        _version(str(report.get("version"))),
        _datastore(report.get("datastore") or {}),
        _migrations(report.get("migrations")),
    ]


def _version(running: str) -> Finding:
    if running == __version__:
        return Finding("daemon", "version", "ok", f"MemCastle {running}")
    return Finding(
        "daemon",
        "version",
        "warning",
        f"the daemon runs MemCastle {running}, this command line is {__version__}",
        "restart the daemon (`memcastle daemon restart`) so both run the same version",
    )


def _datastore(datastore: Mapping[str, Any]) -> Finding:
    if datastore.get("healthy"):
        return Finding("daemon", "datastore", "ok", "the datastore answers")
    return Finding(
        "daemon",
        "datastore",
        "error",
        f"the datastore is unreachable: {datastore.get('error', 'no reason given')}",
        "read the daemon log; a remote store must be running and reachable",
    )


def _migrations(migrations: Mapping[str, int] | None) -> Finding:
    if not migrations:
        return _skipped("daemon", "migrations", "the datastore did not report them")
    shown = f"{migrations['applied']}/{migrations['available']} applied"
    if migrations["pending"]:
        return Finding(
            "daemon",
            "migrations",
            "error",
            f"{migrations['pending']} migrations are pending ({shown})",
            "restart the daemon (`memcastle daemon restart`): it applies them at start-up",
        )
    return Finding("daemon", "migrations", "ok", shown)


def _skipped(area: str, check: str, reason: str) -> Finding:
    return Finding(area, check, "skipped", reason)
