"""`memcastle source index`: write the index of a registry from package archives, on the
publisher's machine, with no daemon (docs/source-registry.md, "Publishing").

Each archive is read as the daemon reads it (its manifest names the source and version), its
SHA-256 and size are taken, and it is signed when a key is given. An index already at the
output is read and kept: the versions given are added to it (a version given again replaces the
one listed, keeping whether it was yanked), so publishing a new version is one more run. The
file is replaced whole, by a rename, so a server never serves half of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import semantic_version

from kernel.errors import InputInvalid, MemCastleError
from sources.archive import read_package, sha256_hex
from sources.manifest import parse_manifest
from sources.registry_index import Entry, Index, Release, parse_index
from sources.signing import load_private_key, sign


@dataclass(frozen=True)
class Indexed:
    """An archive as it went into the index."""

    name: str
    release: Release


def write_index(
    archives: Sequence[Path],
    output: Path,
    *,
    base_url: str | None = None,
    key: Path | None = None,
    name: str | None = None,
) -> list[Indexed]:
    """Add `archives` to the index at `output` (created when missing) and write it."""
    private_key = load_private_key(key) if key is not None else None
    existing = parse_index(output.read_bytes(), str(output)) if output.exists() else None
    entries = {entry.name: entry for entry in existing.entries} if existing else {}
    indexed = []
    for archive in archives:
        data = _read(archive)
        manifest = parse_manifest(read_package(data).manifest_text)
        previous = entries.get(manifest.name)
        if previous is not None and previous.repository is not None:
            raise InputInvalid(
                "ARCHIVE",
                f"{archive}: {output} lists {manifest.name} as the releases of "
                f"{previous.repository}, not as versions",
            )
        releases = {release.version: release for release in previous.releases} if previous else {}
        listed = releases.get(manifest.version)
        release = Release(
            version=manifest.version,
            url=_url(archive, output, base_url),
            sha256=sha256_hex(data),
            contract=manifest.contract,
            memcastle=manifest.memcastle,
            size=len(data),
            signature=sign(private_key, data) if private_key is not None else None,
            yanked=listed.yanked if listed is not None else False,
        )
        releases[manifest.version] = release
        newest = max(releases, key=semantic_version.Version)
        # The description and links are the newest version's.
        if previous is None or newest == manifest.version:
            about = (manifest.description, manifest.license, manifest.homepage)
        else:
            about = (previous.description, previous.license, previous.homepage)
        entries[manifest.name] = Entry(
            manifest.name,
            *about,
            releases=tuple(
                releases[version] for version in sorted(releases, key=semantic_version.Version)
            ),
        )
        indexed.append(Indexed(manifest.name, release))
    title = name or (existing.name if existing else output.resolve().parent.name or "registry")
    index = Index(title, tuple(entries[each] for each in sorted(entries)))
    _replace(output, json.dumps(index.as_dict(), indent=2, ensure_ascii=False) + "\n")
    return indexed


def _read(archive: Path) -> bytes:
    try:
        return archive.read_bytes()
    except OSError as error:
        raise InputInvalid(
            "ARCHIVE", f"{str(archive)!r} cannot be read: {error.strerror}"
        ) from None


def _url(archive: Path, output: Path, base_url: str | None) -> str:
    """Where the index says the archive is: under `base_url`, or beside the index (relative,
    so the directory can be served from anywhere)."""
    if base_url is not None:
        return f"{base_url.rstrip('/')}/{quote(archive.name)}"
    relative = Path(os.path.relpath(archive.resolve(), output.resolve().parent))
    if relative.parts[0] == "..":
        raise InputInvalid(
            "--base-url",
            f"is needed: {archive} is not under the index's directory {output.resolve().parent}",
            help="write the index beside the archives, or give the address they are served at",
        )
    return "/".join(quote(part) for part in relative.parts)


def _replace(output: Path, text: str) -> None:
    try:
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=output.resolve().parent, delete=False, suffix=".partial"
        ) as partial:
            partial.write(text)
        os.chmod(partial.name, 0o644)
        os.replace(partial.name, output)
    except OSError as error:
        raise MemCastleError(
            f"cannot write the index {output}: {error.strerror}",
            code="memcastle::io::failed",
            help="check that the output's directory exists and is writable",
        ) from None
