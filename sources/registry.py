"""Finding sources in registries, and installing and updating them by name (sources.md 6).

The registries are `mining.registries`, asked in order, or one location a request names. A name
is looked up in the bundled sources first (a bundled source is never fetched), then in each
registry; the first index that lists the name is the one it comes from, even when a later one
lists a newer version, so adding a registry cannot take over a name already served. An
unreadable registry stops the lookup rather than being passed over, for the same reason.

What is fetched is verified before anything is read from it: the archive's SHA-256 must be the
one its index publishes, its signature must satisfy the trust policy (`sources.signing`), and
then the manifest inside must name the source and version the index lists. Only then is it
installed, through `SourcePackages` and its consent: the consent digest is that of exactly the
package fetched. Searching and previewing fetch and verify but install nothing.

No MCP tool reaches this service: an agent cannot install code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import semantic_version

from kernel.config import MiningConfig
from kernel.errors import InputInvalid, MemCastleError
from sources.archive import MAX_ARCHIVE_BYTES, Package, read_package, sha256_hex
from sources.manifest import Manifest, consent_digest, incompatibility, parse_manifest
from sources.packages import (
    BuiltinSource,
    BundledSource,
    Provenance,
    SourceNotFound,
    SourcePackages,
)
from sources.registry_fetch import Fetcher, index_url, release_url
from sources.registry_index import (
    MAX_INDEX_BYTES,
    Entry,
    Index,
    NotInRegistry,
    Release,
    choose,
    parse_index,
    parse_spec,
)
from sources.registry_releases import resolve
from sources.signing import TrustPolicy


class IntegrityFailed(MemCastleError):
    status = 502
    code = "memcastle::source::integrity"
    help = (
        "the registry serves something other than what its index publishes; nothing was "
        "installed: tell the registry's publisher"
    )


@dataclass(frozen=True)
class Offer:
    """The release of a source a registry offers, and where its index is."""

    registry: str
    index_url: str
    entry: Entry
    release: Release


@dataclass(frozen=True)
class Fetched:
    """An offered package fetched and verified: its files, its manifest and its signer."""

    offer: Offer
    package: Package
    manifest: Manifest
    provenance: Provenance


class SourceRegistry:
    """Search, preview, install and update sources from the registries."""

    def __init__(
        self,
        config: MiningConfig,
        packages: SourcePackages,
        fetcher: Fetcher,
        trust: TrustPolicy,
    ) -> None:
        self._registries = config.registries
        self._packages = packages
        self._fetcher = fetcher
        self._trust = trust

    def search(self, query: str, registry: str | None) -> dict[str, Any]:
        """The sources whose name or description holds every word of `query` (every source
        for no words), registry by registry, with the version an install would choose."""
        words = query.split()
        locations = self._locations(registry)
        results = []
        for location in locations:
            _, index = self._index(location)
            for entry in index.entries:
                if entry.matches(words):
                    results.append(self._hit(location, resolve(entry, self._fetcher)))
        return {"registries": list(locations), "results": results}

    def _hit(self, location: str, entry: Entry) -> dict[str, Any]:
        try:
            version: str | None = choose(entry, None, location).version
        except NotInRegistry:
            version = None
        return {
            "name": entry.name,
            "description": entry.description,
            "license": entry.license,
            "homepage": entry.homepage,
            "registry": location,
            "repository": entry.repository,
            "version": version,
            "installed": self._installed_version(entry.name),
        }

    def preview(self, spec: str, registry: str | None) -> dict[str, Any]:
        """What installing `spec` would install, fetched and verified; nothing is installed."""
        name, pinned = parse_spec(spec, "spec")
        fetched = self._fetch(self._offer(name, pinned, self._locations(registry)))
        manifest = fetched.manifest
        permissions = manifest.permissions
        return {
            "name": manifest.name,
            "version": manifest.version,
            "registry": fetched.offer.registry,
            "description": manifest.description,
            "license": manifest.license,
            "homepage": manifest.homepage,
            "permissions": permissions.normalized(),
            "consent_digest": (
                consent_digest(manifest.name, permissions) if permissions.asks() else None
            ),
            "archive_digest": fetched.provenance.archive_digest,
            "signed_by": fetched.provenance.signed_by,
            "installed": self._installed_version(manifest.name),
        }

    def install(
        self, spec: str, *, consent: str | None, enable: bool, registry: str | None
    ) -> dict[str, Any]:
        """Install `name` or `name@x.y.z` from the first registry offering it (or replace the
        installed version, which keeps its state)."""
        name, pinned = parse_spec(spec, "spec")
        fetched = self._fetch(self._offer(name, pinned, self._locations(registry)))
        return self._install(fetched, consent=consent, enable=enable)

    def update(
        self, name: str, *, check: bool, consent: str | None, registry: str | None
    ) -> dict[str, Any]:
        """Replace an installed source with the newest version its registry offers, when it is
        newer; with `check`, only say whether there is one. A source installed from a registry
        is updated from that registry unless another is given."""
        if parse_spec(name)[1] is not None:
            raise InputInvalid(
                "name",
                f"{name!r} pins a version: an update takes the newest",
                help="install NAME@VERSION to install exactly that version",
            )
        if name in self._packages.builtin_names():
            raise BuiltinSource(f"{name} is a built-in source and cannot be updated")
        source = self._packages.find(name)
        if source is None:
            raise SourceNotFound(f"no source is named {name!r}")
        if source.origin == "bundled":
            raise BundledSource(f"{name} is a bundled source: it is updated with MemCastle")
        if registry is not None:
            locations = self._locations(registry)
        elif source.provenance is not None:
            locations = (source.provenance.registry,)
        else:
            locations = self._locations(None)
        offer = self._offer(name, None, locations)
        installed = source.manifest.version if source.manifest is not None else None
        answer: dict[str, Any] = {
            "name": name,
            "installed": installed,
            "version": offer.release.version,
            "registry": offer.registry,
        }
        if installed is not None and semantic_version.Version(
            offer.release.version
        ) <= semantic_version.Version(installed):
            return {**answer, "status": "current"}
        if check:
            return {**answer, "status": "available"}
        done = self._install(self._fetch(offer), consent=consent, enable=False)
        return {**answer, "status": "updated", "source": done["source"]}

    def _install(self, fetched: Fetched, *, consent: str | None, enable: bool) -> dict[str, Any]:
        return self._packages.install_package(
            fetched.package,
            fetched.manifest,
            consent=consent,
            enable=enable,
            provenance=fetched.provenance,
        )

    def _locations(self, registry: str | None) -> Sequence[str]:
        if registry is not None:
            index_url(registry)
            return (registry,)
        return self._registries

    def _index(self, location: str) -> tuple[str, Index]:
        url = index_url(location)
        data = self._fetcher.fetch(url, MAX_INDEX_BYTES, what="the index")
        return url, parse_index(data, url)

    def _offer(self, name: str, pinned: str | None, locations: Sequence[str]) -> Offer:
        """The release of `name` the first registry listing it offers (bundled sources
        first: one of them is never fetched)."""
        if name in self._packages.builtin_names():
            raise BuiltinSource(f"{name} is a built-in source: it is part of the daemon")
        installed = self._packages.find(name)
        if installed is not None and installed.origin == "bundled":
            raise BundledSource(
                f"{name} is a bundled source and cannot be installed from a registry"
            )
        if not locations:
            raise NotInRegistry(
                f"no registry is configured to look {name} up in",
                help="set mining.registries, or name a registry (`--registry` in the CLI)",
            )
        for location in locations:
            url, index = self._index(location)
            entry = index.find(name)
            if entry is not None:
                entry = resolve(entry, self._fetcher)
                return Offer(location, url, entry, choose(entry, pinned, location))
        raise NotInRegistry(f"no registry offers a source named {name} ({', '.join(locations)})")

    def _fetch(self, offer: Offer) -> Fetched:
        """The offered archive, verified: its SHA-256 before anything is read from it, its
        signature by the trust policy, then its manifest against the index."""
        release, name = offer.release, offer.entry.name
        url = release_url(offer.index_url, release.url)
        data = self._fetcher.fetch(
            url,
            MAX_ARCHIVE_BYTES,
            what=f"the archive of {name} {release.version}",
            listed_by=offer.index_url,
        )
        digest = sha256_hex(data)
        if digest != release.sha256 or (release.size is not None and release.size != len(data)):
            raise IntegrityFailed(
                f"the archive of {name} {release.version} at {url} has SHA-256 {digest} and "
                f"{len(data)} bytes, not the {release.sha256} its index publishes"
                + (f" ({release.size} bytes)" if release.size is not None else "")
            )
        signed_by = self._trust.judge(name, release.signature, data)
        package = read_package(data)
        manifest = parse_manifest(
            package.manifest_text, builtin_names=self._packages.builtin_names()
        )
        if (manifest.name, manifest.version) != (name, release.version):
            raise IntegrityFailed(
                f"the archive at {url} holds {manifest.name} {manifest.version}, not the "
                f"{name} {release.version} its index lists"
            )
        reason = incompatibility(manifest)
        if reason is not None:
            # A repository entry's releases say nothing of compatibility until read.
            raise NotInRegistry(
                f"{name} {release.version} from {offer.registry} cannot run here: {reason}"
            )
        return Fetched(offer, package, manifest, Provenance(offer.registry, digest, signed_by))

    def _installed_version(self, name: str) -> str | None:
        source = self._packages.find(name)
        if source is None or source.manifest is None:
            return None
        return source.manifest.version
