"""The embedded engine's answers decoded by cbor2 (kernel/wire.py) are the values the
SDK's own decoder makes, and the SDK still hands every answer to the decoder installed."""

from __future__ import annotations

from typing import Any

import pytest
from surrealdb import NullType
from surrealdb.connections import blocking_embedded
from surrealdb.data.cbor import decode as sdk_decode

from kernel import wire
from kernel.store import Store

# One value of every kind the engine may answer with, in records and on their own.
VALUES = [
    "RETURN 1",
    "RETURN [1, -2, 9223372036854775807, -9223372036854775808, 1.5, -0.0, true, false]",
    "RETURN ['ünïcödé ✓', '']",
    "RETURN NONE",
    "RETURN NULL",
    "RETURN { a: NONE, b: NULL, c: [NULL, NONE, 1] }",
    "RETURN d'2026-12-03T04:29:06.123456789Z'",
    "RETURN d'1970-01-01T00:00:00Z'",
    "RETURN [1h30m, 0ns, 1y2w3d]",
    "RETURN 1.25dec",
    "RETURN u'0195b1f4-8c3a-7f00-a1b2-c3d4e5f60718'",
    "RETURN <set>[3, 1, 2]",
    "RETURN <bytes>'abc'",
    "RETURN type::table('drawer')",
    "RETURN [drawer:abc, drawer:⟨0c64b212-0ac3-85e6-b30a-bed5c404f256⟩, drawer:1, drawer:[1, 'a'], "
    "drawer:{ a: 1 }, drawer:u'0195b1f4-8c3a-7f00-a1b2-c3d4e5f60718']",
    "RETURN 1..5",
    "RETURN (50.0, 10.5)",
    "CREATE thing:one SET at = time::now(), tags = ['a', 'b'], nested = { deep: [{ x: NULL }] };"
    "SELECT * FROM thing;",
    "RETURN []",
    "INFO FOR DB",
]


def plainly(value: Any) -> Any:
    """The SDK's NULL as None, as `store.plain` reads it: the one intended difference."""
    if isinstance(value, NullType):
        return None
    if isinstance(value, dict):
        return {key: plainly(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plainly(item) for item in value]
    return value


decoded = wire.decode


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every answer the engine sends, as bytes, while the test runs."""
    seen: list[bytes] = []
    decode = wire.decode

    def recording(data: bytes) -> Any:
        seen.append(data)
        return decode(data)

    monkeypatch.setattr(wire, "decode", recording)
    return seen


def test_an_embedded_store_decodes_every_answer_with_cbor2(answers: list[bytes]) -> None:
    store = Store("mem://")
    store.open()
    try:
        assert blocking_embedded.decode is wire.decode
        before = len(answers)
        assert store.one("RETURN 41 + 1") == 42
        assert len(answers) == before + 1
    finally:
        store.close()


@pytest.mark.parametrize("sql", VALUES)
def test_both_decoders_agree(answers: list[bytes], sql: str) -> None:
    store = Store("mem://")
    store.open()
    try:
        store.query(sql)
    finally:
        store.close()
    assert answers
    for data in answers:
        assert decoded(data) == plainly(sdk_decode(data))
