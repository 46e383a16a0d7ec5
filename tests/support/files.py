"""Directory trees written for the mining tests, with exact modification times: the order a
mine reads files in, and the cursor it leaves, follow from them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# 2026-01-01T00:00:00Z; files get times after it, one second apart.
BASE_NS = 1_767_225_600 * 1_000_000_000
SECOND = 1_000_000_000


def write(
    root: Path, relative: str, content: str | bytes = "text\n", mtime_ns: int = BASE_NS
) -> Path:
    """One file under `root`, its directories made, modified at `mtime_ns`."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def tree(root: Path, files: Mapping[str, str | bytes], start_ns: int = BASE_NS) -> Path:
    """Write `files` under `root`, modified one second apart in the order given; the root's real
    path, as a mine records it."""
    root.mkdir(parents=True, exist_ok=True)
    for n, (relative, content) in enumerate(files.items()):
        write(root, relative, content, start_ns + n * SECOND)
    return Path(os.path.realpath(root))
