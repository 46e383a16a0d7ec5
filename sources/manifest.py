"""The manifest of a mining source package, `memcastle-source.toml` (docs/source-packages.md).

A manifest is what a user agrees to before code runs in the daemon: the permissions it lists are
all the sandbox grants, so every table refuses a key it does not know (a misspelt
`[permissions.filesystem] wirte` must not be silently dropped and then read as "asks nothing").
Parsing checks the manifest on its own; whether this daemon can run it is `incompatibility`,
because an incompatible source is still installed and shown as unavailable with the reason.

The consent digest fixes exactly which permissions were agreed: it is the SHA-256 of a canonical
JSON text, so a client in any language can compute it and an update asking for the same (or
less) needs no new consent.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import semantic_version

from kernel import __version__
from kernel.errors import MemCastleError
from sources.adapters import Capabilities, OptionSpec

# The version of the WIT package `memcastle:source` this host implements
# (sources/wit/memcastle-source.wit).
CONTRACT = "0.4.0"
# The newest manifest format this daemon reads.
FORMAT = 1
MANIFEST_FILE = "memcastle-source.toml"

NAME_PATTERN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?")
CONTRACT_PATTERN = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?")
ENV_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OPTION_PATTERN = re.compile(r"[a-z][a-z0-9_-]*")
OPTION_TYPES = ("string", "path", "date")
BREADTHS = ("include", "opt_in_include", "exclude", "since")
TRIGGERS = ("watch", "webhook")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
DEFAULT_CALLBACK_PATH = "/callback"
# `[permissions.filesystem] read` may name the place being mined rather than a fixed directory.
LOCATOR = "locator"

# The keys each table knows.
_ROOT_KEYS = (
    *("format", "source", "compatibility", "capabilities", "permissions", "options"),
    *("triggers", "limits", "build", "test"),
)
_SOURCE_KEYS = ("name", "version", "description", "license", "homepage", "repository")
_CAPABILITY_KEYS = ("incremental", "retains_raw", "needs_credentials")
_PERMISSION_KEYS = ("network", "process", "env", "filesystem", "oauth")
_OAUTH_KEYS = (
    *("client_id", "token_url", "device_authorization_url", "authorize_url", "scopes"),
    *("callback_path", "on_demand"),
)
# Keys refused with a reason of their own rather than as merely unknown.
_REFUSED_KEYS = {
    "permissions.oauth.client_secret": (
        "`permissions.oauth.client_secret` is not accepted: a source is public code and cannot "
        "keep a secret; the daemon signs in with the device flow or PKCE"
    ),
}

# A requirement clause that is a bare or caret version: Cargo's default operator, whose bounds
# this module computes itself (semantic_version differs from Cargo for `^0` and `^0.0`).
CARET_CLAUSE = re.compile(
    r"\^?\s*(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?)?)?"
)


class ManifestInvalid(MemCastleError):
    status = 400
    code = "memcastle::source::manifest_invalid"
    help = (
        "correct memcastle-source.toml as the message says; docs/source-packages.md lists every "
        "table and key"
    )


class Incompatible(MemCastleError):
    status = 400
    code = "memcastle::source::incompatible"
    help = (
        "install a version of the source made for this MemCastle (its contract and `memcastle` "
        "requirement), or upgrade MemCastle"
    )


@dataclass(frozen=True)
class OAuth:
    """The sign-in a source declares. A source is public code, so it has no client secret: the
    daemon signs in with the device flow or authorization code with PKCE."""

    client_id: str
    token_url: str
    device_authorization_url: str | None = None
    authorize_url: str | None = None
    scopes: tuple[str, ...] = ()
    callback_path: str = DEFAULT_CALLBACK_PATH
    on_demand: bool = False

    def normalized(self) -> dict[str, Any]:
        """Every declared field with its default applied, so writing a default out or leaving it
        implicit gives the same digest; scopes are a set."""
        normal: dict[str, Any] = {
            "client_id": self.client_id,
            "token_url": self.token_url,
            "scopes": sorted(set(self.scopes)),
            "callback_path": self.callback_path,
            "on_demand": self.on_demand,
        }
        if self.device_authorization_url is not None:
            normal["device_authorization_url"] = self.device_authorization_url
        if self.authorize_url is not None:
            normal["authorize_url"] = self.authorize_url
        return normal

    def covers(self, other: OAuth) -> bool:
        """The same client and endpoints, and at least `other`'s scopes."""
        mine, theirs = self.normalized(), other.normalized()
        mine_scopes, their_scopes = set(mine.pop("scopes")), set(theirs.pop("scopes"))
        return mine == theirs and their_scopes <= mine_scopes


