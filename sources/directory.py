"""The built-in `directory` source: one document per text file under a directory.

Files are found in order of modification time, then relative path, and the cursor is the last
(mtime, path) mined, so mining again reads only what changed since. A file modified moments
before the run looked does not move the cursor: the next run reads it again. Symbolic links are
never followed, the usual build, cache and hidden directories are not entered, and empty,
oversized, binary and non-UTF-8 files are skipped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernel.errors import InputInvalid
from sources.adapters import (
    Candidate,
    CanonicalDocument,
    Capabilities,
    CursorInvalid,
    Discovery,
    OptionSpec,
    RawDocument,
    SourceRef,
)

# A file modified less than this before a run looks may have been written after it looked. A
# filesystem that keeps coarse modification times (whole seconds, two on FAT, the kernel's tick on
# older Linux) gives a file written just after the run looked the same time as one it saw, and
# a cursor past that time would never find the later write (git's "racy" files).
SETTLING_NS = 2_000_000_000

SKIPPED_DIRECTORIES = frozenset(
    {".git", "target", "node_modules", ".venv", "venv", "dist", "build", ".cache"}
)


def parse_since(value: str) -> dt.datetime:
    """`YYYY-MM`, `YYYY-MM-DD` or RFC 3339, as a UTC instant (a date is its midnight UTC)."""
    text = value.strip()
    try:
        if len(text) == 7:
            return dt.datetime.strptime(text, "%Y-%m").replace(tzinfo=dt.UTC)
        if len(text) == 10:
            return dt.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=dt.UTC)
        instant = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise InputInvalid(
            "options",
            f"has `since` {value!r}, which is not YYYY-MM, YYYY-MM-DD or an RFC 3339 instant "
            "with a time zone",
        )
    return instant.astimezone(dt.UTC)


def _nanoseconds(instant: dt.datetime) -> int:
    delta = instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


class DirectoryAdapter:
    name = "directory"
    description = "text files under a directory, one document per file (room `files`)"
    origin = "builtin"
    capabilities = Capabilities(incremental=True)
    # A watch trigger on the directory mines what changed moments after it changed; a webhook
    # one mines it when told (a hook that runs after `git pull`, say).
    triggers = frozenset({"watch", "webhook"})
    options: tuple[OptionSpec, ...] = (
        OptionSpec(
            name="since",
            description="only files modified at or after this date (YYYY-MM, YYYY-MM-DD or "
            "RFC 3339)",
            type="date",
            breadth="since",
        ),
    )

    def __init__(self, *, max_file_bytes: int, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.max_file_bytes = max_file_bytes
        self.clock_ns = clock_ns

    def identify(self, locator: str | None, options: Mapping[str, str]) -> SourceRef:
        if not locator:
            raise InputInvalid("locator", "is required: the absolute path of the directory")
        if not os.path.isabs(locator):
            raise InputInvalid(
                "locator",
                f"must be an absolute path, not {locator!r}: the daemon does not share your "
                "working directory",
            )
        directory = os.path.realpath(locator)
        if not os.path.isdir(directory):
            raise InputInvalid("locator", f"is not a directory the daemon can read: {locator}")
        normalized = {}
        if "since" in options:
            normalized["since"] = parse_since(options["since"]).isoformat().replace("+00:00", "Z")
        return SourceRef(source=self.name, account=None, locator=directory, options=normalized)

    def default_wing(self, source: SourceRef) -> str:
        return Path(source.locator).name or "root"

    def default_room(self) -> str:
        return "files"

    def discover(self, source: SourceRef, cursor: Any, limit: int) -> Discovery:
        after = _cursor_key(cursor)
        settled_before = self.clock_ns() - SETTLING_NS
        since = source.options.get("since")
        since_ns = _nanoseconds(parse_since(since)) if since else None
        found = []
        for mtime_ns, relative in _files(Path(source.locator)):
            if since_ns is not None and mtime_ns < since_ns:
                continue
            if after is not None and (mtime_ns, relative) <= after:
                continue
            found.append((mtime_ns, relative))
        found.sort()
        candidates = []
        # Files are in time order: once one is too recent to have settled, so are the rest, and
        # the cursor stays where the last settled one put it.
        settled = cursor
        for mtime_ns, relative in found[:limit]:
            if mtime_ns < settled_before:
                settled = {"mtime_ns": mtime_ns, "key": relative}
            candidates.append(
                Candidate(external_id=relative, cursor_after=settled, handle=relative)
            )
        return Discovery(candidates=candidates, exhausted=len(found) <= limit)

    def read(self, source: SourceRef, candidate: Candidate) -> RawDocument | None:
        path = Path(source.locator, candidate.handle)
        try:
            status = path.lstat()
            if not stat.S_ISREG(status.st_mode) or not 0 < status.st_size <= self.max_file_bytes:
                return None
            # O_NOFOLLOW: a file swapped for a link since it was found is not followed either.
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as file:
                data = file.read(self.max_file_bytes + 1)
        except OSError:
            return None
        if not data or len(data) > self.max_file_bytes or b"\0" in data:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        modified = dt.datetime.fromtimestamp(status.st_mtime, dt.UTC)
        return RawDocument(
            external_id=candidate.external_id,
            revision=hashlib.sha256(data).hexdigest(),
            body=text,
            metadata={"path": str(path), "size": len(data), "mtime_ns": status.st_mtime_ns},
            occurred_at=modified.isoformat().replace("+00:00", "Z"),
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        return CanonicalDocument(
            kind="file",
            segments=[raw.body],
            title=raw.external_id,
            name=raw.external_id,
            uri=raw.metadata["path"],
        )


def _cursor_key(cursor: Any) -> tuple[int, str] | None:
    if cursor is None:
        return None
    if (
        isinstance(cursor, dict)
        and isinstance(cursor.get("mtime_ns"), int)
        and isinstance(cursor.get("key"), str)
    ):
        return cursor["mtime_ns"], cursor["key"]
    raise CursorInvalid(f"the stored cursor {cursor!r} is not a cursor of the directory source")


def _files(root: Path) -> list[tuple[int, str]]:
    """(mtime_ns, relative path with `/`) of every regular file to consider, links not
    followed, skipped and hidden directories not entered."""
    found = []
    pending = [(root, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            relative = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRECTORIES and not entry.name.startswith("."):
                    pending.append((Path(entry.path), f"{relative}/"))
            elif entry.is_file(follow_symlinks=False):
                try:
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, relative))
                except OSError:
                    continue
    return found
