"""A section of the daemon's configuration file that the daemon itself rewrites (`[[miners]]`,
`[[triggers]]`): its tables read strictly, and the section rewritten with every other byte of the
file kept.

A write splices the new section into the text that was read, checks that the result reads back
as the intended entries, and replaces the file atomically (a temporary file, flushed, renamed
over it, the directory flushed) with the same permissions; a new file is readable by its owner
only. A file changed under a write is refused rather than overwritten.

`Configured` keeps one section's entries as the file last held them: a hand edit is noticed by
the file's signature on the next request, and a file that no longer parses keeps the last good
set and refuses writes until it is fixed.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.items import AoT, InlineTable, Table

from kernel.errors import ConfigInvalid, Conflict, MemCastleError

logger = logging.getLogger(__name__)

Signature = tuple[int, int, int]


class Entry(Protocol):
    """What a section holds: named entries that say their own table."""

    @property
    def name(self) -> str: ...

    def definition(self) -> dict[str, Any]: ...


class DefinitionError(Exception):
    """A definition breaks a rule: `key` is the field at fault (`scope.since`)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"`{key}` {problem}")
        self.key = key


class FileInvalid(Exception):
    """The configuration file's section cannot be read; the message names the line."""


NAME = re.compile(r"^[a-z0-9_-]{1,64}$")
RESERVED_NAMES = ("reload",)


def parse_name(raw: object) -> str:
    """An entry's `name`: 1-64 lowercase letters, digits, `-` or `_`, and not a word a route
    takes for itself (`/api/miners/reload`)."""
    if not isinstance(raw, str) or not NAME.match(raw):
        raise DefinitionError(
            "name", "must be 1-64 lowercase letters, digits, `-` or `_` (it is required)"
        )
    if raw in RESERVED_NAMES:
        raise DefinitionError("name", f"cannot be {raw!r}: the word is reserved")
    return raw


@dataclass(frozen=True)
class Section[E: Entry]:
    """One rewritable section: its key (`miners`), how a table becomes an entry, the keys
    written as tables of their own or inline, and the refusal of a file it cannot use."""

    key: str
    parse: Callable[[Mapping[str, Any]], E]
    refused: type[Conflict]
    tables: tuple[str, ...] = ()
    inline: tuple[str, ...] = ()

    @property
    def header(self) -> re.Pattern[str]:
        return re.compile(rf"^\s*\[\[\s*{self.key}\s*\]\]")


