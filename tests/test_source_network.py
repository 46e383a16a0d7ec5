"""The host's network grant, with a component of the `networked-source` world: a call granted
the network makes its request; a call granted nothing (`normalize`) still runs, and is stopped
when it tries to send one; without the grant in its manifest the component is refused."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from sources.components import (
    Component,
    ComponentRuntime,
    ComponentUnusable,
    Grant,
    PermissionDenied,
    record,
)
from tests.support.components import built
from tests.support.github_server import State, serving

NETWORK = Grant(memory_mib=256, timeout_secs=60, network=True)
NOTHING = Grant(memory_mib=256, timeout_secs=60)


@pytest.fixture(scope="module")
def courier(tmp_path_factory: pytest.TempPathFactory) -> Component:
    wasm = built("courier")
    runtime = ComponentRuntime(tmp_path_factory.mktemp("compiled"))
    return runtime.load(wasm, hashlib.sha256(Path(wasm).read_bytes()).hexdigest())


@pytest.fixture
def server() -> Iterator[State]:
    with serving() as state:
        yield state


def test_a_call_granted_the_network_makes_its_request(courier: Component, server: State) -> None:
    ref = courier.call(NETWORK, "identify", f"{server.base}/repos/octo/tide/issues", [])
    assert ref.locator == "401"
    assert server.paths() == ["/repos/octo/tide/issues"]


def test_a_call_granted_nothing_runs_and_cannot_send_a_request(
    courier: Component, server: State
) -> None:
    assert courier.call(NOTHING, "default-room") == "mail"
    raw = record(
        {
            "external-id": "x",
            "revision": "1",
            "body": f"{server.base}/anything",
            "metadata": "{}",
            "occurred-at": None,
        }
    )
    with pytest.raises(PermissionDenied, match="HTTP request in a call granted no network"):
        courier.call(NOTHING, "normalize", raw)
    assert server.seen == []


def test_a_networked_component_is_refused_without_the_grant(courier: Component) -> None:
    with pytest.raises(ComponentUnusable, match="does not ask for the network"):
        courier.check_imports(network=False)
    courier.check_imports(network=True)
