"""Where a registry's files may come from, and reading them within their size limits.

A registry is an https:// URL, an http:// URL of this machine, a `file://` URL or an absolute
path (sources.md 6); a location that names a directory (a URL ending in `/`, or a directory on
disk) means the `memcastle-index.json` inside it. Every address the daemon is sent to is checked
by the same rules, the first and each redirect alike, so a registry cannot send it to plain http
across a network, from https down to http, or from the web to a file of this machine. Redirects
are therefore followed here, one at a time, never by the HTTP client.

What is read is counted as it arrives, whatever `Content-Length` says: the index stops at 4 MiB
and an archive at 64 MiB.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import httpx

from kernel.errors import InputInvalid
from kernel.values import file_url_problem, registry_location_value, web_address_problem
from sources.registry_index import INDEX_FILE, RegistryUnavailable

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 5
TIMEOUT_SECS = 30.0
REDIRECTS = (301, 302, 303, 307, 308)


def index_url(location: str, field: str = "registry") -> str:
    """The URL of the index `location` names: a `file://` URL for a file or directory of this
    machine. Raises `InputInvalid` naming `field` for a location the rules refuse."""
    try:
        text = registry_location_value(location)
    except ValueError as error:
        raise InputInvalid(field, f"must be {error}") from None
    parts = urlsplit(text)
    if parts.scheme in ("https", "http"):
        return urljoin(text, INDEX_FILE) if parts.path in ("", "/") or text.endswith("/") else text
    path = Path(unquote(parts.path)) if parts.scheme == "file" else Path(text)
    return (path / INDEX_FILE if path.is_dir() else path).as_uri()


def release_url(index: str, url: str) -> str:
    """The absolute address of an archive the index at `index` lists as `url`. A relative one
    stays inside the registry: no `..`, no path from the root, no other host."""
    if urlsplit(url).scheme:
        return url
    parts = urlsplit(url)
    segments = unquote(parts.path).replace("\\", "/").split("/")
    root = index.rsplit("/", 1)[0] + "/"
    resolved = urljoin(index, url)
    if parts.netloc or url.startswith("/") or ".." in segments or not resolved.startswith(root):
        raise RegistryUnavailable(
            f"the index at {index} lists the archive {url!r}, which climbs out of the registry"
        )
    return resolved


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port


class Fetcher:
    """Reads a registry's index and archives, and the releases API (GitHub's, or one that
    answers like it) that resolves repository entries; the API's token goes to it alone."""

    def __init__(self, *, api_url: str, token: str | None, timeout: float = TIMEOUT_SECS) -> None:
        self.api_url = api_url
        self._token = token
        self._timeout = timeout

    def fetch(self, url: str, limit: int, *, what: str, listed_by: str | None = None) -> bytes:
        """The bytes at `url`, at most `limit` of them. An archive (`listed_by` the index that
        lists it) is read from a file only when its index was one too."""
        scheme = urlsplit(url).scheme
        if scheme == "file":
            if listed_by is not None and urlsplit(listed_by).scheme != "file":
                raise RegistryUnavailable(
                    f"the index at {listed_by} lists {what} at {url}: a registry on the web "
                    "cannot send the daemon to a file of this machine"
                )
            return self._read_file(url, limit, what)
        return self._get(url, limit, what, {})

    def api(self, path: str, limit: int) -> bytes:
        """GET a path of the releases API, with the token when one is set."""
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        return self._get(f"{self.api_url}{path}", limit, "the releases", headers)

    def _read_file(self, url: str, limit: int, what: str) -> bytes:
        problem = file_url_problem(url)
        if problem is not None:
            raise RegistryUnavailable(f"{what} at {url} {problem}")
        path = Path(unquote(urlsplit(url).path))
        try:
            with path.open("rb") as stream:
                data = stream.read(limit + 1)
        except OSError as error:
            raise RegistryUnavailable(f"cannot read {what} at {path}: {error.strerror}") from None
        if len(data) > limit:
            raise RegistryUnavailable(f"{what} at {path} is larger than {_mib(limit)}")
        return data

    def _get(self, url: str, limit: int, what: str, headers: dict[str, str]) -> bytes:
        with httpx.Client(follow_redirects=False, timeout=self._timeout) as client:
            for _ in range(MAX_REDIRECTS + 1):
                problem = web_address_problem(url)
                if problem is not None:
                    raise RegistryUnavailable(f"{what} at {url} is refused: the address {problem}")
                sent = dict(headers)
                if self._token and _origin(url) == _origin(self.api_url):
                    sent["Authorization"] = f"Bearer {self._token}"
                try:
                    with client.stream("GET", url, headers=sent) as response:
                        if response.status_code in REDIRECTS and "location" in response.headers:
                            url = self._redirect(url, response.headers["location"], what)
                            continue
                        if response.status_code != 200:
                            raise RegistryUnavailable(
                                f"{what} at {url} answered HTTP {response.status_code}"
                            )
                        return _read_limited(response, url, limit, what)
                except httpx.HTTPError as error:
                    raise RegistryUnavailable(f"cannot reach {what} at {url}: {error}") from None
        raise RegistryUnavailable(f"{what} at {url} redirects more than {MAX_REDIRECTS} times")

    @staticmethod
    def _redirect(url: str, location: str, what: str) -> str:
        target = urljoin(url, location)
        problem = web_address_problem(target)
        if (
            problem is None
            and urlsplit(url).scheme == "https"
            and urlsplit(target).scheme != "https"
        ):
            problem = "leaves https://"
        if problem is not None:
            raise RegistryUnavailable(
                f"{what} at {url} redirects to {target}, which is refused: the address {problem}"
            )
        logger.info("%s at %s redirects to %s", what, url, target)
        return target


def _read_limited(response: httpx.Response, url: str, limit: int, what: str) -> bytes:
    """The body, counted as it arrives: a server that lies about its length, or does not say
    it, is stopped at the limit all the same."""
    chunks, count = [], 0
    for chunk in response.iter_bytes():
        count += len(chunk)
        if count > limit:
            raise RegistryUnavailable(f"{what} at {url} is larger than {_mib(limit)}")
        chunks.append(chunk)
    return b"".join(chunks)


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"