@dataclass(frozen=True)
class Permissions:
    """Everything the sandbox may grant the source; nothing else is granted."""

    network: bool = False
    process: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    filesystem_read: tuple[str, ...] = ()
    oauth: OAuth | None = None

    def asks(self) -> bool:
        """Whether anything is asked at all: a source asking nothing needs no consent."""
        return bool(self.network or self.process or self.env or self.filesystem_read) or (
            self.oauth is not None
        )

    def normalized(self) -> dict[str, Any]:
        """The JSON-ready form the consent digest is computed over: lists as sets (sorted,
        without repeats), `oauth` only when declared."""
        normal: dict[str, Any] = {
            "network": self.network,
            "process": sorted(set(self.process)),
            "env": sorted(set(self.env)),
            "filesystem": {"read": sorted(set(self.filesystem_read))},
        }
        if self.oauth is not None:
            normal["oauth"] = self.oauth.normalized()
        return normal

    def covers(self, other: Permissions) -> bool:
        """Whether these permissions include everything `other` asks: an update asking for the
        same or less needs no new consent."""
        if other.network and not self.network:
            return False
        for granted, asked in (
            (self.process, other.process),
            (self.env, other.env),
            (self.filesystem_read, other.filesystem_read),
        ):
            if not set(asked) <= set(granted):
                return False
        if other.oauth is None:
            return True
        return self.oauth is not None and self.oauth.covers(other.oauth)


@dataclass(frozen=True)
class Limits:
    """Lower caps than the daemon's `source_memory_mib` and `source_timeout_secs`; the sandbox
    takes the smaller of the two, so a manifest can never raise them."""

    memory_mib: int | None = None
    timeout_secs: int | None = None


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    description: str
    contract: str
    memcastle: str  # a semver requirement on the MemCastle version
    format: int = FORMAT
    license: str | None = None
    homepage: str | None = None
    repository: str | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    permissions: Permissions = field(default_factory=Permissions)
    options: tuple[OptionSpec, ...] = ()
    triggers: frozenset[str] = frozenset()
    limits: Limits = field(default_factory=Limits)
    build_command: tuple[str, ...] = ()
    build_output: str | None = None
    test_fixtures: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The manifest as the API shows an installed source. `[build]` and `[test]` are left
        out: they only serve the author's own `source build` and `source test`."""
        return {
            "format": self.format,
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "license": self.license,
            "homepage": self.homepage,
            "repository": self.repository,
            "contract": self.contract,
            "memcastle": self.memcastle,
            "capabilities": self.capabilities.as_dict(),
            "permissions": self.permissions.normalized(),
            "options": [option.as_dict() for option in self.options],
            "triggers": sorted(self.triggers),
            "limits": {
                "memory_mib": self.limits.memory_mib,
                "timeout_secs": self.limits.timeout_secs,
            },
        }


