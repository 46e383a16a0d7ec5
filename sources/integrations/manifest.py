"""What an installation wrote, kept beside it as `manifest.json`: the MemCastle version, every
file with its SHA-256, every entry put in the agent's configuration files (and a copy of each
file as it was before, to put it back byte for byte), the MCP registration, and the directories
it created.

`list` compares the manifest with the disk (a difference is a hand edit: `modified`) and with
what an installation would write now (a difference, or another version: `outdated`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sources.integrations.agents import Registration
from sources.integrations.documents import Entry, Format, entry_from_record, entry_record

NAME = "manifest.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileRecord:
    path: str
    sha256: str
    mode: int


@dataclass(frozen=True)
class EditRecord:
    path: str
    format: Format
    entries: tuple[Entry, ...]
    # How the file was before: absent (remove deletes it), or copied to `original` (relative
    # to the agent's directory). While the file is that copy with the entries put in, and
    # nothing else changed, remove puts the copy back; otherwise it takes the entries out.
    existed: bool
    original: str | None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "entries": [entry_record(entry) for entry in self.entries]}

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> EditRecord:
        return cls(
            path=record["path"],
            format=Format(record["format"]),
            entries=tuple(entry_from_record(entry) for entry in record["entries"]),
            existed=record["existed"],
            original=record["original"],
        )


@dataclass(frozen=True)
class Manifest:
    agent: str
    version: str
    files: tuple[FileRecord, ...] = ()
    edits: tuple[EditRecord, ...] = ()
    registration: Registration | None = None
    dirs: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        registration = asdict(self.registration) if self.registration else None
        if registration:
            registration["probe"] = str(registration["probe"])
        return {
            "agent": self.agent,
            "version": self.version,
            "files": [asdict(record) for record in self.files],
            "edits": [record.as_json() for record in self.edits],
            "registration": registration,
            "dirs": list(self.dirs),
        }

    def dumps(self) -> bytes:
        return (json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n").encode()

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        """The manifest, or None when there is none (or it cannot be read: then nothing is
        known to be MemCastle's)."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            registration = record.get("registration")
            return cls(
                agent=record["agent"],
                version=record["version"],
                files=tuple(FileRecord(**file) for file in record["files"]),
                edits=tuple(EditRecord.from_json(edit) for edit in record["edits"]),
                registration=_registration(registration) if registration else None,
                dirs=tuple(record.get("dirs", ())),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def same_content(self, other: Manifest) -> bool:
        """Whether two installations put the same things in the same places."""
        return self._content() == other._content()

    def _content(self) -> str:
        record = self.as_json()
        return json.dumps(
            {
                "files": sorted((f["path"], f["sha256"]) for f in record["files"]),
                "edits": sorted((e["path"], e["entries"]) for e in record["edits"]),
                "registration": record["registration"],
            },
            sort_keys=True,
        )


def _registration(record: dict[str, Any]) -> Registration:
    return Registration(
        add=tuple(record["add"]),
        remove=tuple(record["remove"]),
        probe=Path(record["probe"]),
        at=tuple(record["at"]),
        value=record["value"],
    )
