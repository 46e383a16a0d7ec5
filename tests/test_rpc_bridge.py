"""The RPC bridge's frame handling (`kernel.rpc_bridge`), on the real engine in memory.

The bridge reads no more of a frame than it must: the top-level map's entries as raw bytes, the
session it adds taken off the answer again. These are the cases the end-to-end tests of the
console and the loopback server do not single out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import cbor2
import pytest
from surrealdb import RecordID
from surrealdb.data.cbor import decode, encode
from surrealdb_embedded import AsyncEmbeddedDB
from websockets.datastructures import Headers

from kernel.rpc_bridge import (
    Call,
    Connection,
    Engine,
    join_map,
    json_ready,
    split_map,
)


class OpenDoor:
    """Every session signed in, every call passed on."""

    async def admitted(self, connection: Connection, session: str) -> None:
        await connection.engine.sign_in_internally(session)

    async def answer(self, connection: Connection, call: Call) -> bytes | None:
        return None

    async def answered(self, connection: Connection, call: Call, reply: Any) -> None:
        return None


def test_split_and_join_keep_every_value_byte_for_byte() -> None:
    value = {"id": 7, "method": "query", "params": ["RETURN $x", {"x": RecordID("drawer", "a")}]}
    frame = encode(value)

    pairs = split_map(frame)

    assert [cbor2.loads(key) for key, _ in pairs] == ["id", "method", "params"]
    assert join_map(pairs) == frame
    for broken in (b"", b"\x80", frame[:-1], frame + b"\x00"):
        with pytest.raises(ValueError):
            split_map(broken)


def test_an_indefinite_map_is_split_too() -> None:
    frame = b"\xbf" + cbor2.dumps("id") + cbor2.dumps(1) + b"\xff"

    assert split_map(frame) == [(cbor2.dumps("id"), cbor2.dumps(1))]


def test_json_ready_writes_surrealdb_values_as_its_json_encoding() -> None:
    when = dt.datetime(2026, 12, 4, 7, 30, tzinfo=dt.UTC)
    value = {"id": RecordID("drawer", "a"), "at": when, "u": uuid.UUID(int=1), "n": [1, None]}

    assert json_ready(value) == {
        "id": "drawer:a",
        "at": "2026-12-04T07:30:00Z",
        "u": "00000000-0000-0000-0000-000000000001",
        "n": [1, None],
    }


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def _connection() -> tuple[AsyncEmbeddedDB, Connection]:
    db = AsyncEmbeddedDB("mem://")
    await db.connect()
    engine = Engine(db.execute, internal_user="bridge_test")
    await engine.define_internal_user()
    connection = Connection(engine, OpenDoor(), Headers())
    await connection.open()
    return db, connection


def test_the_added_session_is_taken_off_the_answer_and_a_named_one_kept() -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
        db, connection = await _connection()
        try:
            plain = decode(await connection.forward(encode({"id": 1, "method": "version"})))
            big = decode(
                await connection.forward(
                    encode({"id": 2, "method": "query", "params": ["RETURN array::range(0, 5000)"]})
                )
            )
            named = decode(
                await connection.forward(
                    encode({"id": 3, "method": "ping", "session": connection.session})
                )
            )
            return plain, big, named, connection.session
        finally:
            await connection.close()
            await db.close()

    plain, big, named, session = run(scenario())
    assert set(plain) == {"id", "result"}
    assert set(big) == {"id", "result"}
    assert len(big["result"][0]["result"]) == 5000
    assert str(named["session"]) == session, "a session the client named stays in its answer"


def test_a_none_session_means_the_connections_own() -> None:
    async def scenario() -> dict[str, Any]:
        db, connection = await _connection()
        try:
            frame = join_map(
                [
                    (cbor2.dumps("id"), cbor2.dumps(1)),
                    (cbor2.dumps("method"), cbor2.dumps("query")),
                    (cbor2.dumps("params"), encode(["RETURN session::id()"])),
                    (cbor2.dumps("session"), encode(None)),
                ]
            )
            answer: dict[str, Any] = decode(await connection.forward(frame))
            answer["own"] = connection.session
            return answer
        finally:
            await connection.close()
            await db.close()

    answer = run(scenario())
    assert str(answer["result"][0]["result"]) == answer["own"]
    assert "session" not in answer
