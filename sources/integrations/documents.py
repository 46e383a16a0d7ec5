"""The agents' own configuration files, and the entries MemCastle puts in them.

An entry is found again by what makes it MemCastle's: a key (`mcp_servers.memcastle`), a list
element that names MemCastle's hook or instructions file, or a block of text between markers.
Everything else in the file is the user's and is kept: TOML through tomlkit, which keeps its
comments and layout; JSON indented as it was; Markdown byte for byte around the block.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import MutableMapping, MutableSequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from sources.integrations.errors import Conflict


class Format(StrEnum):
    JSON = "json"
    TOML = "toml"
    MARKDOWN = "markdown"


@dataclass(frozen=True)
class Key:
    """The value at a key path, MemCastle's by its key."""

    at: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class Item:
    """An element of the list at a key path, MemCastle's when it mentions `owner` (the path of
    a file MemCastle installed), so the user's own elements are never taken for it."""

    at: tuple[str, ...]
    value: Any
    owner: str


@dataclass(frozen=True)
class Block:
    """Text between MemCastle's markers, added at the end of a Markdown file."""

    text: str


Entry = Key | Item | Block

BEGIN = "<!-- BEGIN memcastle integration: `memcastle integration remove` takes it out -->"
END = "<!-- END memcastle integration -->"
_BLOCK = re.compile(rf"(\n?){re.escape(BEGIN)}\n(.*?)\n{re.escape(END)}\n?", re.DOTALL)


def entry_record(entry: Entry) -> dict[str, Any]:
    """An entry as the manifest keeps it."""
    if isinstance(entry, Block):
        return {"block": entry.text}
    record = {"at": list(entry.at), "value": entry.value}
    return {**record, "owner": entry.owner} if isinstance(entry, Item) else record


def entry_from_record(record: dict[str, Any]) -> Entry:
    if "block" in record:
        return Block(record["block"])
    at = tuple(record["at"])
    return (
        Item(at, record["value"], record["owner"])
        if "owner" in record
        else Key(at, record["value"])
    )


