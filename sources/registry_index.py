"""The index of a source registry, `memcastle-index.json` (sources.md 6, docs/source-registry.md).

An index comes from anyone, and what it says decides which code the daemon fetches, so it is
read strictly: every object refuses a key it does not know, naming it (a misspelt `yankd` must
not install a withdrawn version), and a wrong type or a missing key is refused the same way.

A source is listed in one of two forms: with its `versions` (each an archive's address, its
SHA-256 and, optionally, a signature), or as a **repository entry** whose versions are the
releases of a GitHub repository (`sources.registry_releases`). Which version is installed is
`choose`: the highest compatible one that is not yanked, or exactly the one pinned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import semantic_version

from kernel.errors import InputInvalid, MemCastleError, NotFound
from sources.manifest import NAME_PATTERN, incompatibility_of
from sources.signing import Signature

INDEX_FILE = "memcastle-index.json"
INDEX_FORMAT = 1
MAX_INDEX_BYTES = 4 * 2**20

SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
REPOSITORY_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*)/[A-Za-z0-9._-]+")
KEY_ID_PATTERN = re.compile(r"[0-9a-f]{16}")

_INDEX_KEYS = ("format", "name", "sources")
_SOURCE_KEYS = ("name", "description", "license", "homepage", "versions", "repository")
_VERSION_KEYS = (
    *("version", "contract", "memcastle", "url", "sha256", "size", "signature", "yanked"),
)
_SIGNATURE_KEYS = ("key", "value")


class RegistryUnavailable(MemCastleError):
    status = 502
    code = "memcastle::source::registry_unavailable"
    help = (
        "check the registry's location (mining.registries, or the one given) and that it "
        "serves a memcastle-index.json of format 1; the message names what failed"
    )


class NotInRegistry(NotFound):
    code = "memcastle::source::not_in_registry"
    help = (
        "search the registries with `memcastle source search`; a version pinned with NAME@VERSION "
        "must be one the registry lists and this MemCastle can run"
    )


@dataclass(frozen=True)
class Release:
    """One version of a source as its registry offers it. A repository entry's releases know
    neither their contract nor their MemCastle requirement: their manifest says it once read."""

    version: str
    url: str
    sha256: str
    contract: str | None = None
    memcastle: str | None = None
    size: int | None = None
    signature: Signature | None = None
    yanked: bool = False

    def incompatibility(self) -> str | None:
        if self.contract is None or self.memcastle is None:
            return None
        return incompatibility_of(self.contract, self.memcastle)

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "version": self.version,
            "contract": self.contract,
            "memcastle": self.memcastle,
            "url": self.url,
            "sha256": self.sha256,
        }
        if self.size is not None:
            entry["size"] = self.size
        if self.signature is not None:
            entry["signature"] = self.signature.as_dict()
        entry["yanked"] = self.yanked
        return entry


@dataclass(frozen=True)
class Entry:
    """A source an index lists: its versions, or the repository whose releases they are."""

    name: str
    description: str
    license: str | None = None
    homepage: str | None = None
    releases: tuple[Release, ...] = ()
    repository: str | None = None

    def matches(self, words: Collection[str]) -> bool:
        """Whether every word is in its name or description, ignoring case."""
        text = f"{self.name} {self.description}".lower()
        return all(word.lower() in text for word in words)

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "description": self.description}
        for key in ("license", "homepage"):
            if getattr(self, key) is not None:
                entry[key] = getattr(self, key)
        if self.repository is not None:
            entry["repository"] = self.repository
        else:
            entry["versions"] = [release.as_dict() for release in self.releases]
        return entry


@dataclass(frozen=True)
class Index:
    name: str
    entries: tuple[Entry, ...]

    def find(self, name: str) -> Entry | None:
        return next((entry for entry in self.entries if entry.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": INDEX_FORMAT,
            "name": self.name,
            "sources": [entry.as_dict() for entry in self.entries],
        }


def parse_index(data: bytes, location: str) -> Index:
    """The index in `data`, read from `location` (named by every refusal). Raises
    `RegistryUnavailable` for anything but a well-formed index of format 1."""
    if len(data) > MAX_INDEX_BYTES:
        raise RegistryUnavailable(f"the index at {location} is larger than 4 MiB")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RegistryUnavailable(f"the index at {location} is not UTF-8 JSON") from None
    return _Reader(location).index(document)


class _Reader:
    """Reads an index's JSON, each refusal naming the location and the path of the value."""

    def __init__(self, location: str) -> None:
        self.location = location

    def refuse(self, path: str, problem: str) -> RegistryUnavailable:
        return RegistryUnavailable(f"the index at {self.location}: `{path}` {problem}")

    def table(self, value: object, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.refuse(path, "must be an object")
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise self.refuse(
                f"{path}.{unknown[0]}" if path else unknown[0],
                f"is not an index key (known: {', '.join(known)})",
            )
        return value

    def string(self, table: Mapping[str, Any], path: str, key: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.refuse(f"{path}.{key}", "must be a non-empty string")
        return value

    def optional_string(self, table: Mapping[str, Any], path: str, key: str) -> str | None:
        return None if table.get(key) is None else self.string(table, path, key)

    def checked(
        self,
        table: Mapping[str, Any],
        path: str,
        key: str,
        valid: Callable[[str], object],
        what: str,
    ) -> str:
        value = self.string(table, path, key)
        if not valid(value):
            raise self.refuse(f"{path}.{key}", f"must be {what}, not {value!r}")
        return value

    def index(self, document: object) -> Index:
        root = self.table(document, "", _INDEX_KEYS)
        if root.get("format") != INDEX_FORMAT or isinstance(root.get("format"), bool):
            raise self.refuse("format", f"must be {INDEX_FORMAT}, not {root.get('format')!r}")
        name = self.string(root, "", "name")
        sources = root.get("sources")
        if not isinstance(sources, list):
            raise self.refuse("sources", "must be a list")
        entries = tuple(self.entry(item, f"sources[{at}]") for at, item in enumerate(sources))
        names = [entry.name for entry in entries]
        repeated = sorted({each for each in names if names.count(each) > 1})
        if repeated:
            raise self.refuse("sources", f"lists {repeated[0]} more than once")
        return Index(name=name.strip(), entries=entries)

    def entry(self, value: object, path: str) -> Entry:
        table = self.table(value, path, _SOURCE_KEYS)
        name = self.checked(table, path, "name", NAME_PATTERN.fullmatch, "a source name")
        description = self.string(table, path, "description")
        license_ = self.optional_string(table, path, "license")
        homepage = self.optional_string(table, path, "homepage")
        if ("versions" in table) == ("repository" in table):
            raise self.refuse(path, "must have either `versions` or `repository`")
        if "repository" in table:
            repository = self.checked(
                table, path, "repository", REPOSITORY_PATTERN.fullmatch, "owner/repo"
            )
            return Entry(name, description, license_, homepage, repository=repository)
        versions = table["versions"]
        if not isinstance(versions, list):
            raise self.refuse(f"{path}.versions", "must be a list")
        releases = tuple(
            self.release(item, f"{path}.versions[{at}]") for at, item in enumerate(versions)
        )
        listed = [release.version for release in releases]
        if len(set(listed)) != len(listed):
            raise self.refuse(f"{path}.versions", "lists a version more than once")
        return Entry(name, description, license_, homepage, releases=releases)

    def release(self, value: object, path: str) -> Release:
        table = self.table(value, path, _VERSION_KEYS)
        version = self.checked(table, path, "version", is_semver, "a semantic version")
        sha256 = self.checked(
            table,
            path,
            "sha256",
            SHA256_PATTERN.fullmatch,
            "64 lowercase hex digits",
        )
        size = table.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise self.refuse(f"{path}.size", "must be a whole number of bytes")
        yanked = table.get("yanked")
        if not isinstance(yanked, bool):
            raise self.refuse(f"{path}.yanked", "must be true or false")
        return Release(
            version=version,
            url=self.string(table, path, "url"),
            sha256=sha256,
            contract=self.string(table, path, "contract"),
            memcastle=self.string(table, path, "memcastle"),
            size=size,
            signature=self.signature(table.get("signature"), f"{path}.signature"),
            yanked=yanked,
        )

    def signature(self, value: object, path: str) -> Signature | None:
        if value is None:
            return None
        table = self.table(value, path, _SIGNATURE_KEYS)
        key = self.checked(table, path, "key", KEY_ID_PATTERN.fullmatch, "a key id (16 hex digits)")
        return Signature(key=key, value=self.string(table, path, "value"))


def is_semver(text: str) -> bool:
    try:
        semantic_version.Version(text)
    except ValueError:
        return False
    return True


def parse_spec(spec: str, field: str = "name") -> tuple[str, str | None]:
    """`name` or `name@x.y.z`: the name and the pinned version (None when not pinned)."""
    name, at, version = spec.partition("@")
    if not NAME_PATTERN.fullmatch(name) or (at and not is_semver(version)):
        raise InputInvalid(
            field,
            f"{spec!r} is not a source name, optionally with @ and a semantic version",
            help="name a source as NAME or NAME@VERSION, like notes or notes@1.2.0",
        )
    return name, version if at else None


def choose(entry: Entry, pinned: str | None, registry: str) -> Release:
    """The release to install: exactly the pinned version (a yanked one too: whoever pins it
    asks for it), else the highest that is not yanked and that this MemCastle can run."""
    if pinned is not None:
        release = next((each for each in entry.releases if each.version == pinned), None)
        if release is None:
            raise NotInRegistry(f"{registry} does not offer {entry.name} {pinned}")
        reason = release.incompatibility()
        if reason is not None:
            raise NotInRegistry(f"{entry.name} {pinned} from {registry} cannot run here: {reason}")
        return release
    candidates = [
        release
        for release in entry.releases
        if not release.yanked and release.incompatibility() is None
    ]
    if not candidates:
        raise NotInRegistry(
            f"{registry} offers no version of {entry.name} that this MemCastle can run and "
            "that is not yanked"
        )
    return max(candidates, key=lambda release: semantic_version.Version(release.version))