class _Table:
    """One TOML table of the manifest, known by its dotted path: refuses keys it does not know
    and reads typed values, every refusal naming the key in full."""

    def __init__(self, path: str, values: object, known: Collection[str] | None) -> None:
        """`known` None: a table whose keys are names the author chooses (`[options]`)."""
        if not isinstance(values, dict):
            raise ManifestInvalid(f"`{path}` must be a table")
        self.path = path
        self.values: dict[str, Any] = values
        for key in values:
            if known is not None and key not in known:
                refused = _REFUSED_KEYS.get(self.key(key))
                listed = ", ".join(sorted(known))
                raise ManifestInvalid(
                    refused or f"`{self.key(key)}` is not a manifest key (known: {listed})"
                )

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def table(self, name: str, known: Collection[str] | None) -> _Table | None:
        if name not in self.values:
            return None
        return _Table(self.key(name), self.values[name], known)

    def string(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ManifestInvalid(f"`{self.key(name)}` must be a non-empty string")
        return value

    def required_string(self, name: str) -> str:
        value = self.string(name)
        if value is None:
            raise ManifestInvalid(f"`{self.key(name)}` is missing")
        return value

    def boolean(self, name: str) -> bool:
        value = self.values.get(name, False)
        if not isinstance(value, bool):
            raise ManifestInvalid(f"`{self.key(name)}` must be true or false")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        value = self.values.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ManifestInvalid(f"`{self.key(name)}` must be a list of strings")
        return tuple(value)

    def positive(self, name: str) -> int | None:
        value = self.values.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ManifestInvalid(f"`{self.key(name)}` must be a positive whole number")
        return value


def parse_manifest(text: str, *, builtin_names: Collection[str] = ("directory",)) -> Manifest:
    """The manifest in `text`, checked against every rule; `builtin_names` are the names a
    package may not take. Raises `ManifestInvalid` naming the key at fault, or `Incompatible`
    for a format newer than this daemon reads (its keys may be ones this daemon cannot know)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ManifestInvalid(f"the manifest is not valid TOML: {error}") from error
    format_ = _format(document.get("format", FORMAT))
    root = _Table("", document, _ROOT_KEYS)
    source = _required_table(root, "source", _SOURCE_KEYS)
    compatibility = _required_table(root, "compatibility", ("contract", "memcastle"))
    capabilities = _capabilities(root.table("capabilities", _CAPABILITY_KEYS))
    build = root.table("build", ("command", "output"))
    test = root.table("test", ("fixtures",))
    return Manifest(
        format=format_,
        name=_name(source, builtin_names),
        version=_version(source),
        description=source.required_string("description"),
        license=source.string("license"),
        homepage=_link(source, "homepage"),
        repository=_link(source, "repository"),
        contract=_contract(compatibility),
        memcastle=_memcastle(compatibility),
        capabilities=capabilities,
        permissions=_permissions(root.table("permissions", _PERMISSION_KEYS), capabilities),
        options=_options(root.table("options", None)),
        triggers=_triggers(root.table("triggers", TRIGGERS)),
        limits=_limits(root.table("limits", ("memory_mib", "timeout_secs"))),
        build_command=_build_command(build),
        build_output=build.required_string("output") if build else None,
        test_fixtures=test.required_string("fixtures") if test else None,
    )


def _format(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ManifestInvalid("`format` must be a positive whole number")
    if value > FORMAT:
        raise Incompatible(
            f"the manifest is format {value}; this MemCastle reads format {FORMAT} and older",
            help="upgrade MemCastle, or install a version of the source made for this one",
        )
    return value


def _required_table(root: _Table, name: str, known: Collection[str]) -> _Table:
    table = root.table(name, known)
    if table is None:
        raise ManifestInvalid(f"the manifest has no `[{name}]` table")
    return table


def _name(source: _Table, builtin_names: Collection[str]) -> str:
    name = source.required_string("name")
    if not NAME_PATTERN.fullmatch(name):
        raise ManifestInvalid(
            f"`source.name` {name!r} must be 1 to 48 of a-z, 0-9 and `-`, neither starting nor "
            "ending with `-`"
        )
    if name in builtin_names:
        raise ManifestInvalid(f"`source.name` {name!r} is the name of a built-in source")
    return name


def _version(source: _Table) -> str:
    version = source.required_string("version")
    try:
        semantic_version.Version(version)
    except ValueError as error:
        raise ManifestInvalid(
            f"`source.version` {version!r} is not a semantic version (like 1.2.3)"
        ) from error
    return version


def _link(source: _Table, name: str) -> str | None:
    """A web address: shown to users as a link, so never a `javascript:` or `file:` one."""
    link = source.string(name)
    if link is not None and urlsplit(link).scheme not in ("https", "http"):
        raise ManifestInvalid(f"`source.{name}` {link!r} must be an http(s) address")
    return link


def _contract(compatibility: _Table) -> str:
    contract = compatibility.required_string("contract")
    if not CONTRACT_PATTERN.fullmatch(contract):
        raise ManifestInvalid(
            f"`compatibility.contract` {contract!r} must be a contract version like 0.4 or 0.4.0"
        )
    return contract


def _memcastle(compatibility: _Table) -> str:
    requirement = compatibility.required_string("memcastle")
    try:
        _requirement_spec(requirement)
    except ValueError as error:
        raise ManifestInvalid(
            f"`compatibility.memcastle` {requirement!r} is not a version requirement "
            '(like ">=0.1, <0.3" or "^0.1")'
        ) from error
    return requirement


def _requirement_spec(requirement: str) -> Any:
    """A `semantic_version.SimpleSpec` with Cargo's meaning of `requirement` (the syntax source
    authors know from the reference): comma-separated clauses, and a bare version means `^`.
    Raises ValueError when it is not one."""
    clauses = [clause.strip() for clause in requirement.split(",")]
    if not all(clauses):
        raise ValueError(f"an empty clause in {requirement!r}")
    return semantic_version.SimpleSpec(",".join(_clause(clause) for clause in clauses))


def _clause(clause: str) -> str:
    """A clause SimpleSpec reads: a caret one as its explicit bounds (Cargo's rules), any other
    with the blanks after its operator removed."""
    caret = CARET_CLAUSE.fullmatch(clause)
    if caret is None:
        return re.sub(r"^([<>=!~^]+)\s+", r"\1", clause)
    major, minor, patch, pre = caret.groups()
    lower = f"{major}.{minor or 0}.{patch or 0}{pre or ''}"
    if int(major) > 0 or minor is None:
        upper = f"{int(major) + 1}.0.0"
    elif int(minor) > 0 or patch is None:
        upper = f"0.{int(minor) + 1}.0"
    else:
        upper = f"0.0.{int(patch) + 1}"
    return f">={lower},<{upper}"


def _capabilities(table: _Table | None) -> Capabilities:
    if table is None:
        return Capabilities()
    return Capabilities(**{key: table.boolean(key) for key in _CAPABILITY_KEYS})


def _permissions(table: _Table | None, capabilities: Capabilities) -> Permissions:
    if table is None:
        return Permissions()
    filesystem = table.table("filesystem", ("read",))
    oauth = _oauth(table.table("oauth", _OAUTH_KEYS))
    if oauth is not None and not capabilities.needs_credentials:
        raise ManifestInvalid("`[permissions.oauth]` needs `capabilities.needs_credentials = true`")
    return Permissions(
        network=table.boolean("network"),
        process=_programs(table),
        env=_env(table),
        filesystem_read=_read_paths(filesystem) if filesystem else (),
        oauth=oauth,
    )


def _programs(table: _Table) -> tuple[str, ...]:
    programs = table.strings("process")
    for program in programs:
        if (
            program in ("", ".", "..")
            or "/" in program
            or "\\" in program
            or any(char.isspace() or not char.isprintable() for char in program)
        ):
            raise ManifestInvalid(
                f"`permissions.process` entry {program!r} must be a bare program name, found on "
                "PATH (no `/`, no spaces)"
            )
    return programs


def _env(table: _Table) -> tuple[str, ...]:
    names = table.strings("env")
    for name in names:
        if not ENV_PATTERN.fullmatch(name):
            raise ManifestInvalid(
                f"`permissions.env` entry {name!r} is not an environment variable name"
            )
    return names


def _read_paths(filesystem: _Table) -> tuple[str, ...]:
    """`"locator"`, an absolute directory or `~/…`, without `.` or `..` parts: what the user
    agrees to must be the directory that is granted, not one that resolves elsewhere."""
    paths = filesystem.strings("read")
    for path in paths:
        if path == LOCATOR:
            continue
        rest = path[1:] if path.startswith(("/", "~/")) else None
        parts = rest.split("/") if rest is not None else []
        if rest is None or "\0" in path or any(part in (".", "..") for part in parts):
            raise ManifestInvalid(
                f'`permissions.filesystem.read` entry {path!r} must be "locator", an absolute '
                "directory or one under `~/`, without `.` or `..` parts"
            )
    return paths


def _oauth(table: _Table | None) -> OAuth | None:
    if table is None:
        return None
    device = _oauth_url(table, "device_authorization_url")
    authorize = _oauth_url(table, "authorize_url")
    if device is None and authorize is None:
        raise ManifestInvalid(
            "`[permissions.oauth]` needs `device_authorization_url`, `authorize_url` or both"
        )
    token = _oauth_url(table, "token_url")
    if token is None:
        raise ManifestInvalid("`permissions.oauth.token_url` is missing")
    return OAuth(
        client_id=table.required_string("client_id"),
        token_url=token,
        device_authorization_url=device,
        authorize_url=authorize,
        scopes=_scopes(table),
        callback_path=_callback_path(table),
        on_demand=table.boolean("on_demand"),
    )


def _oauth_url(table: _Table, name: str) -> str | None:
    """An OAuth endpoint: https, or http only to this machine, since codes and tokens cross it."""
    url = table.string(name)
    if url is None:
        return None
    parts = urlsplit(url)
    loopback = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
    if not (parts.scheme == "https" and parts.hostname) and not loopback:
        raise ManifestInvalid(
            f"`{table.key(name)}` {url!r} must be an https address (http only to localhost, "
            "127.0.0.1 or [::1])"
        )
    if parts.username is not None or parts.fragment:
        raise ManifestInvalid(
            f"`{table.key(name)}` {url!r} must hold no user name, password or `#` fragment"
        )
    return url


def _scopes(table: _Table) -> tuple[str, ...]:
    if "scopes" not in table.values:
        raise ManifestInvalid("`permissions.oauth.scopes` is missing")
    scopes = table.strings("scopes")
    for scope in scopes:
        if not scope or any(char.isspace() for char in scope):
            raise ManifestInvalid(
                f"`permissions.oauth.scopes` entry {scope!r} must be one word: list each scope "
                "on its own"
            )
    return scopes


def _callback_path(table: _Table) -> str:
    path = table.string("callback_path") or DEFAULT_CALLBACK_PATH
    if not path.startswith("/") or any(char in path for char in "?# \t\r\n"):
        raise ManifestInvalid(
            f"`permissions.oauth.callback_path` {path!r} must be a path starting with `/`, "
            "without a query or fragment"
        )
    return path


def _options(table: _Table | None) -> tuple[OptionSpec, ...]:
    if table is None:
        return ()
    return tuple(_option(table, key) for key in table.values)


def _option(options: _Table, key: str) -> OptionSpec:
    if not OPTION_PATTERN.fullmatch(key):
        raise ManifestInvalid(
            f"`options.{key}`: an option key must be a-z, then a-z, 0-9, `_` or `-`"
        )
    option = _Table(options.key(key), options.values[key], ("type", "description", "breadth"))
    type_ = _one_of(option, "type", OPTION_TYPES)
    if type_ is None:
        raise ManifestInvalid(f"`{option.key('type')}` is missing (one of: string, path, date)")
    return OptionSpec(
        name=key,
        description=option.required_string("description"),
        type=type_,
        breadth=_one_of(option, "breadth", BREADTHS),
    )


def _one_of(table: _Table, name: str, choices: tuple[str, ...]) -> str | None:
    value = table.string(name)
    if value is not None and value not in choices:
        raise ManifestInvalid(f"`{table.key(name)}` {value!r} must be one of: {', '.join(choices)}")
    return value


def _triggers(table: _Table | None) -> frozenset[str]:
    """The trigger types the source supports: a capability a trigger may use, not a
    permission, so it never enters the consent."""
    if table is None:
        return frozenset()
    for name in table.values:
        _Table(table.key(name), table.values[name], ("description",)).required_string("description")
    return frozenset(table.values)


def _limits(table: _Table | None) -> Limits:
    if table is None:
        return Limits()
    return Limits(
        memory_mib=table.positive("memory_mib"), timeout_secs=table.positive("timeout_secs")
    )


def _build_command(build: _Table | None) -> tuple[str, ...]:
    if build is None:
        return ()
    command = build.strings("command")
    if not command or not all(part.strip() for part in command):
        raise ManifestInvalid(
            "`build.command` must be a non-empty list of non-empty strings: the program, then "
            "its arguments"
        )
    return command


def consent_digest(name: str, permissions: Permissions) -> str:
    """Lowercase hex SHA-256 of the UTF-8 of the compact JSON `{"name", "permissions"}` with keys
    sorted (docs/source-packages.md has the algorithm and test vectors). A source whose
    permissions ask nothing (`Permissions.asks()` false) needs no consent, so no digest is
    checked for it."""
    text = json.dumps(
        {"name": name, "permissions": permissions.normalized()},
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def incompatibility(
    manifest: Manifest, *, contract: str = CONTRACT, version: str = __version__
) -> str | None:
    """Why a host of `contract` and MemCastle `version` cannot run the source, or None."""
    return incompatibility_of(
        manifest.contract, manifest.memcastle, contract=contract, version=version
    )


def incompatibility_of(
    built_for: str, requirement: str, *, contract: str = CONTRACT, version: str = __version__
) -> str | None:
    """`incompatibility` of a source known only by its contract and `memcastle` requirement, as
    a registry index lists each version: an unreadable one is a reason too, not an error."""
    if not CONTRACT_PATTERN.fullmatch(built_for):
        return f"its source contract {built_for!r} is not a contract version"
    try:
        spec = _requirement_spec(requirement)
    except ValueError:
        return f"its MemCastle requirement {requirement!r} is not a version requirement"
    return _contract_mismatch(built_for, contract) or _version_mismatch(spec, requirement, version)


def _contract_mismatch(built_for: str, host: str) -> str | None:
    """A 0.N contract is unstable, so it runs only sources built for exactly 0.N; from 1.0 a
    host runs sources of its major whose minor is not newer. Patches never matter."""
    source_major, source_minor = _major_minor(built_for)
    host_major, host_minor = _major_minor(host)
    if host_major == 0:
        runs = source_major == 0 and source_minor == host_minor
    else:
        runs = source_major == host_major and source_minor <= host_minor
    if runs:
        return None
    return (
        f"built for source contract {source_major}.{source_minor}; this MemCastle runs contract "
        f"{host_major}.{host_minor}"
    )


def _major_minor(contract: str) -> tuple[int, int]:
    major, minor = contract.split(".")[:2]
    return int(major), int(minor)


def _version_mismatch(spec: Any, requirement: str, version: str) -> str | None:
    """A pre-release host is tested as its release: 0.2.0-rc.1 satisfies `>=0.2`."""
    if spec.match(semantic_version.Version(version).truncate()):
        return None
    return f"requires MemCastle {requirement}; this is MemCastle {version}"
