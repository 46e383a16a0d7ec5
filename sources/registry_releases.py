"""A repository entry's versions: the releases of its GitHub repository (sources.md 6).

`GET {mining.github_api_url}/repos/{owner}/{repo}/releases` lists them, newest first (the first
100: one page). A draft or a pre-release is not offered. Each asset named
`<name>-<semver>.tar.gz` is a version, whose SHA-256 is the `digest` GitHub computed for the
asset (`sha256:<hex>`); an asset without one cannot be verified, so it is passed over with a
warning in the log. A release carries no signature: these versions count as unsigned.

The answer is GitHub's, not ours, so keys this module does not read are ignored; a value it
reads that is not what GitHub sends makes the registry unavailable.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from sources.registry_fetch import Fetcher
from sources.registry_index import (
    MAX_INDEX_BYTES,
    SHA256_PATTERN,
    Entry,
    RegistryUnavailable,
    Release,
    is_semver,
)

logger = logging.getLogger(__name__)

PER_PAGE = 100


def resolve(entry: Entry, fetcher: Fetcher) -> Entry:
    """`entry` with the releases of its repository as its versions (an entry that lists its
    versions is returned as it is)."""
    if entry.repository is None:
        return entry
    where = f"{fetcher.api_url}/repos/{entry.repository}/releases"
    data = fetcher.api(f"/repos/{entry.repository}/releases?per_page={PER_PAGE}", MAX_INDEX_BYTES)
    try:
        releases = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RegistryUnavailable(f"the releases at {where} are not JSON") from None
    if not isinstance(releases, list):
        raise RegistryUnavailable(f"the releases at {where} are not a list")
    asset_name = re.compile(rf"{re.escape(entry.name)}-(.+)\.tar\.gz")
    found: dict[str, Release] = {}
    for release in releases:
        if not isinstance(release, dict) or release.get("draft") or release.get("prerelease"):
            continue
        for asset in _assets(release, where):
            match = asset_name.fullmatch(asset["name"])
            if match is None or not is_semver(match.group(1)):
                continue
            digest = _sha256(asset.get("digest"))
            if digest is None:
                logger.warning(
                    "the asset %s of %s has no sha256 digest: it cannot be verified and is "
                    "not offered",
                    asset["name"],
                    entry.repository,
                )
                continue
            found.setdefault(
                match.group(1),
                Release(
                    version=match.group(1),
                    url=asset["browser_download_url"],
                    sha256=digest,
                    size=asset.get("size") if isinstance(asset.get("size"), int) else None,
                ),
            )
    return Entry(
        name=entry.name,
        description=entry.description,
        license=entry.license,
        homepage=entry.homepage,
        releases=tuple(found.values()),
        repository=entry.repository,
    )


def _assets(release: dict[str, Any], where: str) -> list[dict[str, Any]]:
    assets = release.get("assets", [])
    if not isinstance(assets, list) or not all(
        isinstance(asset, dict)
        and isinstance(asset.get("name"), str)
        and isinstance(asset.get("browser_download_url"), str)
        for asset in assets
    ):
        raise RegistryUnavailable(f"the releases at {where} have assets GitHub would not send")
    return assets


def _sha256(digest: object) -> str | None:
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        return None
    hex_digest = digest.removeprefix("sha256:")
    return hex_digest if SHA256_PATTERN.fullmatch(hex_digest) else None
