"""The embedded engine gives back its memory whenever the daemon has grown by a gibibyte
(`kernel.memory`): the growth is measured from the least the process held since the last
release, a release resets it, and the check runs on a thread of its own until the event bus
closes. The process's memory is a list of figures here; the store and its release are real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.events import EventBus
from kernel.memory import GROWTH, EngineMemory, resident_bytes
from kernel.store import Store
from tests.support.waits import wait_for

MIB = 1 << 20


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[tuple[Store, list[int]]]:
    """A palace on disk whose releases are counted (each still runs for real)."""
    store = Store(f"surrealkv://{tmp_path / 'db'}?sync=every", palace_path=tmp_path)
    store.open()
    released: list[int] = []
    release = store.release_memory

    def counted() -> None:
        release()
        released.append(1)

    store.release_memory = counted  # type: ignore[method-assign]
    yield store, released
    store.close()


def figures(*values: int) -> Iterator[int]:
    return iter(values)


def test_the_engine_gives_back_memory_after_the_process_grew_by_a_gibibyte(
    palace: tuple[Store, list[int]],
) -> None:
    store, released = palace
    store.query("CREATE wing:kept SET name = 'kept'")
    held = figures(
        3000 * MIB,  # the first figure is where growth is measured from
        2500 * MIB,  # less: growth is measured from here now
        2500 * MIB + GROWTH - 1,  # not quite a gibibyte more
        2500 * MIB + GROWTH,  # a gibibyte more: released...
        2600 * MIB,  # ... and this is what it held after
        2600 * MIB + GROWTH - 1,
        2600 * MIB + GROWTH,
        2700 * MIB,
    )
    memory = EngineMemory(store, EventBus(), resident=lambda: next(held))
    assert [memory.check() for _ in range(3)] == [False, False, False]
    assert memory.check() is True and len(released) == 1
    assert memory.check() is False
    assert memory.check() is True and len(released) == 2
    assert store.one("SELECT VALUE name FROM wing") == ["kept"]


def test_a_system_that_does_not_say_never_releases(palace: tuple[Store, list[int]]) -> None:
    store, released = palace
    memory = EngineMemory(store, EventBus(), resident=lambda: None)
    assert memory.check() is False
    memory.start()
    assert memory._thread is None and released == []


def test_a_palace_in_memory_is_never_watched() -> None:
    store = Store("mem://")
    store.open()
    try:
        memory = EngineMemory(store, EventBus())
        memory.start()
        assert memory._thread is None
    finally:
        store.close()


def test_the_watch_runs_until_the_event_bus_closes(palace: tuple[Store, list[int]]) -> None:
    store, released = palace
    growing = iter(range(0, 1000 * GROWTH, GROWTH))
    memory = EngineMemory(store, EventBus(), every_secs=0.01, resident=lambda: next(growing))
    memory.start()
    thread = memory._thread
    assert thread is not None
    wait_for(lambda: len(released) >= 2, timeout=30, what="two releases")
    memory.events.close()
    thread.join(timeout=30)
    assert not thread.is_alive()


def test_this_process_says_how_much_memory_it_holds() -> None:
    held = resident_bytes()
    assert held is not None and held > 10 * MIB
