"""The `chatgpt` source as a component: the conversations of a ChatGPT data export.

The WIT glue only; what is read, and how, is `chatgpt_format`, in plain Python.
"""

from __future__ import annotations

import memcastle_guest as guest
from chatgpt_format import SOURCE
from wit_world import exports
from wit_world.imports import types


class Adapter(exports.Adapter):
    def identify(self, locator: str | None, options: list[tuple[str, str]]) -> types.SourceRef:
        return guest.identify(SOURCE, locator, options)

    def default_wing(self, source: types.SourceRef) -> str:
        return SOURCE.name

    def default_room(self) -> str:
        return SOURCE.default_room

    def discover(self, source: types.SourceRef, cursor: str, limit: int) -> types.Discovery:
        return guest.discover(SOURCE, source, cursor, limit)

    def read(self, source: types.SourceRef, candidate: types.Candidate) -> types.RawDocument | None:
        return guest.read(SOURCE, source, candidate)

    def normalize(self, raw: types.RawDocument) -> types.CanonicalDocument:
        return guest.normalize(SOURCE, raw)