class Document:
    """One configuration file's content, parsed; `None` text is a file that does not exist."""

    def __init__(self, path: Path, format: Format, text: str | None) -> None:
        self.path = path
        self.format = format
        self.existed = text is not None
        self._text = text or ""
        self._tree: MutableMapping[str, Any] = {}
        if format is not Format.MARKDOWN:
            self._tree = self._parse(self._text)

    def _parse(self, text: str) -> MutableMapping[str, Any]:
        try:
            if self.format is Format.TOML:
                return tomlkit.parse(text)
            tree = json.loads(text) if text.strip() else {}
        except (TOMLKitError, ValueError) as exc:
            raise Conflict(
                f"{self.path} is not {self.format.upper()} MemCastle can edit: {exc}",
                help=f"fix {self.path} (comments in a JSON file are not supported), then retry",
            ) from exc
        if not isinstance(tree, dict):
            raise Conflict(f"{self.path} does not hold a {self.format.upper()} object")
        return tree

    def find(self, entry: Entry) -> Any | None:
        """MemCastle's entry as the file has it now (plain values), or `None`."""
        if isinstance(entry, Block):
            match = _BLOCK.search(self._text)
            return match.group(2) if match else None
        container = self._walk(entry.at[:-1], create=False)
        if container is None:
            return None
        found: Any = container.get(entry.at[-1])
        if isinstance(entry, Key):
            return _plain(found)
        index = _owned(found, entry.owner)
        return None if index is None else _plain(found[index])

    def put(self, entry: Entry) -> None:
        """Add the entry, or replace MemCastle's one in place."""
        if isinstance(entry, Block):
            block = f"{BEGIN}\n{entry.text}\n{END}\n"
            if _BLOCK.search(self._text):
                self._text = _BLOCK.sub(lambda found: found.group(1) + block, self._text, count=1)
            elif self._text:
                # A blank line between the user's text and the block.
                self._text += ("\n" if self._text.endswith("\n") else "\n\n") + block
            else:
                self._text = block
            return
        container = self._walk(entry.at[:-1], create=True)
        assert container is not None
        name = entry.at[-1]
        if isinstance(entry, Key):
            container[name] = self._value(entry.value, spaced=True)
            return
        items = container.get(name)
        if items is None:
            items = tomlkit.aot() if self.format is Format.TOML else []
            container[name] = items
        if not isinstance(items, MutableSequence):
            raise self._in_the_way(entry.at)
        index = _owned(items, entry.owner)
        if index is None:
            items.append(self._value(entry.value))
        else:
            items[index] = self._value(entry.value)

    def drop(self, entry: Entry) -> None:
        """Take MemCastle's entry out, and the tables or lists left empty on its path."""
        if isinstance(entry, Block):
            self._text = _BLOCK.sub("", self._text, count=1)
            return
        parents = self._path_to(entry.at[:-1])
        if parents is None:
            return
        container, name = parents[-1], entry.at[-1]
        if isinstance(entry, Item):
            items: Any = container.get(name)
            index = _owned(items, entry.owner)
            if index is None:
                return
            del items[index]
            if len(items):
                return
        if name in container:
            del container[name]
        for parent, key in zip(reversed(parents[:-1]), reversed(entry.at[:-1]), strict=True):
            if len(parent[key]):
                break
            del parent[key]

    @property
    def empty(self) -> bool:
        return not (self._tree if self.format is not Format.MARKDOWN else self._text.strip())

    def text(self) -> str:
        if self.format is Format.MARKDOWN:
            return self._text
        if self.format is Format.TOML:
            return tomlkit.dumps(self._tree)
        newline = "\n" if self._text.endswith("\n") or not self.existed else ""
        return json.dumps(self._tree, indent=_indent(self._text), ensure_ascii=False) + newline

    def _walk(self, at: tuple[str, ...], *, create: bool) -> MutableMapping[str, Any] | None:
        container: MutableMapping[str, Any] = self._tree
        for index, name in enumerate(at):
            child = container.get(name)
            if child is None:
                if not create:
                    return None
                child = tomlkit.table(is_super_table=True) if self.format is Format.TOML else {}
                container[name] = child
            if not isinstance(child, MutableMapping):
                raise self._in_the_way(at[: index + 1])
            container = child
        return container

    def _path_to(self, at: tuple[str, ...]) -> list[MutableMapping[str, Any]] | None:
        """The containers from the root to `at`, or `None` when one is missing."""
        chain = [self._tree]
        for name in at:
            child = chain[-1].get(name)
            if not isinstance(child, MutableMapping):
                return None
            chain.append(child)
        return chain

    def _value(self, value: Any, *, spaced: bool = False) -> Any:
        """A value as the file's format holds it; a `spaced` TOML table is followed by a blank
        line, so the next table's header does not stick to it."""
        if self.format is not Format.TOML:
            return value
        item = tomlkit.item(value)
        if spaced and isinstance(item, Table):
            item.add(tomlkit.nl())
        return item

    def _in_the_way(self, at: tuple[str, ...]) -> Conflict:
        return Conflict(
            f"`{'.'.join(at)}` in {self.path} is not what MemCastle expects there",
            help=f"correct `{'.'.join(at)}` in {self.path}, then retry",
        )


def _owned(items: object, owner: str) -> int | None:
    """The index of the list element that mentions `owner`."""
    if not isinstance(items, MutableSequence):
        return None
    for index, item in enumerate(items):
        if owner in json.dumps(_plain(item)):
            return index
    return None


def _plain(value: Any) -> Any:
    """tomlkit's items as the plain values they hold."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _indent(text: str) -> str | int:
    """The indentation of a JSON file's first indented line (2 for a new file)."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else 2


def read_text(path: Path) -> str | None:
    """A configuration file's text; None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Conflict(
            f"{path} cannot be read as text: {exc}", help=f"fix {path}, then retry"
        ) from exc


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write through a temporary file renamed over the target, so an agent never reads half a
    file. `mode` sets the permissions; without it an existing file keeps its own (a new one
    gets the umask's default). A symlink (a dotfiles manager's) is written through, not
    replaced."""
    target = path.resolve()
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~umask()
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
