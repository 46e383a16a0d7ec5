"""What the vector leg filters by: every drawer's scope fields, in numpy arrays; whether it is
chatter (`palace.search.chatter`), which the hybrid ranking weighs down; and who speaks in it
(`palace.search.speakers`), which the semantic leg's question leaves out where they speak
throughout, and which makes a drawer where two or more speak a dialogue, whose lexical match the
hybrid ranking counts for less (`palace.search.fusion`).

A drawer has a row for the life of the daemon; a deleted drawer's row is marked dead. A scope
becomes a boolean mask over the rows in well under a millisecond at 100,000 drawers, so the
vector leg filters before it ranks (search.md section 2), never after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from palace.search.scope import Scope

_GROW = 1024
_ARRAYS = ("alive", "wing", "room", "source_kind", "valid_from", "valid_to", "chatter")


@dataclass
class _Voices:
    """Who speaks in a wing's conversations: the drawers with speakers of each conversation, and
    of each conversation each name speaks in (a conversation is a code, or `-1 - row` for a
    drawer that is one by itself)."""

    conversations: Counter[int] = field(default_factory=Counter)
    speakers: dict[str, Counter[int]] = field(default_factory=dict)


class Catalog:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self._codes: dict[str, int] = {}  # wing, room and source kind ids, interned
        self.alive = np.zeros(0, dtype=bool)
        self.wing = np.zeros(0, dtype=np.int32)
        self.room = np.zeros(0, dtype=np.int32)
        self.source_kind = np.zeros(0, dtype=np.int32)
        self.valid_from = np.zeros(0, dtype=np.int64)
        self.valid_to = np.zeros(0, dtype=np.int64)
        self.chatter = np.zeros(0, dtype=bool)
        self.tags: dict[str, set[int]] = {}
        self._row_tags: dict[int, tuple[str, ...]] = {}
        self._conversations: dict[tuple[str, str], int] = {}  # interned, as the codes
        self._row_voices: dict[int, tuple[int, tuple[str, ...]]] = {}  # conversation, speakers
        self._voices: dict[int, _Voices] = {}  # by wing code
        self._palace = _Voices()  # every wing's

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def live(self) -> int:
        return int(self.alive[: len(self.ids)].sum())

    def row(self, drawer_id: str) -> int:
        """The drawer's row, made (dead until `put`) when it has none: a vector can arrive
        before its drawer."""
        row = self.rows.get(drawer_id)
        if row is not None:
            return row
        row = len(self.ids)
        if row == len(self.alive):
            self._grow()
        self.ids.append(drawer_id)
        self.rows[drawer_id] = row
        return row

    def _grow(self) -> None:
        size = len(self.alive) + max(_GROW, len(self.alive))
        for name in _ARRAYS:
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _code(self, value: str | None) -> int:
        if value is None:
            return -1
        return self._codes.setdefault(value, len(self._codes))

    def put(self, drawer: dict[str, Any]) -> None:
        row = self.row(drawer["id"])
        self._drop_voices(row)
        self.alive[row] = True
        self.wing[row] = self._code(drawer["wing"])
        self.room[row] = self._code(drawer["room"])
        self.source_kind[row] = self._code(drawer["source_kind"])
        self.valid_from[row] = drawer["valid_from"]
        self.valid_to[row] = drawer["valid_to"]
        self.chatter[row] = drawer["chatter"]
        self._set_tags(row, tuple(drawer["tags"]))
        self._add_voices(row, drawer["conversation"], tuple(drawer["voices"]))

    def chatter_among(self, drawer_ids: Iterable[str]) -> set[str]:
        """Those of `drawer_ids` that are chatter."""
        return {
            d for d in drawer_ids if (row := self.rows.get(d)) is not None and self.chatter[row]
        }

    def dialogues_among(self, drawer_ids: Iterable[str]) -> set[str]:
        """Those of `drawer_ids` in which two or more people speak."""
        return {d for d in drawer_ids if len(self._speakers(d)) >= 2}

    def _speakers(self, drawer_id: str) -> tuple[str, ...]:
        row = self.rows.get(drawer_id)
        held = None if row is None else self._row_voices.get(row)
        return () if held is None else held[1]

    def remove(self, drawer_id: str) -> None:
        row = self.rows.get(drawer_id)
        if row is None:
            return
        self._drop_voices(row)
        self.alive[row] = False
        self._set_tags(row, ())

    def _set_tags(self, row: int, tags: tuple[str, ...]) -> None:
        for tag in self._row_tags.pop(row, ()):
            self.tags[tag].discard(row)
        if tags:
            self._row_tags[row] = tags
            for tag in tags:
                self.tags.setdefault(tag, set()).add(row)

    def _add_voices(
        self, row: int, conversation: tuple[str, str] | None, speakers: tuple[str, ...]
    ) -> None:
        if not speakers:
            return
        unit = -1 - row
        if conversation is not None:
            unit = self._conversations.setdefault(conversation, len(self._conversations))
        self._row_voices[row] = (unit, speakers)
        for voices in (self._voices.setdefault(int(self.wing[row]), _Voices()), self._palace):
            voices.conversations[unit] += 1
            for name in speakers:
                voices.speakers.setdefault(name, Counter())[unit] += 1

    def _drop_voices(self, row: int) -> None:
        held = self._row_voices.pop(row, None)
        if held is None:
            return
        unit, speakers = held
        for voices in (self._voices[int(self.wing[row])], self._palace):
            _take_one(voices.conversations, unit)
            for name in speakers:
                _take_one(voices.speakers[name], unit)
                if not voices.speakers[name]:
                    del voices.speakers[name]

    def speakers_throughout(self, wing: str | None, share: float) -> set[str]:
        """The names (lowercased) that speak in at least `share` of the conversations of `wing`,
        or of the whole palace when `wing` is None."""
        voices = self._palace if wing is None else self._voices.get(self._codes.get(wing, -2))
        if voices is None or not voices.conversations:
            return set()
        least = share * len(voices.conversations)
        return {name for name, heard in voices.speakers.items() if len(heard) >= least}

    def mask(self, scope: Scope) -> np.ndarray:
        """The rows of the drawers in scope."""
        count = len(self.ids)
        mask = self.alive[:count].copy()
        if scope.wing is not None:
            mask &= self.wing[:count] == self._codes.get(scope.wing, -2)
        if scope.rooms is not None:
            codes = [self._codes[room] for room in scope.rooms if room in self._codes]
            mask &= np.isin(self.room[:count], codes)
        for tag in scope.tags:
            rows = self.tags.get(tag, set())
            tagged = np.zeros(count, dtype=bool)
            tagged[np.fromiter(rows, dtype=np.int64, count=len(rows))] = True
            mask &= tagged
        if scope.source_kind is not None:
            mask &= self.source_kind[:count] == self._codes.get(scope.source_kind, -2)
        if scope.window is not None:
            start, end = scope.window
            mask &= (self.valid_from[:count] < end) & (self.valid_to[:count] > start)
        return mask

    def state(self) -> dict[str, Any]:
        """What a snapshot keeps (see `indexes.py`): copies, which the catalog's later changes
        leave as they are while the snapshot is written."""
        count = len(self.ids)
        conversations = {unit: key for key, unit in self._conversations.items()}
        return {
            "ids": list(self.ids),
            "codes": dict(self._codes),
            "tags": dict(self._row_tags),
            "voices": {
                row: (conversations[unit] if unit >= 0 else None, speakers)
                for row, (unit, speakers) in self._row_voices.items()
            },
            **{name: getattr(self, name)[:count].copy() for name in _ARRAYS},
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Catalog:
        catalog = cls()
        catalog.ids = list(state["ids"])
        catalog.rows = {drawer_id: row for row, drawer_id in enumerate(catalog.ids)}
        catalog._codes = dict(state["codes"])
        for name in _ARRAYS:
            setattr(catalog, name, np.array(state[name]))
        for row, tags in state["tags"].items():
            catalog._set_tags(row, tuple(tags))
        for row, (conversation, speakers) in state["voices"].items():
            catalog._add_voices(row, conversation, tuple(speakers))
        return catalog


def _take_one(counter: Counter[int], key: int) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