class SectionFile[E: Entry]:
    """The configuration file as far as one section goes: its tables read strictly, and the
    section rewritten with every other byte kept."""

    def __init__(self, path: Path, section: Section[E]) -> None:
        self.path = path
        self.section = section

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

    def parse(self, text: str) -> list[E]:
        """The entries of `text`, in file order, or `FileInvalid` naming the line at fault."""
        key = self.section.key
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise FileInvalid(f"{self.path} is not valid TOML: {exc}") from None
        raw = data.get(key, [])
        if not isinstance(raw, list) or not all(isinstance(item, Mapping) for item in raw):
            raise FileInvalid(f"{self.path}: `{key}` must be [[{key}]] tables")
        entries: list[E] = []
        for index, table in enumerate(raw):
            try:
                entry = self.section.parse(table)
            except DefinitionError as exc:
                raise FileInvalid(
                    f"{self.path}{self._line(text, index, exc.key.split('.')[0])}: "
                    f"[[{key}]] entry {index + 1}: {exc}"
                ) from None
            if any(other.name == entry.name for other in entries):
                raise FileInvalid(
                    f"{self.path}{self._line(text, index, None)}: a second entry of [[{key}]] "
                    f"is named {entry.name!r}: names are unique"
                )
            entries.append(entry)
        return entries

    def rewrite(self, text: str, before: Sequence[E], plan: Sequence[Planned[E]]) -> str:
        """`text` with its section made of `plan`: each entry keeps the table it comes from
        (its comments, its keys' order) with only what changed rewritten, and new entries
        follow at the end. Nothing outside the section changes."""
        key = self.section.key
        document = tomlkit.parse(text)
        if key not in document:
            section = self._section_text(tomlkit.document(), [], plan)
            if not section:
                return text
            separator = "" if not text.strip() else ("\n" if text.endswith("\n") else "\n\n")
            return text + separator + section
        del document[key]
        span = _removed_span(text, document.as_string())
        if span is None:
            raise self.section.refused(
                f"{self.path}: the [[{key}]] tables are not together in one place, so the "
                "daemon cannot rewrite them alone",
                help=f"move every [[{key}]] table (and its [{key}.*] tables) together, then "
                "send the request again",
            )
        start, end = span
        core, tail = _split_tail(text[start:end])
        own = tomlkit.parse(core)
        if not isinstance(own.get(key), AoT):
            raise self.section.refused(
                f"{self.path}: `{key}` is not written as [[{key}]] tables",
                help=f"write each entry as a [[{key}]] table, then send the request again",
            )
        return text[:start] + self._section_text(own, before, plan) + tail + text[end:]

    def replace(self, text: str, expected: Signature | None) -> Signature:
        """Write `text` in place of the file by an atomic rename, keeping its permissions
        (0600 for a new file), unless it changed since `expected` was seen."""
        target = self.path.resolve() if self.path.is_symlink() else self.path
        if self.signature() != expected:
            raise self.section.refused(
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

    def _section_text(
        self, section: TOMLDocument, before: Sequence[E], plan: Sequence[Planned[E]]
    ) -> str:
        """The tables of `plan`: those of `section` (the file's own, alone in a document)
        updated in place or dropped, then new ones, one blank line between."""
        key = self.section.key
        kept = {planned.origin: planned.entry for planned in plan if planned.origin is not None}
        parts: list[str] = []
        if key in section:
            tables = section[key]
            for index in reversed(range(len(tables))):
                if index in kept:
                    self._update(tables[index], before[index], kept[index])
                else:
                    del tables[index]
            if len(tables):
                parts.append(section.as_string())
        for planned in plan:
            if planned.origin is None:
                document = tomlkit.document()
                document.append(key, tomlkit.aot())
                document[key].append(self._table(planned.entry))
                parts.append(document.as_string())
        return "\n".join(part.rstrip("\n") + "\n" for part in parts if part.strip())

    def _table(self, entry: E) -> Table:
        table = tomlkit.table()
        for key, value in entry.definition().items():
            table[key] = self._item(key, value)
        return table

    def _item(self, key: str, value: Any) -> Any:
        """A value as the file writes it: some inline (a credential), some as a table of their
        own (a miner's options)."""
        if key in self.section.inline:
            inline: InlineTable = tomlkit.inline_table()
            inline.update(value)
            return inline
        if key in self.section.tables:
            table = tomlkit.table()
            for name, option in value.items():
                table[name] = option
            return table
        return value

    def _update(self, table: Table, old: E, new: E) -> None:
        """Rewrite in `table` only the keys that differ between `old` and `new`."""
        before, after = old.definition(), new.definition()
        for key in dict.fromkeys([*before, *after]):
            if before.get(key) == after.get(key):
                continue
            if key not in after:
                if key in table:
                    del table[key]
            elif key in self.section.tables and isinstance(table.get(key), Table):
                _update_options(table[key], before.get(key, {}), after[key])
            else:
                table[key] = self._item(key, after[key])

    def _line(self, text: str, index: int, key: str | None) -> str:
        """` line N` for the `index`th table of the section (its `key`'s line when found), or
        nothing when the tables cannot be told apart in the text."""
        lines = text.splitlines()
        headers = [
            number for number, line in enumerate(lines, 1) if self.section.header.match(line)
        ]
        if index >= len(headers):
            return ""
        start = headers[index]
        end = headers[index + 1] if index + 1 < len(headers) else len(lines) + 1
        if key is not None:
            section = re.escape(self.section.key)
            pattern = re.compile(
                rf"^\s*(?:[\"']?{re.escape(key)}[\"']?\s*[=.]|"
                rf"\[\s*{section}\s*\.\s*[\"']?{re.escape(key)}\b)"
            )
            for number in range(start, end):
                if pattern.match(lines[number - 1]):
                    return f" line {number}"
        return f" line {start}"


@dataclass(frozen=True)
class Planned[E: Entry]:
    """One entry of the section to write, and the index of the file's table it comes from
    (None for a new one)."""

    entry: E
    origin: int | None = None


def configured[E: Entry](path: Path, section: Section[E]) -> Configured[E]:
    """The section as the file holds it at start-up, where a section that does not read stops
    the daemon (`memcastle::config::invalid`, naming the line)."""
    try:
        return Configured(path, section)
    except FileInvalid as exc:
        raise ConfigInvalid(
            str(exc),
            help=f"fix the [[{section.key}]] section of the configuration file and start again",
        ) from None


class Configured[E: Entry]:
    """One section's entries as the file last held them, and the writes that change them.

    Callers hold `lock` around a read-then-write. `refresh()` picks up a hand edit: a file whose
    signature changed is read again; one that no longer parses keeps the last good set and makes
    `writable()` refuse until it is fixed."""

    def __init__(self, path: Path, section: Section[E]) -> None:
        self.file = SectionFile(path, section)
        self.lock = threading.RLock()
        signature = self.file.signature()
        text = self.file.read()
        self.entries: list[E] = self.file.parse(text)
        self._text, self._signature = text, signature
        # Why the file on disk cannot be used, while it cannot: writes are refused meanwhile.
        self.error: str | None = None

    def refresh(self, *, force: bool = False) -> list[E] | None:
        """Read the file again if it changed (always with `force`): the entries it held before
        when a new set was read, else None."""
        signature = self.file.signature()
        if signature == self._signature and not force:
            return None
        try:
            text = self.file.read()
            entries = self.file.parse(text)
        except FileInvalid as exc:
            if str(exc) != self.error:
                logger.error(
                    "the [[%s]] configuration is invalid; the last good set is kept: %s",
                    self.file.section.key,
                    exc,
                )
            self._signature, self.error = signature, str(exc)
            return None
        before = self.entries
        self._text, self._signature, self.entries, self.error = text, signature, entries, None
        return before

    def writable(self) -> None:
        self.refresh()
        if self.error is not None:
            raise self.file.section.refused(f"{self.error}; nothing was written")

    def write(self, plan: Sequence[Planned[E]]) -> None:
        """Make the section `plan`, or write nothing: the rewrite must read back as exactly the
        entries asked for."""
        text = self.file.rewrite(self._text, self.entries, plan)
        written = [planned.entry for planned in plan]
        if self.file.parse(text) != written:
            raise MemCastleError(
                f"rewriting the [[{self.file.section.key}]] section of {self.file.path} did not "
                "give the entries asked for; nothing was written"
            )
        self._signature = self.file.replace(text, self._signature)
        self._text, self.entries = text, written

    def kept(self) -> list[Planned[E]]:
        return [Planned(entry, index) for index, entry in enumerate(self.entries)]

    def replacing(self, index: int, entry: E) -> list[Planned[E]]:
        plan = self.kept()
        plan[index] = Planned(entry, index)
        return plan

    def indexed(self, name: object) -> tuple[int, E] | None:
        for index, entry in enumerate(self.entries):
            if entry.name == name:
                return index, entry
        return None


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


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable: on POSIX a rename is on disk once its directory is synced."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
