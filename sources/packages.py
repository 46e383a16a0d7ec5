"""Installed mining sources: install, show, enable, disable and remove them; mine with them.

A package (`sources.archive`) is installed under `mining.sources_dir/<name>/` and recorded in the
`source_package` table with its state, the SHA-256 of its component and the manifest as agreed;
the daemon runs on the stored manifest, never on the copy beside the component. Bundled sources
are built into `mining.bundled_dir/<name>/` by the project's set-up and recorded at start as
`installed`: enabling one is the consent to what it asks.

Whether a source is `unavailable` is computed on every read, never stored: its component missing
or not the one installed, or its contract or MemCastle requirement not this host's. A source asking
for permissions is installed only with consent to exactly those (`consent_digest`); an update that
asks for nothing more keeps the consent already given.

A source installed from a registry (`sources.registry`) is recorded with its origin `registry`,
the registry's location, the SHA-256 of the archive and the id of the key that signed it, if
any (`Provenance`); one installed from a local archive has origin `package`.

None of this is offered over MCP: an agent must not be able to install code or widen what it can
read. Installing, enabling, disabling and removing are not gated by the memory mode, which guards
access to memory; showing a source is a read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import shutil
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kernel.clock import utc_now
from kernel.config import MiningConfig
from kernel.context import RequestContext
from kernel.errors import InputInvalid, MemCastleError, NotFound
from sources.access_tokens import AccessTokens
from sources.adapters import Adapter, describe
from sources.archive import Package, read_package
from sources.component_adapter import Caps, ComponentAdapter
from sources.components import ComponentRuntime, ComponentUnusable
from sources.credentials import OAuthUnsupported, instant
from sources.directory import DirectoryAdapter
from sources.manifest import Manifest, OAuth, consent_digest, incompatibility, parse_manifest
from sources.repository import PackageRepository

MANIFEST = "memcastle-source.toml"
COMPONENT = "source.wasm"
# What the row of a source not installed from a registry says of where it came from.
NO_PROVENANCE = {"registry": None, "archive_digest": None, "signed_by": None}
# The other files of a package kept beside the component, for people to read.
DOCUMENTS = ("README.md", "LICENSE", "LICENSE.md")


class SourceNotFound(NotFound):
    code = "memcastle::source::not_found"
    help = "list the sources this daemon has with `memcastle source list`"


class NotEnabled(MemCastleError):
    status = 409
    code = "memcastle::source::not_enabled"
    help = "enable it with `memcastle source enable NAME`; `memcastle source show NAME` says why"


class BuiltinSource(MemCastleError):
    status = 400
    code = "memcastle::source::builtin"
    help = "built-in sources are part of the daemon: they are always enabled"


class BundledSource(MemCastleError):
    status = 400
    code = "memcastle::source::bundled"
    help = (
        "bundled sources ship with MemCastle and are updated with it; enable or disable one instead"
    )


class ConsentRequired(MemCastleError):
    status = 400
    code = "memcastle::source::consent_required"


@dataclass(frozen=True)
class Provenance:
    """Where a package installed from a registry came from: the registry's location as
    configured or given, the SHA-256 of the archive and the trusted key that signed it."""

    registry: str
    archive_digest: str
    signed_by: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "archive_digest": self.archive_digest,
            "signed_by": self.signed_by,
        }


@dataclass(frozen=True)
class Installed:
    """An installed source as the daemon finds it now."""

    name: str
    origin: str
    state: str
    digest: str
    # None when the stored manifest no longer parses (the source is then unavailable).
    manifest: Manifest | None
    consent: str | None
    installed_at: Any
    updated_at: Any
    directory: Path
    unavailable: str | None
    provenance: Provenance | None = None

    @property
    def usable(self) -> bool:
        return self.state == "enabled" and self.unavailable is None

    def shown_state(self) -> str:
        return "unavailable" if self.unavailable is not None else self.state


class SourcePackages:
    """The sources this daemon can mine with: the built-in ones and the installed ones."""

    def __init__(
        self,
        config: MiningConfig,
        repository: PackageRepository,
        runtime: ComponentRuntime,
        *,
        tokens: AccessTokens,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._repository = repository
        self._runtime = runtime
        self._tokens = tokens
        self._environ = environ
        self._builtin: dict[str, Adapter] = {
            "directory": DirectoryAdapter(max_file_bytes=config.max_file_bytes)
        }
        # SHA-256 of component files by (path, size, mtime, inode): reading a source's state
        # must not hash megabytes every time, and any write to the file changes the key.
        self._digests: dict[tuple[str, int, int, int], str] = {}
        # Manifests as parsed, by their text: a row's manifest never changes in place, and
        # reading the sources is on the path of every miner run and webhook delivery.
        self._manifests: dict[str, Manifest] = {}
        self._lock = threading.Lock()

    # Reading.

    def builtin_names(self) -> tuple[str, ...]:
        return tuple(self._builtin)

    def installed(self) -> list[Installed]:
        return [self._installed(row) for row in self._repository.list()]

    def find(self, name: str) -> Installed | None:
        row = self._repository.get(name)
        return None if row is None else self._installed(row)

    def _installed(self, row: Mapping[str, Any]) -> Installed:
        directory = self._directory(row["origin"], row["name"])
        unavailable: str | None
        manifest: Manifest | None
        try:
            manifest = self._parsed(row["manifest"])
        except MemCastleError as exc:
            manifest = None
            unavailable = f"its manifest is no longer valid: {exc.message}"
        else:
            unavailable = incompatibility(manifest) or self._component_problem(
                directory, row["digest"]
            )
        return Installed(
            name=row["name"],
            origin=row["origin"],
            state=row["state"],
            digest=row["digest"],
            manifest=manifest,
            consent=row.get("consent"),
            installed_at=row.get("installed_at"),
            updated_at=row.get("updated_at"),
            directory=directory,
            unavailable=unavailable,
            provenance=(
                Provenance(row["registry"], row["archive_digest"], row.get("signed_by"))
                if row["origin"] == "registry" and row.get("registry")
                else None
            ),
        )

    def _directory(self, origin: str, name: str) -> Path:
        root = self.config.bundled_dir if origin == "bundled" else self.config.sources_dir
        return root / name

    def _parsed(self, text: str) -> Manifest:
        manifest = self._manifests.get(text)
        if manifest is None:
            manifest = parse_manifest(text, builtin_names=self.builtin_names())
            self._manifests[text] = manifest
        return manifest

    def _component_problem(self, directory: Path, digest: str) -> str | None:
        path = directory / COMPONENT
        try:
            stat = path.stat()
        except OSError:
            return f"its component {path} is missing"
        key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
        actual = self._digests.get(key)
        if actual is None:
            actual = _sha256_file(path)
            self._digests[key] = actual
        if actual != digest:
            return f"its component {path} was altered after it was installed"
        return None

    def described(self, name: str) -> dict[str, Any] | None:
        """One source as `adapters()` lists it, or None when there is no such source."""
        builtin = self._builtin.get(name)
        if builtin is not None:
            return {**describe(builtin), "state": "enabled"}
        source = self.find(name)
        return None if source is None else self._describe(source)

    def adapters(self) -> list[dict[str, Any]]:
        """Every source, as `GET /api/sources` lists it."""
        described = [
            {**describe(adapter), "state": "enabled"} for adapter in self._builtin.values()
        ]
        for source in self.installed():
            described.append(self._describe(source))
        return sorted(described, key=lambda entry: entry["name"])

    def show(self, ctx: RequestContext, name: str) -> dict[str, Any]:
        """One source, built in or installed: what it is, its state and what it may do."""
        ctx.require_read("source_show")
        builtin = self._builtin.get(name)
        if builtin is not None:
            return {**describe(builtin), "state": "enabled", "permissions": None}
        return self._describe(self._require(name))

    def _describe(self, source: Installed) -> dict[str, Any]:
        described: dict[str, Any] = {
            "name": source.name,
            "origin": source.origin,
            "state": source.shown_state(),
            "digest": source.digest,
            "installed_at": source.installed_at,
            "updated_at": source.updated_at,
        }
        if source.unavailable is not None:
            described["unavailable_reason"] = source.unavailable
        if source.provenance is not None:
            described.update(source.provenance.as_dict())
        manifest = source.manifest
        if manifest is None:
            return {
                **described,
                "description": "",
                "capabilities": {},
                "options": [],
                "triggers": [],
            }
        permissions = manifest.permissions
        described.update(
            description=manifest.description,
            version=manifest.version,
            capabilities=manifest.capabilities.as_dict(),
            options=[option.as_dict() for option in manifest.options],
            triggers=sorted(manifest.triggers),
            permissions=permissions.normalized(),
        )
        if permissions.asks():
            described["consent_digest"] = consent_digest(manifest.name, permissions)
        oauth = self._sign_in(source.name, manifest)
        if oauth is not None:
            described["auth"] = self._auth(source.name, oauth)
        return described

    def _auth(self, name: str, oauth: OAuth) -> dict[str, Any]:
        """Whether a source that signs in is signed in, and how it can be (api.md)."""
        credential = self._tokens.status(name, oauth)
        auth: dict[str, Any] = {
            "signed_in": credential is not None,
            "scopes": list(oauth.scopes if credential is None else credential.scopes),
            "provider": urlsplit(oauth.token_url).hostname,
            "flows": [
                flow
                for flow, url in (
                    ("device", oauth.device_authorization_url),
                    ("browser", oauth.authorize_url),
                )
                if url is not None
            ],
        }
        if credential is not None and credential.expires_at is not None:
            auth["expires_at"] = instant(credential.expires_at)
        return auth

    def _require(self, name: str) -> Installed:
        source = self.find(name)
        if source is None:
            raise SourceNotFound(f"no source is named {name!r}")
        return source

    # Signing in.

    def oauth(self, name: str) -> OAuth:
        """The sign-in source `name` declares: 404 for no such source, 400 for none."""
        if name in self._builtin:
            raise OAuthUnsupported(f"{name} is a built-in source: it does not sign in")
        oauth = self._sign_in(name, self._require(name).manifest)
        if oauth is None:
            raise OAuthUnsupported(f"the {name} source declares no sign-in ([permissions.oauth])")
        return oauth

    def _declared_oauth(self, name: str) -> OAuth | None:
        source = None if name in self._builtin else self.find(name)
        return None if source is None else self._sign_in(name, source.manifest)

    def _sign_in(self, name: str, manifest: Manifest | None) -> OAuth | None:
        """The sign-in `name` uses: the one its manifest declares, with the client and the
        endpoints `[mining.oauth.<name>]` configures in their place (the daemon owner's own
        OAuth app, or a GitHub Enterprise server). A credential is fingerprinted with what is
        used, so changing either signs the source out."""
        declared = None if manifest is None else manifest.permissions.oauth
        if declared is None:
            return None
        configured = self.config.oauth_clients.get(name, {})
        return dataclasses.replace(
            declared,
            client_id=configured.get("client_id", declared.client_id),
            token_url=configured.get("token_url", declared.token_url),
            device_authorization_url=configured.get(
                "device_authorization_url", declared.device_authorization_url
            ),
            authorize_url=configured.get("authorize_url", declared.authorize_url),
        )

    def signed_in(self, name: str) -> bool:
        """Whether `name` declares a sign-in and holds a credential for it."""
        oauth = self._declared_oauth(name)
        return oauth is not None and self._tokens.status(name, oauth) is not None

    def require_signed_in(self, name: str) -> None:
        """Refuse (`credential::required`) a run of a source that signs in and is not."""
        oauth = self._declared_oauth(name)
        if oauth is not None:
            self._tokens.require_signed_in(name, oauth)

    # Mining.

    def adapter(self, name: str) -> Adapter:
        """The adapter a mine job runs, refused at submission when it cannot run."""
        builtin = self._builtin.get(name)
        if builtin is not None:
            return builtin
        source = self.find(name)
        if source is None:
            known = sorted({*self._builtin, *(entry.name for entry in self.installed())})
            raise InputInvalid(
                "source", f"names no known source {name!r} (known: {', '.join(known)})"
            )
        if source.unavailable is not None or source.manifest is None:
            raise NotEnabled(f"the {name} source is unavailable: {source.unavailable}")
        if source.state != "enabled":
            raise NotEnabled(f"the {name} source is {source.state}, not enabled")
        return self._adapter(source, source.manifest)

    def _adapter(self, source: Installed, manifest: Manifest) -> ComponentAdapter:
        component = self._runtime.load(source.directory / COMPONENT, source.digest)
        oauth = self._sign_in(source.name, manifest)
        return ComponentAdapter(
            manifest,
            component,
            origin=source.origin,
            caps=Caps(self.config.source_memory_mib, self.config.source_timeout_secs),
            environ=self._environ,
            access_token=None
            if oauth is None
            else functools.partial(self._tokens.access_token, source.name, oauth),
        )

    # Changing what is installed: not gated by the memory mode.

    def install(self, data: bytes, *, consent: str | None, enable: bool) -> dict[str, Any]:
        """Install (or replace) the package in `data`. A package asking for permissions needs
        `consent` to be their digest, unless it replaces one that was agreed to at least as
        much; a replaced source keeps its state."""
        package = read_package(data)
        manifest = parse_manifest(package.manifest_text, builtin_names=self.builtin_names())
        return self.install_package(package, manifest, consent=consent, enable=enable)

    def install_package(
        self,
        package: Package,
        manifest: Manifest,
        *,
        consent: str | None,
        enable: bool,
        provenance: Provenance | None = None,
    ) -> dict[str, Any]:
        """`install` of a package read and parsed already; with `provenance`, one fetched from
        a registry and verified (`sources.registry`), recorded with its origin `registry`."""
        reason = incompatibility(manifest)
        if reason is not None:
            raise ComponentUnusable(f"the {manifest.name} source cannot run here: {reason}")
        with self._lock:
            previous = self.find(manifest.name)
            if previous is not None and previous.origin == "bundled":
                raise BundledSource(f"{manifest.name} is a bundled source")
            agreed = self._consent(
                manifest, previous, consent, "NAME" if provenance is not None else "FILE"
            )
            staging = self.config.sources_dir / f".staging-{uuid.uuid4().hex}"
            try:
                digest = self._stage(staging, package.manifest_text, package)
                component = self._runtime.load(staging / COMPONENT, digest)
                component.check_imports(network=manifest.permissions.network)
                self._replace(staging, self.config.sources_dir / manifest.name)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            kept = None if previous is None else (previous.state, previous.installed_at)
            self._record(
                manifest.name,
                "package" if provenance is None else "registry",
                digest,
                package.manifest_text,
                consent=agreed,
                kept=kept,
                enable=enable,
                provenance=provenance,
            )
        return {"source": self._describe(self._require(manifest.name)), "replaced": bool(previous)}

    def _consent(
        self, manifest: Manifest, previous: Installed | None, consent: str | None, given: str
    ) -> str | None:
        permissions = manifest.permissions
        if not permissions.asks():
            return None
        digest = consent_digest(manifest.name, permissions)
        if consent == digest:
            return digest
        if (
            previous is not None
            and previous.manifest is not None
            and previous.consent is not None
            and previous.manifest.permissions.covers(permissions)
        ):
            return previous.consent
        asked = ", ".join(_asked(permissions.normalized()))
        raise ConsentRequired(
            f"the {manifest.name} source asks for {asked}"
            + (", more than its installed version" if previous is not None else ""),
            help=(
                "review what it asks for, then agree to exactly that with "
                f"`memcastle source install {given} --consent {digest}` (over REST, "
                f"`consent={digest}`)"
            ),
        )

    def _stage(self, staging: Path, manifest_text: str, package: Any) -> str:
        staging.mkdir(parents=True)
        (staging / MANIFEST).write_text(manifest_text, encoding="utf-8")
        (staging / COMPONENT).write_bytes(package.component)
        for name, text in (("README.md", package.readme), ("LICENSE", package.license)):
            if text is not None:
                (staging / name).write_text(text, encoding="utf-8")
        return hashlib.sha256(package.component).hexdigest()

    @staticmethod
    def _replace(staging: Path, target: Path) -> None:
        """Put `staging` at `target` by renames, so a crash leaves one whole version."""
        retired = target.with_name(f".retired-{uuid.uuid4().hex}")
        if target.exists():
            target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired, ignore_errors=True)

    def enable(self, name: str) -> dict[str, Any]:
        """Allow a source to be mined: idempotent; an unavailable one cannot be."""
        if name in self._builtin:
            return self.show(RequestContext.build(requested_by="http"), name)
        with self._lock:
            source = self._require(name)
            if source.unavailable is not None:
                raise NotEnabled(f"the {name} source is unavailable: {source.unavailable}")
            if source.state != "enabled":
                self._repository.set_state(name, "enabled", utc_now())
        return self._describe(self._require(name))

    def disable(self, name: str) -> dict[str, Any]:
        """Stop a source from being mined: idempotent."""
        if name in self._builtin:
            raise BuiltinSource(f"{name} is a built-in source and cannot be disabled")
        with self._lock:
            source = self._require(name)
            if source.state != "disabled":
                self._repository.set_state(name, "disabled", utc_now())
        return self._describe(self._require(name))

    def remove(self, name: str) -> dict[str, Any]:
        """Remove an installed source's files and row; what it mined stays in the palace."""
        if name in self._builtin:
            raise BuiltinSource(f"{name} is a built-in source and cannot be removed")
        with self._lock:
            source = self._require(name)
            if source.origin == "bundled":
                raise BundledSource(f"{name} is a bundled source and cannot be removed")
            self._repository.delete(name)
            shutil.rmtree(source.directory, ignore_errors=True)
            self._tokens.forget(name)
        return {"removed": name}

    def record_bundled(self) -> None:
        """Record the bundled sources built into `mining.bundled_dir` as installed, once; a
        rebuilt one keeps its state and takes its new component and manifest."""
        root = self.config.bundled_dir
        if not root.is_dir():
            return
        with self._lock:
            for directory in sorted(root.iterdir()):
                self._record_bundled(directory)

    def _record_bundled(self, directory: Path) -> None:
        manifest_path, component = directory / MANIFEST, directory / COMPONENT
        if not manifest_path.is_file() or not component.is_file():
            return
        text = manifest_path.read_text(encoding="utf-8")
        digest = _sha256_file(component)
        previous = self._repository.get(directory.name)
        if previous is not None and (
            previous["origin"] != "bundled"
            or (previous["digest"] == digest and previous["manifest"] == text)
        ):
            return
        kept = None if previous is None else (previous["state"], previous["installed_at"])
        self._record(directory.name, "bundled", digest, text, consent=None, kept=kept)

    def _record(
        self,
        name: str,
        origin: str,
        digest: str,
        manifest_text: str,
        *,
        consent: str | None,
        kept: tuple[str, Any] | None,
        enable: bool = False,
        provenance: Provenance | None = None,
    ) -> None:
        """Write a source's row: a new one is `installed` (or enabled), a replaced one keeps
        its state and the time it was first installed (`kept`)."""
        now = utc_now()
        state, installed_at = kept if kept is not None else ("installed", now)
        self._repository.put(
            {
                "name": name,
                "state": "enabled" if enable else state,
                "origin": origin,
                "digest": digest,
                "manifest": manifest_text,
                "consent": consent,
                "installed_at": installed_at,
                "updated_at": now,
                **(provenance.as_dict() if provenance is not None else NO_PROVENANCE),
            }
        )


def _asked(permissions: Mapping[str, Any]) -> list[str]:
    asked = []
    if permissions.get("network"):
        asked.append("the network")
    for key, what in (("process", "programs"), ("env", "variables")):
        if permissions.get(key):
            asked.append(f"{what} {', '.join(permissions[key])}")
    read = (permissions.get("filesystem") or {}).get("read")
    if read:
        asked.append(f"reading {', '.join(read)}")
    if permissions.get("oauth"):
        asked.append("an OAuth sign-in")
    return asked or ["permissions"]


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def compiled_cache_dir(environ: Mapping[str, str]) -> Path:
    """Where compiled components are kept: a cache, so under `XDG_CACHE_HOME`."""
    value = environ.get("XDG_CACHE_HOME", "")
    base = Path(value) if value and os.path.isabs(value) else Path.home() / ".cache"
    return base / "memcastle" / "components"
