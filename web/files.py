"""The dashboard's files, read once from the package when the daemon starts.

They are public (the token gate lets `GET /ui/...` through) because they carry no data: every
datum comes from `/api` with the tab's token. Holding them in memory keeps a page load off the
disk and makes the answer to a path a lookup, so nothing outside `dist/` can ever be named.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

DIST = Path(__file__).resolve().parent / "dist"
INDEX = "index.html"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".map": "application/json",
    ".md": "text/plain; charset=utf-8",
}
# A licence file has no suffix.
PLAIN_TEXT = "text/plain; charset=utf-8"

# The one inline script the page has is its import map, which Chromium cannot load from a file.
_INLINE_SCRIPT = re.compile(rb"<script[^>]*>(.*?)</script>", re.DOTALL)


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str


class DashboardFiles:
    """Every file under `root`, by its path relative to it (`js/main.js`)."""

    def __init__(self, root: Path = DIST) -> None:
        self.root = root
        self.assets: dict[str, Asset] = {}
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    relative = path.relative_to(root).as_posix()
                    content_type = CONTENT_TYPES.get(path.suffix, PLAIN_TEXT)
                    self.assets[relative] = Asset(path.read_bytes(), content_type)
        self.content_security_policy = _policy(self.assets.get(INDEX))

    @property
    def installed(self) -> bool:
        return INDEX in self.assets

    def get(self, path: str) -> Asset | None:
        """The file at `path` under `/ui/`; the directory itself is the page."""
        return self.assets.get(path or INDEX)

    @property
    def size(self) -> int:
        """What a browser downloads to run the dashboard: everything but licences, notes and
        source maps (which only a debugger asks for)."""
        loaded = (".html", ".js", ".css")
        return sum(len(a.body) for name, a in self.assets.items() if name.endswith(loaded))


def _policy(index: Asset | None) -> str:
    """The page may load only its own files and talk only to its own origin: the inline import
    map is allowed by its digest, nothing else inline runs."""
    digests = []
    if index is not None:
        for script in _INLINE_SCRIPT.findall(index.body):
            if script.strip():
                digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
                digests.append(f"'sha256-{digest}'")
    return "; ".join(
        (
            "default-src 'none'",
            " ".join(("script-src 'self'", *digests)),
            "style-src 'self'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )
