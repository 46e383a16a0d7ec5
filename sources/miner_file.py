"""The daemon's configuration file as far as miners go: its `[[miners]]` tables read strictly,
and the section rewritten with every other byte of the file kept.

A write splices the new section into the text that was read, checks that the result reads back
as the intended miners, and replaces the file atomically (a temporary file, flushed, renamed
over it, the directory flushed) with the same permissions; a new file is readable by its owner
only. A file changed under a write is refused rather than overwritten.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.items import AoT, InlineTable, Table

from sources.miners import (
    HEADER,
    KEYS,
    ConfigFileRefused,
    DefinitionError,
    FileInvalid,
    Miner,
    parse_miner,
)

Signature = tuple[int, int, int]


class MinersFile:
    """The configuration file as far as miners go: its `[[miners]]` read strictly, and the
    section rewritten with every other byte kept."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def signature(self) -> Signature | None:
        """What tells a changed file: modification time, length and inode (an editor that
        saves by renaming changes the inode). None when there is no file."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            raise FileInvalid(f"{self.path} cannot be read: {exc}") from None

    def parse(self, text: str) -> list[Miner]:
        """The miners of `text`, in file order, or `FileInvalid` naming the line at fault."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise FileInvalid(f"{self.path} is not valid TOML: {exc}") from None
        raw = data.get("miners", [])
        if isinstance(raw, Mapping) and "trigger" in raw:
            raise FileInvalid(
                f"{self.path}{_line_text(text, 0, 'trigger')}: the legacy [miners.trigger] "
                "table is no longer read: define [[triggers]] that name miners instead"
            )
        if not isinstance(raw, list) or not all(isinstance(item, Mapping) for item in raw):
            raise FileInvalid(f"{self.path}: `miners` must be [[miners]] tables")
        miners: list[Miner] = []
        for index, table in enumerate(raw):
            try:
                miner = parse_miner(table)
            except DefinitionError as exc:
                raise FileInvalid(
                    f"{self.path}{_line_text(text, index, exc.key.split('.')[0])}: "
                    f"[[miners]] entry {index + 1}: {exc}"
                ) from None
            if any(other.name == miner.name for other in miners):
                raise FileInvalid(
                    f"{self.path}{_line_text(text, index, None)}: a second miner is named "
                    f"{miner.name!r}: names are unique"
                )
            miners.append(miner)
        return miners

    def rewrite(self, text: str, before: Sequence[Miner], plan: Sequence[Planned]) -> str:
        """`text` with its `[[miners]]` section made of `plan`: each entry keeps the table it
        comes from (its comments, its keys' order) with only what changed rewritten, and new
        miners follow at the end. Nothing outside the section changes."""
        document = tomlkit.parse(text)
        if "miners" not in document:
            section = _section_text(tomlkit.document(), [], plan)
            if not section:
                return text
            separator = "" if not text.strip() else ("\n" if text.endswith("\n") else "\n\n")
            return text + separator + section
        del document["miners"]
        span = _removed_span(text, document.as_string())
        if span is None:
            raise ConfigFileRefused(
                f"{self.path}: the [[miners]] tables are not together in one place, so the "
                "daemon cannot rewrite them alone",
                help="move every [[miners]] table (and its [miners.*] tables) together, then "
                "send the request again",
            )
        start, end = span
        core, tail = _split_tail(text[start:end])
        own = tomlkit.parse(core)
        if not isinstance(own.get("miners"), AoT):
            raise ConfigFileRefused(
                f"{self.path}: `miners` is not written as [[miners]] tables",
                help="write each miner as a [[miners]] table, then send the request again",
            )
        return text[:start] + _section_text(own, before, plan) + tail + text[end:]

    def replace(self, text: str, expected: Signature | None) -> Signature:
        """Write `text` in place of the file by an atomic rename, keeping its permissions
        (0600 for a new file), unless it changed since `expected` was seen."""
        target = self.path.resolve() if self.path.is_symlink() else self.path
        if self.signature() != expected:
            raise ConfigFileRefused(
                f"{self.path} was edited while the request was handled; nothing was written",
                help="send the request again: the daemon reads the file afresh",
            )
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            mode = 0o600
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _fsync_directory(target.parent)
        signature = self.signature()
        assert signature is not None
        return signature


@dataclass(frozen=True)
class Planned:
    """One miner of the section to write, and the index of the file's table it comes from
    (None for a new one)."""

    miner: Miner
    origin: int | None = None


def _section_text(section: TOMLDocument, before: Sequence[Miner], plan: Sequence[Planned]) -> str:
    """The `[[miners]]` tables of `plan`: those of `section` (the file's own, alone in a
    document) updated in place or dropped, then new ones, one blank line between."""
    kept = {planned.origin: planned.miner for planned in plan if planned.origin is not None}
    parts: list[str] = []
    if "miners" in section:
        tables = section["miners"]
        for index in reversed(range(len(tables))):
            if index in kept:
                _update(tables[index], before[index], kept[index])
            else:
                del tables[index]
        if len(tables):
            parts.append(section.as_string())
    for planned in plan:
        if planned.origin is None:
            document = tomlkit.document()
            document.append("miners", tomlkit.aot())
            document["miners"].append(_table(planned.miner))
            parts.append(document.as_string())
    return "\n".join(part.rstrip("\n") + "\n" for part in parts if part.strip())


def _table(miner: Miner) -> Table:
    table = tomlkit.table()
    for key, value in miner.definition().items():
        table[key] = _item(key, value)
    return table


def _item(key: str, value: Any) -> Any:
    """A value as the file writes it: a credential inline, options as a table of their own."""
    if key == "credential":
        inline: InlineTable = tomlkit.inline_table()
        inline.update(value)
        return inline
    if key in ("scope", "config"):
        table = tomlkit.table()
        for name, option in value.items():
            table[name] = option
        return table
    return value


def _update(table: Table, old: Miner, new: Miner) -> None:
    """Rewrite in `table` only the keys that differ between `old` and `new`."""
    before, after = old.definition(), new.definition()
    for key in KEYS:
        if before.get(key) == after.get(key):
            continue
        if key not in after:
            if key in table:
                del table[key]
        elif key in ("scope", "config") and isinstance(table.get(key), Table):
            _update_options(table[key], before.get(key, {}), after[key])
        else:
            table[key] = _item(key, after[key])


def _update_options(table: Table, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    for name in before:
        if name not in after:
            del table[name]
    for name, value in after.items():
        if before.get(name) != value:
            table[name] = value


def _removed_span(text: str, without: str) -> tuple[int, int] | None:
    """Where `without` is `text` with one stretch taken out, starting at a line: that
    stretch's bounds, or None when it is not one stretch."""
    length = len(text) - len(without)
    start = 0
    while start < len(without) and text[start] == without[start]:
        start += 1
    start = text.rfind("\n", 0, start) + 1
    if length < 0 or text[:start] + text[start + length :] != without:
        return None
    return start, start + length


def _split_tail(section: str) -> tuple[str, str]:
    """The section's tables, and the blank and comment lines after them, which introduce what
    follows and so are never rewritten."""
    lines = section.splitlines(keepends=True)
    cut = len(lines)
    while cut and re.match(r"^\s*(#.*)?$", lines[cut - 1]):
        cut -= 1
    return "".join(lines[:cut]), "".join(lines[cut:])


def _line_text(text: str, index: int, key: str | None) -> str:
    """` line N` for the `index`th [[miners]] table (its `key`'s line when found), or nothing
    when the tables cannot be told apart in the text."""
    lines = text.splitlines()
    headers = [number for number, line in enumerate(lines, 1) if HEADER.match(line)]
    if index >= len(headers):
        return ""
    start = headers[index]
    end = headers[index + 1] if index + 1 < len(headers) else len(lines) + 1
    if key is not None:
        pattern = re.compile(
            rf"^\s*(?:[\"']?{re.escape(key)}[\"']?\s*[=.]|\[\s*miners\s*\.\s*[\"']?{re.escape(key)}\b)"
        )
        for number in range(start, end):
            if pattern.match(lines[number - 1]):
                return f" line {number}"
    return f" line {start}"


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable: on POSIX a rename is on disk once its directory is synced."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
