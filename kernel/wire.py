"""Decoding the embedded engine's answers with cbor2's compiled decoder.

The SDK decodes every answer with its own CBOR decoder, written in Python: ten drawers took
0.44 ms to decode here, against 0.17 ms with cbor2's compiled decoder calling the SDK's own
decoder for SurrealDB's tags, so record ids, datetimes, durations and the rest come out as the
same SDK types. Every store call pays it, reads and writes alike: reading ten drawers by id went
from 1.92 to 1.61 ms (median of 3,000 each, alternating).

One difference: a CBOR null is `None` here, where the SDK makes it `Null` (SurrealDB's NULL, as
opposed to NONE). `store.plain` turns both into `None`, and nothing else in MemCastle reads a
raw answer.
"""

from __future__ import annotations

from typing import Any

import cbor2
from surrealdb.connections import blocking_embedded
from surrealdb.data.cbor import tag_decoder


def decode(data: bytes) -> Any:
    return cbor2.loads(data, tag_hook=_surreal_tag)


def _surreal_tag(tag: cbor2.CBORTag, immutable: bool) -> Any:
    # The SDK's tag decoder reads only the tag; it never uses the decoder it is handed.
    return tag_decoder(None, cbor2.CBORTag(tag.tag, _thawed(tag.value)))  # type: ignore[arg-type]


def _thawed(value: Any) -> Any:
    """cbor2 decodes what a tag holds as tuples and frozendicts (a tagged value may be a map
    key); the SDK's decoder, as lists and dicts: a set or an array record id must read the same."""
    if isinstance(value, tuple):
        return [_thawed(item) for item in value]
    if isinstance(value, cbor2.frozendict):
        return {key: _thawed(item) for key, item in value.items()}
    return value


def install() -> None:
    """Make the SDK's embedded connection decode with `decode`. The SDK is pinned to one
    version (requirements.in), whose `_send` calls its module's `decode` on every answer;
    tests/test_store.py checks that it still does and that both decoders agree."""
    blocking_embedded.decode = decode
